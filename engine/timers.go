package engine

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// TimeDomain is the clock a timer fires on.
type TimeDomain uint8

const (
	// EventTime timers fire when the watermark reaches their time.
	EventTime TimeDomain = 0
	// ProcessingTime timers fire when the host's processing time reaches their time.
	ProcessingTime TimeDomain = 1
)

// Timer is one registered timer: its identity is (Domain, Key, Time, Namespace).
type Timer struct {
	Domain    TimeDomain
	Key       int32 // the key's id in its KeyedState
	Time      int64 // epoch milliseconds of Domain's clock
	Namespace int64 // the operator's own discriminator (a window's end; 0 for none)
}

// TimerService is the timer service of a KeyedState (StateConfig.Timers), which owns it: the
// timers of every key, kept exactly as Flink's InternalTimerServiceImpl keeps them on the heap
// state backend. Each time domain has its own set of timers in one binary heap (Flink's
// HeapPriorityQueueSet), ordered by time alone, with Flink's sift-up, sift-down and removal
// (HeapPriorityQueue.addInternal, removeInternal, adjustElementAtIndex): timers of equal time
// fire in the order Flink fires them, which depends on the history of additions and removals.
// Registering a timer that exists changes nothing (the set's deduplication map).
//
// A timer belongs to its key: it is written in the key's snapshot entry with its heap position,
// and deleted with the key (KeyedState.Remove). Restored and imported timers wait, in the keys'
// chains but outside the heaps, until the service is next used (Register, Peek, Next, Position),
// and are then added in the order Flink's heap backend adds a snapshot's timers: key group by
// key group ascending, each in the snapshot's heap-array order (HeapPriorityQueueStateSnapshot
// partitions the array stably by key group). Timers of Flink's own heap (ImportFlink) come first,
// in position order across key groups, which rebuilds that heap as it was. Reading the figures
// between restore chunks (KeyedState.Stats) adds nothing, so the order never depends on them.
//
// Pointer-free, and without an allocation per timer once its slices have grown: entries live in
// one flat slice, chained per key and recycled through a free list; a heap holds (time, entry)
// pairs, 1-based as Flink's array (QUEUE_HEAD_INDEX). The heaps keep no position index, which
// would cost a write per sift step: a position is found by a scan of its heap (Delete, the
// removal of a key with timers), or read from an index Position builds once per state of the
// heaps (a snapshot, an export).
//
// Used by one goroutine at a time, as its KeyedState.
type TimerService struct {
	entries []timerEntry
	head    []int32 // per key id: its first entry, -1 for none
	free    int32   // the first free entry, -1 for none
	n       int     // registered timers, pending ones included
	heaps   [2][]heapSlot

	// pos maps entries in a heap to their positions while posValid; any heap change clears it.
	pos      []int32
	posValid bool

	// pending holds per domain the restored and imported timers not yet in their heap (settle),
	// and pendingProc the earliest time of the live pending processing-time timers, stale after
	// one at that time was dropped.
	pending     [2][]pendingTimer
	pendingProc int64
	procStale   bool

	// onKey, while a Frozen view is open, learns the key of each timer Peek and Next hand out
	// before the operator can change the key's state.
	onKey func(int32)
}

// timerEntry is one timer.
type timerEntry struct {
	time, ns int64
	key      int32 // the owning key id
	next     int32 // the next entry of the key's chain or of the free list; -1 ends
	dom      TimeDomain
	state    uint8
}

// Entry states.
const (
	inHeap  = iota
	pending // restored or imported: in its key's chain, not yet in a heap
	dropped // deleted while pending: out of every chain, freed by settle
)

// heapSlot is a heap element: a timer's time, read by every comparison, and its entry.
type heapSlot struct {
	time int64
	e    int32
}

// pendingTimer orders a pending entry: by group (the key group of a restored timer, -1 for an
// imported one), then by position in the heap it was saved from.
type pendingTimer struct {
	pos   uint64
	group int32
	e     int32
}

func newTimerService() *TimerService {
	return &TimerService{free: -1, heaps: [2][]heapSlot{make([]heapSlot, 1), make([]heapSlot, 1)}, pendingProc: math.MaxInt64}
}

func (x *TimerService) grow(n int) {
	for len(x.head) < n {
		x.head = append(x.head, -1)
	}
}

// Len is the number of registered timers of both domains.
func (x *TimerService) Len() int { return x.n }

