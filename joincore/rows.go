package joincore

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// RowLayout encodes the rows of one input into self-contained byte strings, the form rows are
// cached in (state) and emitted from: a null bitmap of (n+7)/8 bytes (bit i set: field i NULL),
// one fixed slot per field (BOOLEAN one byte, VARCHAR eight bytes: offset and length, as
// little-endian uint32, of its UTF-8 bytes after the slots; every other type its Arrow width),
// then the VARCHAR bytes.
type RowLayout struct {
	types []engine.Type
	off   []int // slot offset of each field
	fixed int   // bitmap and slots
}

func NewRowLayout(types []engine.Type) *RowLayout {
	l := &RowLayout{types: types, off: make([]int, len(types))}
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

// Encode appends row i of in to dst.
func (l *RowLayout) Encode(dst []byte, in *engine.Batch, i int) []byte {
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

// rowArenaChunk is the size of one chunk of a RowArena.
const rowArenaChunk = 16 << 10

// RowArena holds encoded rows in shared chunks, so that caching a row costs no allocation of its
// own. Rows are never modified and never freed one by one: a chunk goes to Go's GC once no row
// in it is referenced (rows leave the caches roughly in time order, so chunks empty in order).
type RowArena struct {
	buf   []byte  // the current chunk; rows are appended up to its capacity
	sizes []int32 // EncodeRows' scratch
}

// Sizes sets sizes[k] to the encoded length of row sel[k] of in and returns sizes.
func (l *RowLayout) Sizes(in *engine.Batch, sel []int32, sizes []int32) []int32 {
	sizes = sizes[:0]
	for range sel {
		sizes = append(sizes, int32(l.fixed))
	}
	for c, t := range l.types {
		if t.ID != engine.Varchar {
			continue
		}
		col := &in.Cols[c]
		for k, i := range sel {
			if !col.IsNull(int(i)) {
				j := col.Offset + int(i)
				sizes[k] += col.Offs[j+1] - col.Offs[j]
			}
		}
	}
	return sizes
}

// EncodeInto encodes row sel[k] of in into rows[k], a column at a time: the same bytes as
// Encode. rows[k] must be zeroed and of the length Sizes gave. ends is scratch.
func (l *RowLayout) EncodeInto(in *engine.Batch, sel []int32, rows [][]byte, ends []int32) []int32 {
	ends = ends[:0]
	for range sel {
		ends = append(ends, int32(l.fixed)) // where row k's next VARCHAR bytes go
	}
	for c, t := range l.types {
		col := &in.Cols[c]
		off, bit := l.off[c], byte(1)<<(c&7)
		switch {
		case t.ID == engine.Varchar:
			for k, i := range sel {
				row := rows[k]
				if col.IsNull(int(i)) {
					row[c>>3] |= bit
					continue
				}
				v := col.Bytes(int(i))
				binary.LittleEndian.PutUint32(row[off:], uint32(ends[k]))
				binary.LittleEndian.PutUint32(row[off+4:], uint32(len(v)))
				ends[k] += int32(copy(row[ends[k]:], v))
			}
		case t.ID == engine.Boolean:
			for k, i := range sel {
				if col.IsNull(int(i)) {
					rows[k][c>>3] |= bit
				} else if col.Bool(int(i)) {
					rows[k][off] = 1
				}
			}
		case t.Width() == 8:
			data := col.Data[col.Offset*8:]
			for k, i := range sel {
				if col.IsNull(int(i)) {
					rows[k][c>>3] |= bit
				} else {
					binary.LittleEndian.PutUint64(rows[k][off:], binary.LittleEndian.Uint64(data[int(i)*8:]))
				}
			}
		default:
			w := t.Width()
			for k, i := range sel {
				if col.IsNull(int(i)) {
					rows[k][c>>3] |= bit
				} else {
					copy(rows[k][off:off+w], col.Fixed(int(i)))
				}
			}
		}
	}
	return ends
}

// EncodeRows encodes rows sel of in into the arena with EncodeInto and appends them to dst (row
// sel[k] at dst[len(dst)+k], its capacity its length). The rows of one call share a chunk.
func (a *RowArena) EncodeRows(l *RowLayout, in *engine.Batch, sel []int32, dst [][]byte) [][]byte {
	if len(sel) == 0 {
		return dst
	}
	a.sizes = l.Sizes(in, sel, a.sizes)
	total := 0
	for _, n := range a.sizes {
		total += int(n)
	}
	if cap(a.buf)-len(a.buf) < total {
		a.buf = make([]byte, 0, max(rowArenaChunk, total)) // zeroed, as EncodeInto wants
	}
	buf := a.buf[len(a.buf) : len(a.buf)+total]
	a.buf = a.buf[:len(a.buf)+total]
	first := len(dst)
	for _, n := range a.sizes {
		dst, buf = append(dst, buf[:n:n]), buf[n:]
	}
	a.sizes = l.EncodeInto(in, sel, dst[first:], a.sizes)
	return dst
}

func (l *RowLayout) IsNull(row []byte, c int) bool { return row[c>>3]&(1<<(c&7)) != 0 }

// Varchar returns the bytes of VARCHAR field c of row.
func (l *RowLayout) Varchar(row []byte, c int) []byte {
	s := row[l.off[c]:]
	o, n := binary.LittleEndian.Uint32(s), binary.LittleEndian.Uint32(s[4:])
	return row[o : o+n]
}

// Field returns the bytes of non-NULL field c of row: a VARCHAR's UTF-8 bytes, a BOOLEAN's one
// byte (0 or 1), every other type its Arrow value (little-endian).
func (l *RowLayout) Field(row []byte, c int) []byte {
	switch t := l.types[c]; t.ID {
	case engine.Varchar:
		return l.Varchar(row, c)
	case engine.Boolean:
		return row[l.off[c] : l.off[c]+1]
	default:
		return row[l.off[c] : l.off[c]+t.Width()]
	}
}

// Int64At reads field c (BIGINT or TIMESTAMP(p <= 3)) as milliseconds; NULL reads as 0, as
// BinaryRowData.getLong of a NULL field does.
func (l *RowLayout) Int64At(row []byte, c int) int64 {
	if l.IsNull(row, c) {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(row[l.off[c]:]))
}

// Check validates an encoded row read from a snapshot: length, slots and VARCHAR ranges.
func (l *RowLayout) Check(row []byte) error {
	if len(row) < l.fixed {
		return fmt.Errorf("%w: cached row of %d bytes, want at least %d", engine.ErrData, len(row), l.fixed)
	}
	end := l.fixed
	for c, t := range l.types {
		if t.ID != engine.Varchar || l.IsNull(row, c) {
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

// WriteColumn writes field c of rows (nil: a padded side, all NULL) into out, which Init laid
// out for len(rows) rows.
func (l *RowLayout) WriteColumn(out *engine.OutColumn, rows [][]byte, c int) {
	t, off := l.types[c], l.off[c]
	null := func(row []byte) bool { return row == nil || l.IsNull(row, c) }
	setNull := func(j int) {
		if out.Valid != nil { // a NOT NULL input column holds no NULL (validated on import)
			out.SetNull(j)
		}
	}
	switch w := t.Width(); {
	case t.ID == engine.Varchar:
		pos := int32(0)
		for j, row := range rows {
			out.Offs[j] = pos
			if null(row) {
				setNull(j)
				continue
			}
			pos += int32(copy(out.Data[pos:], l.Varchar(row, c)))
		}
		out.Offs[len(rows)] = pos
	case t.ID == engine.Boolean:
		for j, row := range rows {
			if null(row) {
				setNull(j)
			} else if row[off] != 0 {
				out.Data[j>>3] |= 1 << (j & 7)
			}
		}
	case w == 8:
		data := out.Data[:len(rows)*8]
		for j, row := range rows {
			if null(row) {
				setNull(j)
			} else {
				binary.LittleEndian.PutUint64(data[j*8:], binary.LittleEndian.Uint64(row[off:]))
			}
		}
	default:
		for j, row := range rows {
			if null(row) {
				setNull(j)
			} else {
				copy(out.Data[j*w:(j+1)*w], row[off:off+w])
			}
		}
	}
}

// VarBytes is the UTF-8 size of VARCHAR field c over rows.
func (l *RowLayout) VarBytes(rows [][]byte, c int) int {
	n := 0
	for _, row := range rows {
		if row != nil && !l.IsNull(row, c) {
			n += len(l.Varchar(row, c))
		}
	}
	return n
}

// Types are the layout's field types.
func (l *RowLayout) Types() []engine.Type { return l.types }

// RefuseBytes refuses a spec with a BINARY/VARBINARY input field: the row layouts, conditions
// and outputs of the operators that keep rows (a join, a deduplication: what) know VARCHAR as
// their only variable-width type.
func RefuseBytes(spec *engine.Spec, what string) error {
	for i, in := range spec.Inputs {
		for j, t := range in.Types {
			if t.ID == engine.Binary {
				return fmt.Errorf("%w: inputs[%d].fields[%d] (%s): BINARY/VARBINARY in %s: not native yet", engine.ErrUnsupported, i, j, in.Fields[j].Name, what)
			}
		}
	}
	return nil
}

// CallRows is what a two-input join derives from one call's batches before it handles a row:
// per input, each row's key group and each row encoded in the input's RowLayout (memory from
// the join's RowArena). It is valid for the call; Release forgets the rows, which then belong to
// the join's state and output.
type CallRows struct {
	KeyGroups [2][]int32
	Rows      [2][][]byte
	all       []int32 // 0, 1, 2, ...: every row of a batch
}

// Encode encodes batch b of input side: its join keys with enc, each row's key group in state,
// each row with layout. It changes no state; an error names the input and row.
func (c *CallRows) Encode(side int, b *engine.Batch, enc *engine.KeyEncoder, layout *RowLayout, arena *RowArena, state *engine.KeyedState) error {
	if err := enc.Encode(b); err != nil {
		return fmt.Errorf("input %d: %w", side, err)
	}
	kgs := c.KeyGroups[side][:0]
	for i := range b.Len {
		kg, err := state.KeyGroupOf(enc.Hash(i))
		if err != nil {
			return fmt.Errorf("input %d: row %d: %w", side, i, err)
		}
		kgs = append(kgs, int32(kg))
	}
	c.KeyGroups[side] = kgs
	for len(c.all) < b.Len {
		c.all = append(c.all, int32(len(c.all)))
	}
	c.Rows[side] = arena.EncodeRows(layout, b, c.all[:b.Len], c.Rows[side][:0])
	return nil
}

// Release forgets the call's rows.
func (c *CallRows) Release() {
	clear(c.Rows[0])
	clear(c.Rows[1])
}
