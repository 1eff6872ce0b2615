package engine

import (
	"fmt"
	"unsafe"
)

// CArray mirrors struct ArrowArray of the Arrow C Data Interface field for field, so pure Go
// can read a C array without cgo. Ferry never writes to a CArray it did not allocate.
type CArray struct {
	Length      int64
	NullCount   int64
	Offset      int64
	NBuffers    int64
	NChildren   int64
	Buffers     unsafe.Pointer // const void**
	Children    unsafe.Pointer // struct ArrowArray**
	Dictionary  unsafe.Pointer // struct ArrowArray*
	Release     unsafe.Pointer // void (*)(struct ArrowArray*)
	PrivateData unsafe.Pointer
}

// RowKind is Flink's changelog byte (org.apache.flink.types.RowKind#toByteValue).
type RowKind = byte

const (
	Insert       RowKind = 0 // +I
	UpdateBefore RowKind = 1 // -U
	UpdateAfter  RowKind = 2 // +U
	Delete       RowKind = 3 // -D
)

// IsAccumulate reports whether k adds to an aggregate (+I, +U) rather than retracting it
// (-U, -D), as Flink's RowDataUtil.isAccumulateMsg.
func IsAccumulate(k RowKind) bool { return k == Insert || k == UpdateAfter }

// maxElements bounds offset+length of any column so byte sizes never overflow.
const maxElements = 1 << 40

// Column is a validated, non-owning view of one Arrow column. The slices alias the producer's
// memory and are valid only until the batch is released; nothing may keep them after the call
// that imported the batch returns.
type Column struct {
	Type   Type
	Offset int    // element index of row 0 within the buffers
	Valid  []byte // validity bitmap covering bits [0, Offset+rows); nil when the column has no nulls
	Data   []byte // values: bit-packed for BOOLEAN, UTF-8 bytes for VARCHAR, else Width() bytes each
	Offs   []int32
}

// IsNull reports whether row i is NULL.
func (c *Column) IsNull(i int) bool {
	if c.Valid == nil {
		return false
	}
	j := c.Offset + i
	return c.Valid[j>>3]&(1<<(j&7)) == 0
}

// Bool returns the BOOLEAN value of row i.
func (c *Column) Bool(i int) bool {
	j := c.Offset + i
	return c.Data[j>>3]&(1<<(j&7)) != 0
}

// Bytes returns the VARCHAR (or VARBINARY) value of row i, aliasing the input.
func (c *Column) Bytes(i int) []byte {
	j := c.Offset + i
	return c.Data[c.Offs[j]:c.Offs[j+1]]
}

// Fixed returns the bytes of fixed-width row i.
func (c *Column) Fixed(i int) []byte {
	w := c.Type.Width()
	j := (c.Offset + i) * w
	return c.Data[j : j+w]
}

// Scalar is a fixed-width value type a column can be reinterpreted as.
type Scalar interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// Values reinterprets the data buffer of c as n values of T starting at row 0. T must match
// the column's width.
func Values[T Scalar](c *Column, n int) []T {
	if n == 0 {
		return nil
	}
	var zero T
	all := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(c.Data))), len(c.Data)/int(unsafe.Sizeof(zero)))
	return all[c.Offset : c.Offset+n]
}

// Batch is a validated view of one input batch: the declared columns and the RowKind column.
type Batch struct {
	Len   int
	Cols  []Column
	Kinds []RowKind // one per row, each 0..3
	// Retracts reports whether any row is -U or -D.
	Retracts bool
}

// Forget drops every view into the producer's memory, so nothing refers to a batch after the
// call that imported it returns. The column slice is kept for reuse.
func (b *Batch) Forget() {
	for i := range b.Cols {
		b.Cols[i] = Column{}
	}
	b.Kinds = nil
}

// CheckTypes checks that b's columns from first on are of types, nullability aside (the caller
// checked that they exist); a mismatch is an ErrInvalid "<what> column <index> is <type>, want
// <type>".
func (b *Batch) CheckTypes(first int, types []Type, what string) error {
	for k, t := range types {
		if got := b.Cols[first+k].Type; !got.SameAs(t) {
			got.Nullable, t.Nullable = true, true
			return fmt.Errorf("%w: %s column %d is %s, want %s", ErrInvalid, what, first+k, got, t)
		}
	}
	return nil
}

// Slice makes dst a view of n rows of b from row from (0 <= from, from+n <= b.Len): the same
// buffers, every column's Offset moved on. dst's column slice is reused.
func (b *Batch) Slice(dst *Batch, from, n int) {
	if cap(dst.Cols) < len(b.Cols) {
		dst.Cols = make([]Column, len(b.Cols))
	}
	dst.Cols = dst.Cols[:len(b.Cols)]
	for i, c := range b.Cols {
		c.Offset += from
		dst.Cols[i] = c
	}
	dst.Len = n
	dst.Kinds = b.Kinds[from : from+n]
	dst.Retracts = false
	if b.Retracts {
		for _, k := range dst.Kinds {
			if k == UpdateBefore || k == Delete {
				dst.Retracts = true
				break
			}
		}
	}
}

