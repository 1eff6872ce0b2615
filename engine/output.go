package engine

import (
	"fmt"
	"math/bits"
	"unsafe"
)

// Allocator provides the memory of output batches. Alloc returns n zeroed bytes aligned to 8
// bytes that stay valid after the call that produced the batch returns, or nil when memory is
// exhausted; the C ABI backs it with C memory handed to the JVM, tests with the Go heap.
type Allocator interface {
	Alloc(n int) []byte
}

// HeapAllocator allocates output memory on the Go heap (tests and pure-Go benchmarks).
type HeapAllocator struct{}

// Alloc implements Allocator.
func (HeapAllocator) Alloc(n int) []byte { return make([]byte, n) }

// OutColumn is one column of an output batch. Its buffers are carved from the batch's single
// allocation; Valid has one bit per row (1 = valid) and is nil for columns that cannot be null.
type OutColumn struct {
	Type      Type
	Valid     []byte
	NullCount int
	Data      []byte  // values: bit-packed for BOOLEAN, UTF-8 for VARCHAR, else Width() bytes each
	Offs      []int32 // VARCHAR only, Len+1 entries
}

// OutBatch is an output batch under construction: the operator's output columns followed by
// the RowKind column. All buffers live in Slab, one allocation from an Allocator.
type OutBatch struct {
	Len   int
	Cols  []OutColumn
	Slab  []byte
	Alloc Allocator // provides Slab; set by the owner before the batch is used
}

// Init lays out a batch of rows rows for the given column types (the RowKind column is added
// last) and allocates it from o.Alloc. varBytes[i] is the total UTF-8 size of VARCHAR column i (ignored for
// other types). The bitmaps of nullable columns start all valid. With rows == 0 nothing is
// allocated. The error wraps ErrMemory.
func (o *OutBatch) Init(types []Type, rows int, varBytes []int) error {
	n := len(types) + 1
	if cap(o.Cols) < n {
		o.Cols = make([]OutColumn, n)
	}
	o.Cols = o.Cols[:n]
	o.Len, o.Slab = rows, nil
	if rows == 0 {
		for i := range o.Cols {
			o.Cols[i] = OutColumn{}
		}
		return nil
	}
	size := SlabSize(types, rows, varBytes)
	o.Slab = o.Alloc.Alloc(size)
	if o.Slab == nil {
		o.Len = 0
		return fmt.Errorf("%w: cannot allocate %d bytes for an output batch of %d rows", ErrMemory, size, rows)
	}
	Carve(o.Cols, types, rows, varBytes, o.Slab)
	SetValid(o.Cols)
	return nil
}

// SlabSize is the size in bytes of the single allocation (the slab) holding a batch of rows > 0
// rows of the given column types and the RowKind column; varBytes[i] is the byte size of
// VARCHAR/BINARY column i (ignored for other types). Column by column, in order: the validity
// bitmap of a nullable column ((rows+63)/64*8 bytes), then its values (bit-packed BOOLEAN
// padded like a bitmap; VARCHAR/BINARY: rows+1 int32 offsets, then varBytes[i] bytes; else
// rows*Width bytes), then rows RowKind bytes; every buffer padded to a multiple of 8 bytes.
func SlabSize(types []Type, rows int, varBytes []int) int {
	bitmap := (rows + 63) / 64 * 8
	size := 0
	for i, t := range types {
		if t.Nullable {
			size += bitmap
		}
		switch t.ID {
		case Boolean:
			size += bitmap
		case Varchar, Binary:
			size += pad8((rows+1)*4) + pad8(varBytes[i])
		default:
			size += pad8(rows * t.Width())
		}
	}
	return size + pad8(rows)
}

// Carve points cols (len(types)+1 entries: the columns, then RowKind) at their buffers within
// slab, laid out as SlabSize describes; it reads and writes none of slab's bytes. Every nullable
// column gets its Valid bitmap; NullCount is 0. slab must hold SlabSize(types, rows, varBytes)
// bytes.
func Carve(cols []OutColumn, types []Type, rows int, varBytes []int, slab []byte) {
	bitmap := (rows + 63) / 64 * 8
	take := func(n int) []byte {
		b := slab[:n:n]
		slab = slab[pad8(n):]
		return b
	}
	for i, t := range types {
		c := &cols[i]
		*c = OutColumn{Type: t}
		if t.Nullable {
			c.Valid = take(bitmap)
		}
		switch t.ID {
		case Boolean:
			c.Data = take(bitmap)
		case Varchar, Binary:
			ob := take((rows + 1) * 4)
			c.Offs = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(ob))), rows+1)
			c.Data = take(varBytes[i])
		default:
			c.Data = take(rows * t.Width())
		}
	}
	cols[len(types)] = OutColumn{Type: Type{ID: TinyInt}, Data: take(rows)}
}

