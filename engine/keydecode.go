package engine

import (
	"encoding/binary"
	"fmt"
)

// KeyColumnsDecodable reports whether WriteKeyColumns can read key fields of types back: every
// type KeyEncoder writes in the slot or in a variable part of its own (VARCHAR, BINARY), but
// non-compact DECIMAL and TIMESTAMP.
func KeyColumnsDecodable(types []Type) error {
	for k, t := range types {
		if (t.ID == Decimal || t.ID == Timestamp) && !t.Compact() {
			return fmt.Errorf("%w: key field %d is %s: reading it back from the key is not native yet", ErrUnsupported, k, t)
		}
	}
	return nil
}

// KeyVarBytes adds to dst[k] the bytes of VARCHAR/BINARY key field k of each of keys (encoded by
// a KeyEncoder of types), for OutBatch.Init.
func KeyVarBytes(types []Type, keys [][]byte, dst []int) {
	header := keyHeaderSize(len(types))
	for k, t := range types {
		if !t.Variable() {
			continue
		}
		for _, key := range keys {
			if !keyNull(key, k) {
				dst[k] += len(keyBytes(key, header, k))
			}
		}
	}
}

// WriteKeyColumns writes the fields of keys, each a key KeyEncoder encoded (Flink's
// BinaryRowData) for fields of types, into out[k] rows from..from+len(keys): the inverse of the
// encoding, for operators that emit a key's columns without an input row (a timer). types must
// pass KeyColumnsDecodable; out's VARCHAR/BINARY columns are filled in order from row from, whose
// offset out.Offs[from] must be set.
func WriteKeyColumns(out []OutColumn, types []Type, keys [][]byte, from int) {
	header := keyHeaderSize(len(types))
	for k, t := range types {
		c := &out[k]
		for j, key := range keys {
			r := from + j
			null := keyNull(key, k)
			if null {
				c.SetNull(r)
			}
			slot := key[header+8*k : header+8*k+8]
			switch {
			case t.Variable():
				at := c.Offs[r]
				if !null {
					at += int32(copy(c.Data[at:], keyBytes(key, header, k)))
				}
				c.Offs[r+1] = at
			case null:
			case t.ID == Boolean:
				if slot[0] != 0 {
					c.Data[r>>3] |= 1 << (r & 7)
				}
			case t.ID == Decimal: // compact: the unscaled long, sign-extended into 16 bytes
				v := binary.LittleEndian.Uint64(slot)
				binary.LittleEndian.PutUint64(c.Data[16*r:], v)
				var hi uint64
				if int64(v) < 0 {
					hi = ^uint64(0)
				}
				binary.LittleEndian.PutUint64(c.Data[16*r+8:], hi)
			default:
				w := t.Width()
				copy(c.Data[w*r:w*r+w], slot[:w])
			}
		}
	}
}

func keyHeaderSize(n int) int { return (n + 63 + 8) / 64 * 8 }

func keyNull(key []byte, k int) bool { return key[(k+8)>>3]&(1<<((k+8)&7)) != 0 }

// keyBytes returns the bytes of VARCHAR/BINARY field k of key: inline in its slot (top byte
// 0x80|len) or at (offset<<32)|len in the variable part.
func keyBytes(key []byte, header, k int) []byte {
	slot := key[header+8*k:]
	v := binary.LittleEndian.Uint64(slot)
	if v&(1<<63) != 0 {
		return slot[:int(v>>56)&0x7f]
	}
	off, n := int(v>>32), int(uint32(v))
	return key[off : off+n]
}