// Importer validates imported Arrow arrays against a declared schema and builds Batch views.
// It owns scratch memory reused across batches; it is not safe for concurrent use.
type Importer struct {
	Types []Type
	Names []string

	labels []string // per column, RowKind last: its name in messages (made at the first import)
}

// Import validates the struct array at root against the declared columns followed by the
// RowKind column, then fills b with views over its buffers. Nothing beyond the struct headers
// is read before the headers are validated. b's slices are reused.
func (im *Importer) Import(root *CArray, b *Batch) error {
	if root == nil {
		return fmt.Errorf("%w: input array is NULL", ErrInvalid)
	}
	if root.Release == nil {
		return fmt.Errorf("%w: input array is already released", ErrData)
	}
	n := len(im.Types)
	if err := checkHeader(root, "input batch"); err != nil {
		return err
	}
	if root.NBuffers != 1 {
		return fmt.Errorf("%w: input batch: struct array has %d buffers, want 1", ErrData, root.NBuffers)
	}
	if root.NChildren != int64(n+1) {
		return fmt.Errorf("%w: input batch has %d columns, want %d (%d declared + RowKind)", ErrData, root.NChildren, n+1, n)
	}
	if v := bufferAt(root, 0); v != nil && root.NullCount != 0 && root.Length > 0 {
		end := int(root.Offset + root.Length)
		if root.NullCount > 0 || countNulls(unsafe.Slice((*byte)(v), (end+7)/8), int(root.Offset), end) > 0 {
			return fmt.Errorf("%w: input batch: struct array has null rows", ErrData)
		}
	}
	if root.Dictionary != nil {
		return fmt.Errorf("%w: input batch: unexpected dictionary", ErrData)
	}
	rows := int(root.Length)
	if root.Children == nil {
		return fmt.Errorf("%w: input batch: children pointer is NULL", ErrData)
	}
	children := unsafe.Slice((**CArray)(root.Children), n+1)
	b.Len = rows
	if cap(b.Cols) < n {
		b.Cols = make([]Column, n)
	}
	b.Cols = b.Cols[:n]
	for i := 0; i < n; i++ {
		if err := im.column(children[i], int(root.Offset), rows, i, im.Types[i], &b.Cols[i]); err != nil {
			return err
		}
	}
	var kinds Column
	kindType := Type{ID: TinyInt}
	if err := im.column(children[n], int(root.Offset), rows, n, kindType, &kinds); err != nil {
		return err
	}
	if kinds.Valid != nil {
		return fmt.Errorf("%w: input column %d (RowKind) holds nulls", ErrData, n)
	}
	b.Kinds = kinds.Data[kinds.Offset : kinds.Offset+rows]
	b.Retracts = false
	for i, k := range b.Kinds {
		if k > Delete {
			return fmt.Errorf("%w: input column %d (RowKind): byte %d at row %d is not a RowKind", ErrData, n, k, i)
		}
		if k == UpdateBefore || k == Delete {
			b.Retracts = true
		}
	}
	return nil
}

// colName names column i in messages: "input column 1 (price)". The names are made once, so a
// batch's import allocates nothing.
func (im *Importer) colName(i int) string {
	if len(im.labels) != len(im.Types)+1 {
		im.labels = make([]string, len(im.Types)+1)
		for j := range im.labels {
			switch {
			case j < len(im.Names) && im.Names[j] != "":
				im.labels[j] = fmt.Sprintf("input column %d (%s)", j, im.Names[j])
			case j == len(im.Types):
				im.labels[j] = fmt.Sprintf("input column %d (RowKind)", j)
			default:
				im.labels[j] = fmt.Sprintf("input column %d", j)
			}
		}
	}
	return im.labels[i]
}

func checkHeader(a *CArray, what string) error {
	switch {
	case a.Length < 0:
		return fmt.Errorf("%w: %s: negative length %d", ErrData, what, a.Length)
	case a.Offset < 0:
		return fmt.Errorf("%w: %s: negative offset %d", ErrData, what, a.Offset)
	case a.Length > maxElements || a.Offset > maxElements-a.Length:
		return fmt.Errorf("%w: %s: offset %d + length %d too large", ErrData, what, a.Offset, a.Length)
	case a.NullCount < -1 || a.NullCount > a.Length:
		return fmt.Errorf("%w: %s: null count %d outside [-1, %d]", ErrData, what, a.NullCount, a.Length)
	case a.NBuffers < 0 || a.NChildren < 0:
		return fmt.Errorf("%w: %s: negative buffer or child count", ErrData, what)
	case a.NBuffers > 0 && a.Buffers == nil:
		return fmt.Errorf("%w: %s: buffers pointer is NULL", ErrData, what)
	}
	return nil
}

// countNulls counts the zero bits of the validity bitmap in [from, to).
func countNulls(valid []byte, from, to int) int {
	n := 0
	for i := from; i < to; i++ {
		if valid[i>>3]&(1<<(i&7)) == 0 {
			n++
		}
	}
	return n
}

// bufferAt returns buffers[i] of a validated header with i < NBuffers.
func bufferAt(a *CArray, i int) unsafe.Pointer {
	return unsafe.Slice((*unsafe.Pointer)(a.Buffers), a.NBuffers)[i]
}

