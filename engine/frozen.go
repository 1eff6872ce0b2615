package engine

import (
	"fmt"
	"slices"
	"sync"
)

// Frozen is a point-in-time view of a KeyedState: Freeze takes it on the goroutine that uses the
// state, in O(key groups + ids/64) and without copying state, and Snapshot writes it later, on any
// goroutine, while that goroutine keeps changing the state. It is Flink's copy-on-write snapshot
// (CopyOnWriteStateMap) at the granularity of a key: before the state hands out or changes a key
// id not yet written (Find, Insert, Remove, Touch, ExpireValue, LiveIDs, a timer's key from
// TimerService.Peek or Next), it saves the key's snapshot bytes as of the freeze (its
// pre-image); the writer takes a saved key's pre-image and reads the others, unchanged since the
// freeze, from the live state. A kind therefore changes a key's state only through an id the
// state handed out during the current call, which is how every kind addresses its state.
//
// The two goroutines take turns under the state's lock (KeyedState.Lock): the goroutine using
// the state holds it for each call that may read or change the state while a view is open, the
// writer for each stripe of frozeStripe ids. Several views may be open at once (a checkpoint's
// write may still run, aborted, when the next one freezes); each keeps its own pre-images. Idle
// TTL's sweep of expired entries (EntryState.SweepEntries) pauses while a view is open, as it
// changes keys no call addressed; the sweep of expired keys goes on (it removes them).
type Frozen struct {
	s      *KeyedState
	ids    int32    // ids handed out at the freeze
	next   int32    // ids below next are written; guarded by the state's lock
	saved  []uint64 // bit per id below ids: its pre-image is taken
	pre    map[int32]preImage
	arena  []byte        // pre-images' bytes
	timers *TimerService // the timers at the freeze; nil without timers
	left   []int         // per key group, its keys at the freeze not yet written
	done   bool          // written or released
}

// preImage is a key's snapshot bytes at the freeze, arena[off:off+n] of key group index kg
// (key group minus the range's start); absent: the id held no key at the freeze.
type preImage struct {
	off, n int
	kg     int
	absent bool
}

// frozeStripe is how many ids the writer serialises per turn of the lock: a few hundred
// microseconds of work, the longest the goroutine using the state waits for it.
var frozeStripe int32 = 4096

// Lock and Unlock guard the state against a Frozen view's writer: while a view is open, the
// goroutine using the state holds the lock across each call that reads or changes it. Freeze,
// Snapshot and Release take it themselves: call them without holding it.
func (s *KeyedState) Lock()   { s.mu.Lock() }
func (s *KeyedState) Unlock() { s.mu.Unlock() }

// Freeze takes a consistent view of the state for Frozen.Snapshot. Call it between calls that
// change the state, on the goroutine that uses it. Restored timers join their heaps first; with
// timers, the view copies the timer service's flat arrays (entries, their heap positions and
// each key's first entry), since a timer of one key moves others' heap positions.
func (s *KeyedState) Freeze() *Frozen {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.keys.Cap()
	f := &Frozen{s: s, ids: int32(n), saved: make([]uint64, (n+63)/64), pre: map[int32]preImage{}}
	f.left = make([]int, s.kgEnd-s.kgStart+1)
	for i := range f.left {
		f.left[i] = s.keys.KeyGroupLen(s.kgStart + i)
	}
	if s.timers != nil {
		s.timers.positions()
		f.timers = s.timers.frozenCopy()
	}
	s.frozen = append(s.frozen, f)
	s.setTimerHook()
	return f
}

// setTimerHook makes the timer service report the keys of timers it hands out while a view is
// open.
func (s *KeyedState) setTimerHook() {
	if s.timers == nil {
		return
	}
	if len(s.frozen) > 0 {
		s.timers.onKey = s.preserve
	} else {
		s.timers.onKey = nil
	}
}

// preserve takes the pre-image of key id for every open view that has not written it yet.
func (s *KeyedState) preserve(id int32) {
	for _, f := range s.frozen {
		f.take(id, false)
	}
}

