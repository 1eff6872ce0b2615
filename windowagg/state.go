package windowagg

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
)

// groupAlloc hands out the accumulator groups of the calls (a group per (key, slice), and the
// transient groups of fired windows): dense ids, recycled through a free list, every call's
// flat slices grown together.
type groupAlloc struct {
	calls []kernels.Accumulator
	n     int32   // ids handed out so far
	cap   int     // ids the calls have room for
	freed []int32 // free ids, reset
}

func (g *groupAlloc) alloc() int32 {
	if k := len(g.freed); k > 0 {
		id := g.freed[k-1]
		g.freed = g.freed[:k-1]
		return id
	}
	if int(g.n) == g.cap {
		g.cap = max(64, 2*g.cap)
		for _, c := range g.calls {
			c.Grow(g.cap)
		}
	}
	g.n++
	return g.n - 1
}

func (g *groupAlloc) free(id int32) {
	for _, c := range g.calls {
		c.Reset(id)
	}
	g.freed = append(g.freed, id)
}

// copyOf returns a new group holding group src's accumulators (a fresh one when src < 0).
func (g *groupAlloc) copyOf(src int32) int32 {
	id := g.alloc()
	if src < 0 {
		return id
	}
	var buf []byte
	for _, c := range g.calls {
		buf = c.Save(buf[:0], src)
		if _, err := c.Load(buf, id); err != nil { // its own bytes: cannot fail
			panic(err)
		}
	}
	return id
}

// slice is one slice of a key: its end and its accumulator group.
type slice struct {
	end int64
	gid int32
}

// keySlices is the per-key state (engine.PerKey): the key's slices, in creation order.
type keySlices struct {
	w  *WindowAgg
	of [][]slice
}

// group returns the group of key id's slice end, creating it when create (else -1 when absent).
func (k *keySlices) group(id int32, end int64, create bool) int32 {
	for _, s := range k.of[id] {
		if s.end == end {
			return s.gid
		}
	}
	if !create {
		return -1
	}
	gid := k.w.groups.alloc()
	k.of[id] = append(k.of[id], slice{end, gid})
	return gid
}

// drop removes key id's slice end, if any (windowState.clear).
func (k *keySlices) drop(id int32, end int64) {
	ss := k.of[id]
	for i, s := range ss {
		if s.end == end {
			k.w.groups.free(s.gid)
			k.of[id] = append(ss[:i], ss[i+1:]...)
			return
		}
	}
}

func (k *keySlices) Grow(n int) {
	if n > len(k.of) {
		k.of = append(k.of, make([][]slice, n-len(k.of))...)
	}
}

func (k *keySlices) Reset(id int32) {
	for _, s := range k.of[id] {
		k.w.groups.free(s.gid)
	}
	k.of[id] = nil
}

// Save writes the count of slices, then per slice its end and every call's accumulator.
func (k *keySlices) Save(dst []byte, id int32) []byte {
	dst = binary.AppendVarint(dst, int64(len(k.of[id])))
	for _, s := range k.of[id] {
		dst = binary.AppendVarint(dst, s.end)
		for _, c := range k.w.calls {
			dst = c.Save(dst, s.gid)
		}
	}
	return dst
}

func (k *keySlices) Load(src []byte, id int32) ([]byte, error) {
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src)) {
		return nil, fmt.Errorf("%w: %s: %d slices in a key of %d bytes", engine.ErrData, Kind, n, len(src))
	}
	for range n {
		var end int64
		if end, src, err = getVarint(src); err != nil {
			return nil, err
		}
		if k.group(id, end, false) >= 0 {
			return nil, fmt.Errorf("%w: %s: slice %d twice in a key", engine.ErrData, Kind, end)
		}
		gid := k.group(id, end, true)
		for _, c := range k.w.calls {
			if src, err = c.Load(src, gid); err != nil {
				return nil, err
			}
		}
	}
	return src, nil
}

func (k *keySlices) Bytes() int64 {
	n := int64(cap(k.of)) * 24
	for _, ss := range k.of {
		n += int64(cap(ss)) * 16
	}
	return n
}

func getVarint(src []byte) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: %s: truncated or malformed varint", engine.ErrData, Kind)
	}
	return v, src[n:], nil
}