// HasTimers reports whether key holds a timer.
func (x *TimerService) HasTimers(key int32) bool { return x.head[key] >= 0 }

// Has reports whether the timer (d, key, t, ns) is registered.
func (x *TimerService) Has(d TimeDomain, key int32, t, ns int64) bool {
	return x.find(d, key, t, ns) >= 0
}

// Each calls f with every timer of key, in no particular order. f must not change the service.
func (x *TimerService) Each(key int32, f func(Timer)) {
	for e := x.head[key]; e >= 0; e = x.entries[e].next {
		en := &x.entries[e]
		f(Timer{Domain: en.dom, Key: key, Time: en.time, Namespace: en.ns})
	}
}

// Register registers the timer (d, key, t, ns) (Flink's registerEventTimeTimer and
// registerProcessingTimeTimer); it reports false, changing nothing, when it is registered
// already.
func (x *TimerService) Register(d TimeDomain, key int32, t, ns int64) bool {
	x.settle()
	if x.find(d, key, t, ns) >= 0 {
		return false
	}
	x.push(d, t, x.newEntry(d, key, t, ns, inHeap))
	return true
}

// Delete deletes the timer (d, key, t, ns) (Flink's deleteEventTimeTimer and
// deleteProcessingTimeTimer: HeapPriorityQueue.removeInternal at its position); it reports
// whether it was registered. It costs a scan of the domain's heap. Restored timers go into their
// heaps first, as Flink's heap holds every restored timer before the first deletion: removing one
// moves the heap's last element into its place, which orders later timers of equal time.
func (x *TimerService) Delete(d TimeDomain, key int32, t, ns int64) bool {
	x.settle()
	e := x.find(d, key, t, ns)
	if e < 0 {
		return false
	}
	x.drop(e)
	return true
}

// Peek returns the first timer of domain d without removing it.
func (x *TimerService) Peek(d TimeDomain) (Timer, bool) {
	x.settle()
	h := x.heaps[d]
	if len(h) < 2 {
		return Timer{}, false
	}
	en := &x.entries[h[1].e]
	if x.onKey != nil {
		x.onKey(en.key)
	}
	return Timer{Domain: d, Key: en.key, Time: en.time, Namespace: en.ns}, true
}

// Next removes and returns the first timer of domain d if its time is at most upTo (the
// watermark, or the processing time): Flink's advanceWatermark and onProcessingTime loops, which
// poll the head while it is due. The timer is gone when it is returned, so the operator may
// register it again.
func (x *TimerService) Next(d TimeDomain, upTo int64) (Timer, bool) {
	x.settle()
	h := x.heaps[d]
	if len(h) < 2 || h[1].time > upTo {
		return Timer{}, false
	}
	e := h[1].e
	if x.onKey != nil {
		x.onKey(x.entries[e].key)
	}
	x.removeAt(d, 1)
	en := &x.entries[e]
	t := Timer{Domain: d, Key: en.key, Time: en.time, Namespace: en.ns}
	x.unlink(e)
	x.release(e)
	return t, true
}

// Position returns the position of the timer (d, key, t, ns) in its domain's heap: its index in
// Flink's heap array, from 1 at the head. The first call after a change of the heaps builds an
// index of every position.
func (x *TimerService) Position(d TimeDomain, key int32, t, ns int64) (int, bool) {
	e := x.find(d, key, t, ns)
	if e < 0 {
		return 0, false
	}
	x.positions()
	return int(x.pos[e]), true
}

// ImportFlink adds a timer of Flink's own timer heap, restored by Flink's heap backend and read
// in its array order: position is its index in that order. Imported timers join their heaps with
// the restored ones (settle), before them, in position order across all key groups: adding a
// heap's array in order rebuilds the heap as it was. It reports false, changing nothing, for a
// timer registered already.
func (x *TimerService) ImportFlink(d TimeDomain, key int32, t, ns int64, position uint64) bool {
	if x.find(d, key, t, ns) >= 0 {
		return false
	}
	x.queue(d, key, t, ns, -1, position)
	return true
}