// column validates one child array and fills c. parentOff and rows are the struct's offset and
// length; the child must cover elements [parentOff, parentOff+rows) of itself.
func (im *Importer) column(a *CArray, parentOff, rows, idx int, t Type, c *Column) error {
	name := im.colName(idx)
	if a == nil {
		return fmt.Errorf("%w: %s: child array is NULL", ErrData, name)
	}
	if a.Release == nil {
		return fmt.Errorf("%w: %s: child array is released", ErrData, name)
	}
	if err := checkHeader(a, name); err != nil {
		return err
	}
	wantBuffers := int64(2)
	if t.Variable() {
		wantBuffers = 3
	}
	if a.NBuffers != wantBuffers {
		return fmt.Errorf("%w: %s: buffer count %d, want %d for %s", ErrData, name, a.NBuffers, wantBuffers, t)
	}
	if a.NChildren != 0 || a.Dictionary != nil {
		return fmt.Errorf("%w: %s: unexpected children or dictionary for %s", ErrData, name, t)
	}
	if a.Length < int64(parentOff+rows) {
		return fmt.Errorf("%w: %s: length %d shorter than the batch (%d rows at offset %d)", ErrData, name, a.Length, rows, parentOff)
	}
	off := int(a.Offset) + parentOff
	end := off + rows // elements the view may touch
	*c = Column{Type: t, Offset: off}
	switch v := bufferAt(a, 0); {
	case v == nil:
		if a.NullCount > 0 {
			return fmt.Errorf("%w: %s: null count %d but no validity buffer", ErrData, name, a.NullCount)
		}
	case a.NullCount != 0 && rows > 0:
		valid := unsafe.Slice((*byte)(v), (end+7)/8)
		if !t.Nullable || a.NullCount < 0 {
			// The count covers the child's whole array, not this window, or is unknown (-1).
			if nulls := countNulls(valid, off, end); nulls == 0 {
				break
			} else if !t.Nullable {
				return fmt.Errorf("%w: %s is declared NOT NULL but holds %d NULL values", ErrData, name, nulls)
			}
		}
		c.Valid = valid
	}
	data := bufferAt(a, 1)
	switch t.ID {
	case Boolean:
		if end > 0 {
			if data == nil {
				return fmt.Errorf("%w: %s: values buffer is NULL", ErrData, name)
			}
			c.Data = unsafe.Slice((*byte)(data), (end+7)/8)
		}
	case Varchar, Binary:
		if end > 0 || data != nil {
			if data == nil {
				return fmt.Errorf("%w: %s: offsets buffer is NULL", ErrData, name)
			}
			c.Offs = unsafe.Slice((*int32)(data), end+1)
			if first := c.Offs[off]; first < 0 {
				return fmt.Errorf("%w: %s: negative offset %d at row 0", ErrData, name, first)
			}
			for i := off; i < end; i++ {
				if c.Offs[i+1] < c.Offs[i] {
					return fmt.Errorf("%w: %s: offsets not monotonic at row %d", ErrData, name, i-off)
				}
			}
			size := int(c.Offs[end])
			if size > 0 {
				bytes := bufferAt(a, 2)
				if bytes == nil {
					return fmt.Errorf("%w: %s: data buffer is NULL", ErrData, name)
				}
				c.Data = unsafe.Slice((*byte)(bytes), size)
			}
		}
	default:
		if end > 0 {
			if data == nil {
				return fmt.Errorf("%w: %s: values buffer is NULL", ErrData, name)
			}
			c.Data = unsafe.Slice((*byte)(data), end*t.Width())
		}
	}
	return nil
}

// CopyInto makes dst a copy of b in Go memory, for an operator that needs rows after the call
// that imported b returns (input batches are views valid only during the call). dst's buffers
// are reused when large enough; dst must not alias b.
func (b *Batch) CopyInto(dst *Batch) {
	dst.Len, dst.Retracts = b.Len, b.Retracts
	dst.Kinds = append(dst.Kinds[:0], b.Kinds...)
	if cap(dst.Cols) < len(b.Cols) {
		dst.Cols = make([]Column, len(b.Cols))
	}
	dst.Cols = dst.Cols[:len(b.Cols)]
	for i := range b.Cols {
		src, c := &b.Cols[i], &dst.Cols[i]
		end := src.Offset + b.Len // elements the view covers
		c.Type, c.Offset = src.Type, src.Offset
		c.Valid = nil
		if src.Valid != nil {
			c.Valid = append(c.Valid[:0], src.Valid[:(end+7)/8]...)
		}
		c.Offs = c.Offs[:0]
		switch {
		case src.Type.Variable() && src.Offs != nil:
			c.Offs = append(c.Offs, src.Offs[:end+1]...)
			c.Data = append(c.Data[:0], src.Data[:src.Offs[end]]...)
		case src.Type.ID == Boolean:
			c.Data = append(c.Data[:0], src.Data[:(end+7)/8]...)
		default:
			c.Data = append(c.Data[:0], src.Data[:end*src.Type.Width()]...)
		}
	}
}
