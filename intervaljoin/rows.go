package intervaljoin

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// rowLayout encodes the rows of one input into self-contained byte strings, the form rows are
// cached in (state) and emitted from: a null bitmap of (n+7)/8 bytes (bit i set: field i NULL),
// one fixed slot per field (BOOLEAN one byte, VARCHAR eight bytes: offset and length, as
// little-endian uint32, of its UTF-8 bytes after the slots; every other type its Arrow width),
// then the VARCHAR bytes.
type rowLayout struct {
	types []engine.Type
	off   []int // slot offset of each field
	fixed int   // bitmap and slots
}

func newRowLayout(types []engine.Type) *rowLayout {
	l := &rowLayout{types: types, off: make([]int, len(types))}
	pos := (len(types) + 7) / 8
	for i, t := range types {
		l.off[i] = pos
		switch t.ID {
		case engine.Boolean:
			pos++
		case engine.Varchar:
			pos += 8
		default:
			pos += t.Width()
		}
	}
	l.fixed = pos
	return l
}

// encode appends row i of in to dst.
func (l *rowLayout) encode(dst []byte, in *engine.Batch, i int) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, l.fixed)...)
	row := dst[start:]
	for c, t := range l.types {
		col := &in.Cols[c]
		if col.IsNull(i) {
			row[c>>3] |= 1 << (c & 7)
			continue
		}
		s := row[l.off[c]:]
		switch t.ID {
		case engine.Boolean:
			if col.Bool(i) {
				s[0] = 1
			}
		case engine.Varchar:
			v := col.Bytes(i)
			binary.LittleEndian.PutUint32(s, uint32(len(dst)-start))
			binary.LittleEndian.PutUint32(s[4:], uint32(len(v)))
			dst = append(dst, v...)
			row = dst[start:]
		default:
			copy(s, col.Fixed(i))
		}
	}
	return dst
}

// size is the length of row i of in encoded.
func (l *rowLayout) size(in *engine.Batch, i int) int {
	n := l.fixed
	for c, t := range l.types {
		if t.ID == engine.Varchar && !in.Cols[c].IsNull(i) {
			n += len(in.Cols[c].Bytes(i))
		}
	}
	return n
}

// rowArenaChunk is the size of one chunk of a rowArena.
const rowArenaChunk = 16 << 10

// rowArena holds encoded rows in shared chunks, so that caching a row costs no allocation of its
// own. Rows are never modified and never freed one by one: a chunk goes to Go's GC once no row
// in it is referenced (rows leave the caches roughly in time order, so chunks empty in order).
type rowArena struct {
	buf []byte // the current chunk; rows are appended up to its capacity
}

// encode encodes row i of in into the arena; the result's capacity is its length.
func (a *rowArena) encode(l *rowLayout, in *engine.Batch, i int) []byte {
	n := l.size(in, i)
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]byte, 0, max(rowArenaChunk, n))
	}
	start := len(a.buf)
	row := l.encode(a.buf[start:start], in, i)
	a.buf = a.buf[:start+len(row)]
	return row[:len(row):len(row)]
}

func (l *rowLayout) isNull(row []byte, c int) bool { return row[c>>3]&(1<<(c&7)) != 0 }

// varchar returns the bytes of VARCHAR field c of row.
func (l *rowLayout) varchar(row []byte, c int) []byte {
	s := row[l.off[c]:]
	o, n := binary.LittleEndian.Uint32(s), binary.LittleEndian.Uint32(s[4:])
	return row[o : o+n]
}

// int64At reads field c (BIGINT or TIMESTAMP(p <= 3)) as milliseconds; NULL reads as 0, as
// BinaryRowData.getLong of a NULL field does.
func (l *rowLayout) int64At(row []byte, c int) int64 {
	if l.isNull(row, c) {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(row[l.off[c]:]))
}

// check validates an encoded row read from a snapshot: length, slots and VARCHAR ranges.
func (l *rowLayout) check(row []byte) error {
	if len(row) < l.fixed {
		return fmt.Errorf("%w: cached row of %d bytes, want at least %d", engine.ErrData, len(row), l.fixed)
	}
	end := l.fixed
	for c, t := range l.types {
		if t.ID != engine.Varchar || l.isNull(row, c) {
			continue
		}
		s := row[l.off[c]:]
		o, n := int(binary.LittleEndian.Uint32(s)), int(binary.LittleEndian.Uint32(s[4:]))
		if o != end || n > len(row)-o {
			return fmt.Errorf("%w: cached row: field %d out of range", engine.ErrData, c)
		}
		end = o + n
	}
	if end != len(row) {
		return fmt.Errorf("%w: cached row: %d trailing bytes", engine.ErrData, len(row)-end)
	}
	return nil
}

// writeColumn writes field c of rows (nil: a padded side, all NULL) into out, which Init laid
// out for len(rows) rows.
func (l *rowLayout) writeColumn(out *engine.OutColumn, rows [][]byte, c int) {
	t := l.types[c]
	pos := int32(0)
	for j, row := range rows {
		null := row == nil || l.isNull(row, c)
		if t.ID == engine.Varchar {
			out.Offs[j] = pos
		}
		if null {
			if out.Valid != nil { // a NOT NULL input column holds no NULL (validated on import)
				out.SetNull(j)
			}
			continue
		}
		s := row[l.off[c]:]
		switch t.ID {
		case engine.Boolean:
			if s[0] != 0 {
				out.Data[j>>3] |= 1 << (j & 7)
			}
		case engine.Varchar:
			pos += int32(copy(out.Data[pos:], l.varchar(row, c)))
		default:
			w := t.Width()
			copy(out.Data[j*w:(j+1)*w], s[:w])
		}
	}
	if t.ID == engine.Varchar {
		out.Offs[len(rows)] = pos
	}
}

// varBytes is the UTF-8 size of VARCHAR field c over rows.
func (l *rowLayout) varBytes(rows [][]byte, c int) int {
	n := 0
	for _, row := range rows {
		if row != nil && !l.isNull(row, c) {
			n += len(l.varchar(row, c))
		}
	}
	return n
}