// nextProcessing is the time of the earliest processing-time timer, pending ones included,
// math.MaxInt64 for none. It adds no pending timer to the heap.
func (x *TimerService) nextProcessing() int64 {
	next := int64(math.MaxInt64)
	if h := x.heaps[ProcessingTime]; len(h) > 1 {
		next = h[1].time
	}
	if x.procStale {
		x.pendingProc = math.MaxInt64
		x.pending[ProcessingTime] = slices.DeleteFunc(x.pending[ProcessingTime], func(p pendingTimer) bool {
			if x.entries[p.e].state == dropped {
				x.release(p.e)
				return true
			}
			x.pendingProc = min(x.pendingProc, x.entries[p.e].time)
			return false
		})
		x.procStale = false
	}
	return min(next, x.pendingProc)
}

// find returns the entry of the timer (d, key, t, ns), or -1.
func (x *TimerService) find(d TimeDomain, key int32, t, ns int64) int32 {
	for e := x.head[key]; e >= 0; e = x.entries[e].next {
		en := &x.entries[e]
		if en.time == t && en.ns == ns && en.dom == d {
			return e
		}
	}
	return -1
}

// newEntry chains a new entry to key and returns it.
func (x *TimerService) newEntry(d TimeDomain, key int32, t, ns int64, state uint8) int32 {
	en := timerEntry{time: t, ns: ns, key: key, next: x.head[key], dom: d, state: state}
	e := x.free
	if e >= 0 {
		x.free = x.entries[e].next
		x.entries[e] = en
	} else {
		e = int32(len(x.entries))
		x.entries = append(x.entries, en)
	}
	x.head[key] = e
	x.n++
	return e
}

// unlink takes entry e out of its key's chain.
func (x *TimerService) unlink(e int32) {
	p := &x.head[x.entries[e].key]
	for *p != e {
		p = &x.entries[*p].next
	}
	*p = x.entries[e].next
	x.n--
}

// release returns an unlinked entry to the free list.
func (x *TimerService) release(e int32) {
	x.entries[e].next = x.free
	x.free = e
}

// drop deletes entry e: from its heap (a pending one is skipped by settle).
func (x *TimerService) drop(e int32) {
	x.unlink(e)
	en := &x.entries[e]
	if en.state == pending {
		en.state = dropped
		if en.dom == ProcessingTime && en.time == x.pendingProc {
			x.procStale = true
		}
		return
	}
	h := x.heaps[en.dom]
	i := 1
	if x.posValid {
		i = int(x.pos[e])
	} else {
		for h[i].e != e {
			i++
		}
	}
	x.removeAt(en.dom, i)
	x.release(e)
}

// removeKey deletes every timer of key id.
func (x *TimerService) removeKey(id int32) {
	for x.head[id] >= 0 {
		x.drop(x.head[id])
	}
}

// push is HeapPriorityQueue.addInternal: the entry goes last, then sifts up.
func (x *TimerService) push(d TimeDomain, t int64, e int32) {
	x.posValid = false
	x.heaps[d] = append(x.heaps[d], heapSlot{time: t, e: e})
	siftUp(x.heaps[d], len(x.heaps[d])-1)
}

// removeAt is HeapPriorityQueue.removeInternal: the last element moves to position i, which it
// then leaves by sift-down or, if that does not move it, sift-up (adjustElementAtIndex). Flink
// shrinks the heap after adjusting; its sift-down then still sees the moved element at the old
// last position too, which never changes where an element goes.
func (x *TimerService) removeAt(d TimeDomain, i int) {
	x.posValid = false
	h := x.heaps[d]
	last := len(h) - 1
	moved := h[last]
	h = h[:last]
	x.heaps[d] = h
	if i == last {
		return
	}
	h[i] = moved
	siftDown(h, i)
	if h[i].e == moved.e {
		siftUp(h, i)
	}
}

// siftUp is HeapPriorityQueue.siftUp.
func siftUp(h []heapSlot, i int) {
	cur := h[i]
	for p := i >> 1; p > 0 && cur.time < h[p].time; p >>= 1 {
		h[i] = h[p]
		i = p
	}
	h[i] = cur
}

// siftDown is HeapPriorityQueue.siftDown.
func siftDown(h []heapSlot, i int) {
	size := len(h) - 1
	cur := h[i]
	child := i << 1
	if child+1 <= size && h[child+1].time < h[child].time {
		child++
	}
	for child <= size && h[child].time < cur.time {
		h[i] = h[child]
		i = child
		child = i << 1
		if child+1 <= size && h[child+1].time < h[child].time {
			child++
		}
	}
	h[i] = cur
}