// preserveNew records, for every open view, that the new key id held no key at the freeze.
func (s *KeyedState) preserveNew(id int32) {
	for _, f := range s.frozen {
		f.take(id, true)
	}
}

// take saves the pre-image of id unless it is written, saved, or beyond the freeze. A new key's
// id (fresh) held no key at the freeze unless the key was removed since, which saved it.
func (f *Frozen) take(id int32, fresh bool) {
	if id >= f.ids || id < f.next || f.saved[id>>6]&(1<<(id&63)) != 0 {
		return
	}
	f.saved[id>>6] |= 1 << (id & 63)
	kg, live := f.s.keys.keyGroupIndex(id)
	if fresh || !live {
		f.pre[id] = preImage{absent: true}
		return
	}
	off := len(f.arena)
	f.arena = f.s.appendKey(f.arena, id, f.timers)
	f.pre[id] = preImage{off: off, n: len(f.arena) - off, kg: kg}
}

// Snapshot writes the view as KeyedState.Snapshot writes the state (the same bytes, chunks and
// calls of emit), on any goroutine; emit runs without the state's lock. It ends the view
// (Release), also on error; it fails with ErrState when the view is released before it is
// written.
func (f *Frozen) Snapshot(limit int, emit func(kg int, chunk []byte, last bool) ([]byte, error)) error {
	defer f.Release()
	s := f.s
	chunks := make([][]byte, len(f.left))
	written, keys := 0, 0 // bytes and keys so far, to size new chunks
	type out struct {
		i     int
		chunk []byte
		last  bool
	}
	var ready []out
	stripe := func() (int32, error) { // the next stripe's chunks into ready, under the lock
		s.mu.Lock()
		defer s.mu.Unlock()
		if f.done {
			return 0, fmt.Errorf("%w: the state view was released before it was written", ErrState)
		}
		from := f.next
		to := min(from+frozeStripe, f.ids)
		for id := from; id < to; id++ {
			var i int
			var key []byte
			if f.saved[id>>6]&(1<<(id&63)) != 0 {
				p := f.pre[id]
				if p.absent {
					continue
				}
				i, key = p.kg, f.arena[p.off:p.off+p.n]
			} else if kg, live := s.keys.keyGroupIndex(id); live {
				i = kg
			} else {
				continue
			}
			c := chunks[i]
			if c == nil && keys > 0 { // a chunk of the key group's expected size: no growth copies
				size := min(limit, f.left[i]*(written/keys+1))
				c = make([]byte, 0, size+size/8)
			}
			size := len(c)
			if key != nil {
				c = append(c, key...)
			} else {
				c = s.appendKey(c, id, f.timers)
			}
			written, keys = written+len(c)-size, keys+1
			if f.left[i]--; f.left[i] > 0 && len(c) < limit {
				chunks[i] = c
				continue
			}
			ready = append(ready, out{i, c, f.left[i] == 0})
			chunks[i] = nil
		}
		f.next = to
		return to, nil
	}
	for {
		to, err := stripe()
		if err != nil {
			return err
		}
		for _, o := range ready {
			next, err := emit(s.kgStart+o.i, o.chunk, o.last)
			if err != nil {
				return err
			}
			if !o.last && chunks[o.i] == nil {
				chunks[o.i] = next
			}
		}
		ready = ready[:0]
		if to == f.ids {
			return nil
		}
	}
}

// Release ends the view, written or not, and drops its pre-images. It may be called more than
// once, on any goroutine.
func (f *Frozen) Release() {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.done {
		return
	}
	f.done = true
	s.frozen = slices.DeleteFunc(s.frozen, func(g *Frozen) bool { return g == f })
	s.setTimerHook()
	f.pre, f.arena, f.saved = nil, nil, nil
}

// Pending is the number of pre-images the view holds and their bytes.
func (f *Frozen) Pending() (keys int, bytes int) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	return len(f.pre), len(f.arena)
}

var _ sync.Locker = (*KeyedState)(nil)