// SetValid marks every row of cols valid (all bitmap bits set), as Init leaves a batch.
func SetValid(cols []OutColumn) {
	for i := range cols {
		for j := range cols[i].Valid {
			cols[i].Valid[j] = 0xff
		}
	}
}

// Kinds returns the RowKind column's bytes.
func (o *OutBatch) Kinds() []byte { return o.Cols[len(o.Cols)-1].Data }

// Finish computes null counts and drops validity bitmaps of columns without nulls.
func (o *OutBatch) Finish() {
	for i := range o.Cols {
		c := &o.Cols[i]
		if c.Valid == nil {
			continue
		}
		valid := 0
		full := o.Len / 8
		for _, b := range c.Valid[:full] {
			valid += bits.OnesCount8(b)
		}
		if rem := o.Len % 8; rem > 0 {
			valid += bits.OnesCount8(c.Valid[full] & (1<<rem - 1))
		}
		c.NullCount = o.Len - valid
		if c.NullCount == 0 {
			c.Valid = nil
		}
	}
}

// SetNull marks row j of c as NULL.
func (c *OutColumn) SetNull(j int) { c.Valid[j>>3] &^= 1 << (j & 7) }

// OutValues reinterprets the data of c as T values.
func OutValues[T Scalar](c *OutColumn) []T {
	var zero T
	n := len(c.Data) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(c.Data))), n)
}

// Gather copies rows src[j] of column in to rows j of out, for every j. NULL rows stay NULL
// with zeroed values. out must have been laid out by Init for len(src) rows, and for VARCHAR
// with the summed byte length of the gathered values (GatherBytes).
func Gather(out *OutColumn, in *Column, src []int32) {
	switch in.Type.ID {
	case Boolean:
		for j, i := range src {
			if in.IsNull(int(i)) {
				out.SetNull(j)
			} else if in.Bool(int(i)) {
				out.Data[j>>3] |= 1 << (j & 7)
			}
		}
	case Varchar, Binary:
		pos := int32(0)
		for j, i := range src {
			out.Offs[j] = pos
			if in.IsNull(int(i)) {
				out.SetNull(j)
				continue
			}
			pos += int32(copy(out.Data[pos:], in.Bytes(int(i))))
		}
		out.Offs[len(src)] = pos
	case BigInt, Double, Timestamp, Decimal, TinyInt, SmallInt, Int, Float, Date:
		switch w := in.Type.Width(); w {
		case 8:
			gatherFixed(out, in, src, OutValues[int64](out), Values[int64](in, len(in.Data)/8-in.Offset))
		case 4:
			gatherFixed(out, in, src, OutValues[int32](out), Values[int32](in, len(in.Data)/4-in.Offset))
		default:
			for j, i := range src {
				if in.IsNull(int(i)) {
					out.SetNull(j)
					continue
				}
				copy(out.Data[j*w:(j+1)*w], in.Fixed(int(i)))
			}
		}
	}
}

func gatherFixed[T Scalar](out *OutColumn, in *Column, src []int32, dst, vals []T) {
	if in.Valid == nil {
		for j, i := range src {
			dst[j] = vals[i]
		}
		return
	}
	for j, i := range src {
		if in.IsNull(int(i)) {
			out.SetNull(j)
			continue
		}
		dst[j] = vals[i]
	}
}

// GatherBytes is the UTF-8 size of the VARCHAR rows src of in.
func GatherBytes(in *Column, src []int32) int {
	n := 0
	for _, i := range src {
		if !in.IsNull(int(i)) {
			j := in.Offset + int(i)
			n += int(in.Offs[j+1] - in.Offs[j])
		}
	}
	return n
}

func pad8(n int) int { return (n + 7) &^ 7 }
