package main

import (
	"fmt"
	"sync"

	"github.com/ferrystream/ferry/engine"
)

// Handles are opaque 64-bit values: kind (8 bits) | generation (24 bits) | slot index + 1
// (32 bits). A slot's generation changes whenever it is freed, so stale handles, forged ones and
// handles of another object kind are detected instead of dereferenced.

type handleKind uint8

const kindOperator handleKind = 1

type handleSlot struct {
	gen uint32
	obj any // nil when free
}

type handleTable struct {
	mu    sync.Mutex
	slots []handleSlot
	free  []uint32
}

var handles handleTable

func (t *handleTable) add(kind handleKind, obj any) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = uint32(len(t.slots))
		t.slots = append(t.slots, handleSlot{gen: 1})
	}
	t.slots[i].obj = obj
	return uint64(kind)<<56 | uint64(t.slots[i].gen&0xffffff)<<32 | uint64(i+1)
}

func (t *handleTable) slot(h uint64, kind handleKind) (*handleSlot, error) {
	if h == 0 {
		return nil, fmt.Errorf("%w: handle is 0", engine.ErrInvalid)
	}
	if handleKind(h>>56) != kind {
		return nil, fmt.Errorf("%w: handle %#x is not an operator handle", engine.ErrInvalid, h)
	}
	i := uint32(h) - 1
	if uint32(h) == 0 || int(i) >= len(t.slots) {
		return nil, fmt.Errorf("%w: handle %#x is unknown", engine.ErrInvalid, h)
	}
	s := &t.slots[i]
	if s.obj == nil || s.gen&0xffffff != uint32(h>>32)&0xffffff {
		return nil, fmt.Errorf("%w: handle %#x is stale (already closed)", engine.ErrInvalid, h)
	}
	return s, nil
}

// get resolves a handle of the given kind.
func (t *handleTable) get(h uint64, kind handleKind) (any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.slot(h, kind)
	if err != nil {
		return nil, err
	}
	return s.obj, nil
}

// remove invalidates a handle and returns its object.
func (t *handleTable) remove(h uint64, kind handleKind) (any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, err := t.slot(h, kind)
	if err != nil {
		return nil, err
	}
	obj := s.obj
	s.obj = nil
	s.gen++
	t.free = append(t.free, uint32(h)-1)
	return obj, nil
}
