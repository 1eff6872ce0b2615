package exchange

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// Encoder routes rows of one row type to channels and packs them into frames: Plan groups a
// batch's rows by channel (channels ascending, rows in batch order within a channel) and cuts
// each channel's rows into frames whose body stays within the target size unless one row alone
// exceeds it; Write then gathers each frame straight into its bytes. It owns scratch memory
// reused across batches; it is not safe for concurrent use.
type Encoder struct {
	types       []engine.Type
	fp          uint64
	parallelism int
	maxP        int
	target      int // body bytes
	rowBound    int // an upper bound of the body growth of one more row, its variable bytes aside
	varCols     []int

	order  []int32 // the batch's rows, grouped by channel
	starts []int   // per channel: its first position in order; parallelism+1 entries
	frames []plan
	vb     []int // per frame, per column: byte size of VARCHAR/BINARY columns
	pos    []int // per channel: the next position in order
	cur    []int // per column: byte size of the frame being cut
	cols   []engine.OutColumn
}

// plan is one frame of a Plan.
type plan struct {
	Header
	from int // its rows are order[from:from+Rows]
	size int // frame bytes
}

// NewEncoder returns an encoder of rows of types for parallelism channels and maxParallelism
// key groups, cutting frames at targetBytes of body.
func NewEncoder(types []engine.Type, parallelism, maxParallelism, targetBytes int) (*Encoder, error) {
	switch {
	case maxParallelism < 1 || maxParallelism > 1<<15:
		return nil, fmt.Errorf("%w: max parallelism %d outside [1, 32768]", engine.ErrInvalid, maxParallelism)
	case parallelism < 1 || parallelism > maxParallelism:
		return nil, fmt.Errorf("%w: parallelism %d outside [1, max parallelism %d]", engine.ErrInvalid, parallelism, maxParallelism)
	case targetBytes < 1:
		return nil, fmt.Errorf("%w: target frame bytes %d below 1", engine.ErrInvalid, targetBytes)
	}
	types = WireTypes(types)
	e := &Encoder{types: types, fp: Fingerprint(types), parallelism: parallelism, maxP: maxParallelism,
		target: targetBytes, cols: make([]engine.OutColumn, len(types)+1), rowBound: 8} // RowKind padding
	for k, t := range types {
		if t.Nullable {
			e.rowBound += 8 // a bitmap grows by a word every 64 rows
		}
		switch {
		case t.ID == engine.Boolean:
			e.rowBound += 8
		case t.Variable():
			e.rowBound += 16 // an offset, and the padding of the offsets and of the bytes
			e.varCols = append(e.varCols, k)
		default:
			e.rowBound += t.Width() + 8
		}
	}
	return e, nil
}

// Plan routes the rows of b (of the encoder's types), whose key groups are kgs (one per row,
// each in [0, maxParallelism)), and cuts them into frames. It returns the number of frames and
// their total size in bytes; Size and Write then address frames 0..frames-1 in order.
func (e *Encoder) Plan(b *engine.Batch, kgs []int32) (frames, bytes int) {
	n, p := b.Len, e.parallelism
	e.starts = resize(e.starts, p+1)
	clear(e.starts)
	for _, kg := range kgs[:n] {
		e.starts[Channel(int(kg), p, e.maxP)+1]++
	}
	for c := range p {
		e.starts[c+1] += e.starts[c]
	}
	e.order = resize(e.order, n)
	e.pos = append(e.pos[:0], e.starts[:p]...)
	for i, kg := range kgs[:n] {
		c := Channel(int(kg), p, e.maxP)
		e.order[e.pos[c]] = int32(i)
		e.pos[c]++
	}
	e.frames, e.vb = e.frames[:0], e.vb[:0]
	ncols := len(e.types)
	e.cur = resize(e.cur, ncols)
	cur := e.cur
	for c := range p {
		for at, end := e.starts[c], e.starts[c+1]; at < end; {
			// One frame: rows from at while the body stays within the target (at least one row).
			f := plan{Header: Header{KGFirst: e.maxP, KGLast: -1, MaxParallelism: e.maxP, Parallelism: p,
				Channel: c, Fingerprint: e.fp}, from: at}
			clear(cur)
			// bound is at least the body size with the next row; computed exactly only when it
			// exceeds the target.
			bound := engine.SlabSize(e.types, 0, cur)
			for ; at < end; at++ {
				i := int(e.order[at])
				bound += e.rowBound
				for _, k := range e.varCols {
					if !b.Cols[k].IsNull(i) {
						n := len(b.Cols[k].Bytes(i))
						cur[k] += n
						bound += n
					}
				}
				if f.Rows > 0 && bound > e.target {
					if bound = engine.SlabSize(e.types, f.Rows+1, cur); bound > e.target {
						for _, k := range e.varCols { // the row starts the next frame
							if !b.Cols[k].IsNull(i) {
								cur[k] -= len(b.Cols[k].Bytes(i))
							}
						}
						break
					}
				}
				f.Rows++
				f.KGFirst, f.KGLast = min(f.KGFirst, int(kgs[i])), max(f.KGLast, int(kgs[i]))
			}
			f.size = HeaderSize + DirSize(ncols) + engine.SlabSize(e.types, f.Rows, cur)
			e.vb = append(e.vb, cur...)
			e.frames = append(e.frames, f)
			bytes += f.size
		}
	}
	return len(e.frames), bytes
}

// Size is the byte size of frame f of the last Plan.
func (e *Encoder) Size(f int) int { return e.frames[f].size }

// Header is the header of frame f of the last Plan.
func (e *Encoder) Header(f int) Header { return e.frames[f].Header }

// Write writes frame f of the last Plan of b into dst, Size(f) zeroed bytes aligned to 8 bytes:
// the header, the directory, then the frame's rows gathered from b.
func (e *Encoder) Write(f int, b *engine.Batch, dst []byte) {
	fr := &e.frames[f]
	ncols := len(e.types)
	vb := e.vb[f*ncols : (f+1)*ncols]
	le := binary.LittleEndian
	le.PutUint32(dst[0:], Magic)
	le.PutUint16(dst[4:], Version)
	le.PutUint16(dst[6:], 0)
	for k, v := range []int{fr.KGFirst, fr.KGLast, fr.MaxParallelism, fr.Parallelism, fr.Channel, fr.Rows} {
		le.PutUint32(dst[8+4*k:], uint32(int32(v)))
	}
	le.PutUint64(dst[32:], fr.Fingerprint)
	body := dst[HeaderSize+DirSize(ncols):]
	engine.Carve(e.cols, e.types, fr.Rows, vb, body)
	engine.SetValid(e.cols)
	src := e.order[fr.from : fr.from+fr.Rows]
	for k := range e.types {
		engine.Gather(&e.cols[k], &b.Cols[k], src)
	}
	out := engine.OutBatch{Len: fr.Rows, Cols: e.cols}
	out.Finish() // drops the bitmaps of columns without nulls (their bytes stay all valid)
	for k := range e.types {
		le.PutUint32(dst[HeaderSize+4*k:], uint32(vb[k]))
		if e.cols[k].Valid != nil {
			dst[HeaderSize+4*ncols+k] = 1
		}
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