// positions builds the index of heap positions, after adding the pending timers.
func (x *TimerService) positions() {
	x.settle()
	if x.posValid {
		return
	}
	x.pos = slices.Grow(x.pos[:0], len(x.entries))[:len(x.entries)]
	for _, h := range x.heaps {
		for i, s := range h[1:] {
			x.pos[s.e] = int32(i + 1)
		}
	}
	x.posValid = true
}

// queue chains a restored or imported timer to key and queues it for settle.
func (x *TimerService) queue(d TimeDomain, key int32, t, ns int64, group int32, position uint64) {
	e := x.newEntry(d, key, t, ns, pending)
	x.pending[d] = append(x.pending[d], pendingTimer{pos: position, group: group, e: e})
	if d == ProcessingTime && t < x.pendingProc {
		x.pendingProc = t
	}
}

// settle adds the pending timers, if any, to their heaps.
func (x *TimerService) settle() {
	if len(x.pending[EventTime]) > 0 || len(x.pending[ProcessingTime]) > 0 {
		x.addPending()
	}
}

// addPending adds the pending timers to their heaps in Flink's restore order (TimerService).
func (x *TimerService) addPending() {
	for d := range x.pending {
		ps := x.pending[d]
		if len(ps) == 0 {
			continue
		}
		slices.SortStableFunc(ps, func(a, b pendingTimer) int {
			return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.pos, b.pos))
		})
		for _, p := range ps {
			en := &x.entries[p.e]
			if en.state == dropped {
				x.release(p.e)
				continue
			}
			en.state = inHeap
			x.push(TimeDomain(d), en.time, p.e)
		}
		x.pending[d] = nil // a restore's worth: not kept
	}
	x.pendingProc, x.procStale = math.MaxInt64, false
}

// save appends the timers of key id: their number, then per timer its domain byte, time and
// namespace (varints) and its position in its domain's heap (uvarint). The positions must be
// current (positions).
func (x *TimerService) save(dst []byte, id int32) []byte {
	n := 0
	for e := x.head[id]; e >= 0; e = x.entries[e].next {
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for e := x.head[id]; e >= 0; e = x.entries[e].next {
		en := &x.entries[e]
		dst = append(dst, byte(en.dom))
		dst = binary.AppendVarint(dst, en.time)
		dst = binary.AppendVarint(dst, en.ns)
		dst = binary.AppendUvarint(dst, uint64(x.pos[e]))
	}
	return dst
}

// frozenCopy copies what save reads (each key's chain and the heap positions, which must be
// current): a read-only view of the timers as they are.
func (x *TimerService) frozenCopy() *TimerService {
	return &TimerService{entries: slices.Clone(x.entries), head: slices.Clone(x.head), pos: slices.Clone(x.pos), posValid: true}
}

// load reads the timers save wrote for key id of key group kg, which has none, as pending, and
// returns the rest of src.
func (x *TimerService) load(src []byte, id int32, kg int) ([]byte, error) {
	n, src, err := getUvarint(src)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(src))/4 { // every timer takes at least 4 bytes
		return nil, fmt.Errorf("%w: timer count %d out of range", ErrData, n)
	}
	for range n {
		if len(src) == 0 {
			return nil, errStateTruncated
		}
		d := TimeDomain(src[0])
		if d > ProcessingTime {
			return nil, fmt.Errorf("%w: timer domain %d unknown", ErrData, d)
		}
		var t, ns int64
		var pos uint64
		if t, src, err = getVarint(src[1:]); err != nil {
			return nil, err
		}
		if ns, src, err = getVarint(src); err != nil {
			return nil, err
		}
		if pos, src, err = getUvarint(src); err != nil {
			return nil, err
		}
		if pos == 0 || pos > math.MaxInt32 {
			return nil, fmt.Errorf("%w: timer heap position %d out of range", ErrData, pos)
		}
		if x.find(d, id, t, ns) >= 0 {
			return nil, fmt.Errorf("%w: duplicate timer", ErrData)
		}
		x.queue(d, id, t, ns, int32(kg), pos)
	}
	return src, nil
}

// bytes estimates the memory the service owns.
func (x *TimerService) bytes() int64 {
	return int64(cap(x.entries))*32 + int64(cap(x.head)+cap(x.pos))*4 +
		int64(cap(x.heaps[0])+cap(x.heaps[1])+cap(x.pending[0])+cap(x.pending[1]))*16
}
