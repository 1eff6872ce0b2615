package main

import (
	"fmt"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
)

// driver runs the workload through one path (Go directly, or the C ABI).
type driver interface {
	// prepopulate creates every key of the cardinality, in a shuffled order, before timing.
	prepopulate(keys int, chunk *bids) error
	// run processes count batches of size rows of the ring, from row *pos on, wrapping to row 0
	// when a batch would run past the end. Every row must update a live key: -U and +U.
	run(size, count int, pos *int) error
	// groups is the number of keys holding state (-1 when the path cannot tell).
	groups() int
	close()
}

// reuseAllocator hands out one reused buffer as the output slab, zeroed per call: the Go-direct
// path's stand-in for the C allocator, so output memory costs no Go allocation per batch.
type reuseAllocator struct{ buf []byte }

func (a *reuseAllocator) Alloc(n int) []byte {
	if cap(a.buf) < n {
		a.buf = make([]byte, n+n/4)
	}
	b := a.buf[:n]
	clear(b)
	return b
}

// goDriver calls agg.GroupAggregate.Process on engine.Batch views over the generated columns:
// no Arrow import, no C memory.
type goDriver struct {
	op    *agg.GroupAggregate
	types []engine.Type
	w     workload
	out   engine.OutBatch
	alloc reuseAllocator
	ring  *bids
	view  engine.Batch
	pre   engine.Batch
	in    engine.Inputs // the one batch of a call
}

// process processes b as one call.
func (d *goDriver) process(b *engine.Batch) error {
	if d.in.Batches == nil {
		d.in = engine.Inputs{Batches: make([]*engine.Batch, 1), Runs: make([]engine.Run, 1)}
	}
	d.in.Batches[0], d.in.Runs[0] = b, engine.Run{Rows: b.Len}
	_, err := d.op.Process(&d.in, 0, &d.out)
	return err
}

func newGoDriver(w workload, ring *bids) (*goDriver, error) {
	header, err := engine.ParseSpec([]byte(w.specJSON()))
	if err != nil {
		return nil, err
	}
	spec, err := agg.ParseSpec(header)
	if err != nil {
		return nil, err
	}
	op, err := agg.NewGroupAggregate(spec)
	if err != nil {
		return nil, err
	}
	d := &goDriver{op: op, types: spec.InputTypes, w: w, ring: ring}
	d.out.Alloc = &d.alloc
	d.view = d.batchOver(ring)
	return d, nil
}

// batchOver returns a batch view whose columns cover all of b; callers set Offset, Len, Kinds.
func (d *goDriver) batchOver(b *bids) engine.Batch {
	var batch engine.Batch
	for i, c := range d.w.columns(b) {
		col := engine.Column{Type: d.types[i]}
		switch {
		case c.offs != nil:
			col.Offs, col.Data = c.offs, c.bytes
		case c.dec != nil:
			col.Data = c.dec
		default:
			col.Data = int64Bytes(c.vals)
		}
		batch.Cols = append(batch.Cols, col)
	}
	return batch
}

func window(b *engine.Batch, kinds []byte, start, n int) *engine.Batch {
	for i := range b.Cols {
		b.Cols[i].Offset = start
	}
	b.Len, b.Kinds = n, kinds[start:start+n]
	return b
}

func (d *goDriver) prepopulate(keys int, chunk *bids) error {
	d.pre = d.batchOver(chunk)
	perm := newPermutation(keys)
	for k := 0; k < keys; k += chunk.n {
		n := min(chunk.n, keys-k)
		for i := range n {
			chunk.auction[i] = firstAuctionID + perm.at(k+i)
		}
		if err := d.process(window(&d.pre, chunk.kinds, 0, n)); err != nil {
			return err
		}
		if d.out.Len != n {
			return fmt.Errorf("prepopulate: %d rows gave %d output rows, want %d (+I each)", n, d.out.Len, n)
		}
	}
	return nil
}

func (d *goDriver) run(size, count int, pos *int) error {
	for range count {
		if *pos+size > d.ring.n {
			*pos = 0
		}
		if err := d.process(window(&d.view, d.ring.kinds, *pos, size)); err != nil {
			return err
		}
		if d.out.Len != 2*size {
			return fmt.Errorf("batch of %d rows gave %d output rows, want %d (-U, +U each)", size, d.out.Len, 2*size)
		}
		*pos += size
	}
	return nil
}

func (d *goDriver) groups() int { return d.op.Groups() }

func (d *goDriver) close() { d.op.Close() }
