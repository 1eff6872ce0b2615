package dataview

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// A value inside a data view is a key: its Arrow value bytes (engine.Type.Width, little-endian;
// DECIMAL's 16 bytes, TIMESTAMP(p > 3)'s 12), VARCHAR's UTF-8 bytes, BOOLEAN's one byte 0 or 1.
// Encoded, a VARCHAR key is preceded by its length (uint32 LE); every other key has its type's
// fixed size.

// NextKey splits the encoded key of a value of type t off src: a VARCHAR's uint32 LE length and
// bytes, BOOLEAN's byte, or the type's Arrow value bytes.
func NextKey(t engine.Type, src []byte) (key, rest []byte, err error) {
	l := t.Width()
	switch t.ID {
	case engine.Varchar:
		if len(src) < 4 {
			return nil, nil, fmt.Errorf("%w: truncated key length", engine.ErrData)
		}
		l, src = int(binary.LittleEndian.Uint32(src)), src[4:]
	case engine.Boolean:
		l = 1
	}
	if l > len(src) {
		return nil, nil, fmt.Errorf("%w: key of %d bytes, %d left", engine.ErrData, l, len(src))
	}
	if t.ID == engine.Boolean && src[0] > 1 {
		return nil, nil, fmt.Errorf("%w: BOOLEAN key byte %d", engine.ErrData, src[0])
	}
	return src[:l], src[l:], nil
}

// KeySize is the encoded size of key (see NextKey) of type t.
func KeySize(t engine.Type, key []byte) int {
	if t.ID == engine.Varchar {
		return 4 + len(key)
	}
	return len(key)
}

// AppendKey appends the encoding of key (see NextKey) of type t.
func AppendKey(dst []byte, t engine.Type, key []byte) []byte {
	if t.ID == engine.Varchar {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	}
	return append(dst, key...)
}

// boolKeys backs the keys of BOOLEAN values (KeyAt).
var boolKeys = []byte{0, 1}

// KeyAt is the value in row j of c, a column of values without NULLs, as a key.
func KeyAt(c *engine.OutColumn, j int) []byte {
	if c.Type.ID == engine.Varchar {
		return c.Data[c.Offs[j]:c.Offs[j+1]]
	}
	if c.Type.ID == engine.Boolean { // bit-packed: the key is one byte, 0 or 1
		return boolKeys[(c.Data[j>>3]>>(j&7))&1:][:1]
	}
	w := c.Type.Width()
	return c.Data[j*w : (j+1)*w]
}

// KeyColumn builds a column of values of one type from their keys, for accumulators to read as
// they read an argument column. Col holds the Rows keys added since Reset; its buffers are
// reused.
type KeyColumn struct {
	Col  engine.Column
	Rows int
}

// Reset empties the column and gives it type typ.
func (k *KeyColumn) Reset(typ engine.Type) {
	c := &k.Col
	*c = engine.Column{Type: typ, Data: c.Data[:0], Valid: c.Valid[:0], Offs: append(c.Offs[:0], 0)}
	k.Rows = 0
}

// Add appends the value of key, or NULL when key is nil.
func (k *KeyColumn) Add(key []byte) {
	c := &k.Col
	i := k.Rows
	k.Rows++
	if i%8 == 0 {
		c.Valid = append(c.Valid, 0)
	}
	if key != nil {
		c.Valid[i/8] |= 1 << (i % 8)
	}
	switch c.Type.ID {
	case engine.Varchar:
		c.Data = append(c.Data, key...)
		c.Offs = append(c.Offs, int32(len(c.Data)))
	case engine.Boolean:
		if i%8 == 0 {
			c.Data = append(c.Data, 0)
		}
		if key != nil && key[0] == 1 {
			c.Data[i/8] |= 1 << (i % 8)
		}
	default:
		if key == nil {
			c.Data = append(c.Data, make([]byte, c.Type.Width())...)
		} else {
			c.Data = append(c.Data, key...)
		}
	}
}
