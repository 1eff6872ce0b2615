package exchange

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// Decoder validates frames of rows of one row type and makes views of their rows. It owns
// scratch memory reused across frames; it is not safe for concurrent use.
type Decoder struct {
	types   []engine.Type // the reader's row type
	wire    []engine.Type // its WireTypes, which lay the frames out
	fp      uint64
	vb      []int
	cols    []engine.OutColumn
	scratch []uint64 // an aligned copy of a body that is not 8-byte aligned in its frame
}

// NewDecoder returns a decoder of frames of rows of types.
func NewDecoder(types []engine.Type) *Decoder {
	return &Decoder{types: types, wire: WireTypes(types), fp: Fingerprint(types), vb: make([]int, len(types)),
		cols: make([]engine.OutColumn, len(types)+1)}
}

// Fingerprint is the fingerprint of the decoder's row type.
func (d *Decoder) Fingerprint() uint64 { return d.fp }

func frameErr(format string, args ...any) error {
	return fmt.Errorf("%w: frame: %s", engine.ErrData, fmt.Sprintf(format, args...))
}

// Decode validates frame completely (header, directory, sizes, offsets, RowKind bytes) before it
// builds anything, then makes b a view of its rows: columns aliasing frame (or, when the body is
// not 8-byte aligned in memory, the decoder's copy of it, valid until the next Decode). Errors
// wrap engine.ErrData. The caller checks the header's max parallelism and each row's key group.
func (d *Decoder) Decode(frame []byte, b *engine.Batch) (Header, error) {
	var h Header
	ncols := len(d.types)
	dir := HeaderSize + DirSize(ncols)
	if len(frame) < dir {
		return h, frameErr("%d bytes, shorter than its %d-byte header", len(frame), dir)
	}
	le := binary.LittleEndian
	if m := le.Uint32(frame); m != Magic {
		return h, frameErr("magic 0x%08x, want 0x%08x (FXF1)", m, Magic)
	}
	if v := le.Uint16(frame[4:]); v != Version {
		return h, frameErr("version %d, this reader knows version %d", v, Version)
	}
	if f := le.Uint16(frame[6:]); f != 0 {
		return h, frameErr("unknown flags 0x%04x", f)
	}
	i32 := func(off int) int { return int(int32(le.Uint32(frame[off:]))) }
	h = Header{KGFirst: i32(8), KGLast: i32(12), MaxParallelism: i32(16), Parallelism: i32(20), Channel: i32(24),
		Rows: i32(28), Fingerprint: le.Uint64(frame[32:])}
	switch {
	case h.MaxParallelism < 1 || h.MaxParallelism > 1<<15:
		return h, frameErr("max parallelism %d outside [1, 32768]", h.MaxParallelism)
	case h.Parallelism < 1 || h.Parallelism > h.MaxParallelism:
		return h, frameErr("parallelism %d outside [1, max parallelism %d]", h.Parallelism, h.MaxParallelism)
	case h.KGFirst < 0 || h.KGFirst > h.KGLast || h.KGLast >= h.MaxParallelism:
		return h, frameErr("key groups [%d, %d] not a range within [0, %d)", h.KGFirst, h.KGLast, h.MaxParallelism)
	case h.Channel < 0 || h.Channel >= h.Parallelism:
		return h, frameErr("channel %d outside [0, parallelism %d)", h.Channel, h.Parallelism)
	case Channel(h.KGFirst, h.Parallelism, h.MaxParallelism) != h.Channel || Channel(h.KGLast, h.Parallelism, h.MaxParallelism) != h.Channel:
		return h, frameErr("key groups [%d, %d] do not all go to channel %d of %d (max parallelism %d)", h.KGFirst, h.KGLast, h.Channel, h.Parallelism, h.MaxParallelism)
	case h.Rows < 1 || h.Rows > len(frame):
		return h, frameErr("%d rows in %d bytes", h.Rows, len(frame))
	case h.Fingerprint != d.fp:
		return h, frameErr("fingerprint 0x%016x is not this query's partial row type (0x%016x)", h.Fingerprint, d.fp)
	}
	nulls := frame[HeaderSize+4*ncols : dir]
	for k, t := range d.types {
		v := int(le.Uint32(frame[HeaderSize+4*k:]))
		switch {
		case !t.Variable() && v != 0:
			return h, frameErr("column %d (%s) declares %d variable bytes", k, t, v)
		case v > len(frame):
			return h, frameErr("column %d declares %d bytes in a %d-byte frame", k, v, len(frame))
		case nulls[k] > 1:
			return h, frameErr("column %d: has-nulls byte %d, want 0 or 1", k, nulls[k])
		case nulls[k] == 1 && !t.Nullable:
			return h, frameErr("column %d (%s) has nulls", k, t)
		}
		d.vb[k] = v
	}
	for k, x := range nulls[ncols:] {
		if x != 0 {
			return h, frameErr("directory padding byte %d is %d, want 0", ncols+k, x)
		}
	}
	size := engine.SlabSize(d.wire, h.Rows, d.vb)
	if len(frame) != dir+size {
		return h, frameErr("%d bytes, want %d (%d header and directory + %d body for %d rows)", len(frame), dir+size, dir, size, h.Rows)
	}
	body := frame[dir:]
	if uintptr(unsafe.Pointer(unsafe.SliceData(body)))%8 != 0 {
		if cap(d.scratch) < size/8 {
			d.scratch = make([]uint64, size/8)
		}
		aligned := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(d.scratch))), size)
		copy(aligned, body)
		body = aligned
	}
	engine.Carve(d.cols, d.wire, h.Rows, d.vb, body)
	for k, t := range d.types {
		c := &d.cols[k]
		if !t.Variable() {
			continue
		}
		if c.Offs[0] != 0 {
			return h, frameErr("column %d: first offset %d, want 0", k, c.Offs[0])
		}
		for j := range h.Rows {
			if c.Offs[j+1] < c.Offs[j] {
				return h, frameErr("column %d: offsets decrease at row %d", k, j)
			}
		}
		if int(c.Offs[h.Rows]) != d.vb[k] {
			return h, frameErr("column %d: last offset %d, want its %d bytes", k, c.Offs[h.Rows], d.vb[k])
		}
	}
	kinds := d.cols[ncols].Data
	for j, k := range kinds {
		if k != engine.Insert {
			return h, frameErr("row %d has RowKind %d, want 0 (+I)", j, k)
		}
	}
	b.Len, b.Kinds, b.Retracts = h.Rows, kinds, false
	b.Cols = resize(b.Cols, ncols)
	for k := range d.types {
		c := &d.cols[k]
		b.Cols[k] = engine.Column{Type: d.types[k], Data: c.Data, Offs: c.Offs}
		if nulls[k] == 1 {
			b.Cols[k].Valid = c.Valid
		}
	}
	return h, nil
}
