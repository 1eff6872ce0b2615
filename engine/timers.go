package engine

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
	Namespace int64 // the operator's own discriminator (e.g. a window's end)
}

// timers is the timer set of a KeyedState, as Flink's InternalTimerService keeps one per
// operator: a set of (domain, key, time, namespace), so registering a timer twice keeps one,
// and a priority queue per domain. Timers of a domain fire in order of time, then of the key's
// encoded bytes (unsigned lexicographic), then of namespace: a total order that does not depend
// on insertion order, key ids or restores, so every run fires equal-time timers alike. (Flink
// orders its timer heap by time alone; equal-time timers fire in heap order there.)
//
// Pointer-free, like the key table: entries live in flat slices indexed by entry id, chained per
// key (so a key's timers go with it), recycled through a free list, found through an Index, and
// ordered by one binary heap of entry ids per domain.
type timers struct {
	keys *KeyTable // for the key bytes that order equal-time timers

	key  []int32 // owning key id; -1 for free entries
	dom  []TimeDomain
	time []int64
	ns   []int64
	next []int32 // next entry of the same key, or of the free list; -1 ends
	prev []int32 // previous entry of the same key; -1 at the chain's head
	pos  []int32 // position in its domain's heap
	head []int32 // per key id: first entry, -1 when the key has no timers
	free int32

	index Index
	heaps [2][]int32 // per domain: entry ids, a binary min-heap under less
}

func newTimers(keys *KeyTable) *timers { return &timers{keys: keys, free: -1} }

// timerTag hashes a timer's identity.
func timerTag(key int32, d TimeDomain, t, ns int64) uint32 {
	h := (uint64(uint32(key))<<1 | uint64(d)) * 0x9e3779b97f4a7c15
	h = (h ^ uint64(t)) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>31 ^ uint64(ns)) * 0x94d049bb133111eb
	return uint32(h ^ h>>32)
}

func (x *timers) grow(n int) {
	for len(x.head) < n {
		x.head = append(x.head, -1)
	}
}

func (x *timers) len() int { return x.index.Len() }

func (x *timers) find(key int32, d TimeDomain, t, ns int64) int32 {
	tag := timerTag(key, d, t, ns)
	for e, pos := x.index.Probe(tag, x.index.Home(tag)); e >= 0; e, pos = x.index.Probe(tag, pos) {
		if x.key[e] == key && x.time[e] == t && x.ns[e] == ns && x.dom[e] == d {
			return e
		}
	}
	return -1
}

// add registers a timer; it reports false when the timer was registered already.
func (x *timers) add(key int32, d TimeDomain, t, ns int64) bool {
	if x.find(key, d, t, ns) >= 0 {
		return false
	}
	var e int32
	if x.free >= 0 {
		e = x.free
		x.free = x.next[e]
		x.key[e], x.dom[e], x.time[e], x.ns[e] = key, d, t, ns
	} else {
		e = int32(len(x.key))
		x.key = append(x.key, key)
		x.dom = append(x.dom, d)
		x.time = append(x.time, t)
		x.ns = append(x.ns, ns)
		x.next = append(x.next, -1)
		x.prev = append(x.prev, -1)
		x.pos = append(x.pos, 0)
	}
	hd := x.head[key]
	x.next[e], x.prev[e] = hd, -1
	if hd >= 0 {
		x.prev[hd] = e
	}
	x.head[key] = e
	x.index.Insert(timerTag(key, d, t, ns), e)
	h := append(x.heaps[d], e)
	x.heaps[d] = h
	x.pos[e] = int32(len(h) - 1)
	x.up(d, len(h)-1)
	return true
}

// remove deletes entry e.
func (x *timers) remove(e int32) {
	key, d := x.key[e], x.dom[e]
	if p := x.prev[e]; p >= 0 {
		x.next[p] = x.next[e]
	} else {
		x.head[key] = x.next[e]
	}
	if n := x.next[e]; n >= 0 {
		x.prev[n] = x.prev[e]
	}
	x.index.Delete(timerTag(key, d, x.time[e], x.ns[e]), e)
	h := x.heaps[d]
	i, last := int(x.pos[e]), len(h)-1
	if i != last {
		h[i] = h[last]
		x.pos[h[i]] = int32(i)
	}
	x.heaps[d] = h[:last]
	if i != last {
		if !x.up(d, i) {
			x.down(d, i)
		}
	}
	x.key[e] = -1
	x.next[e] = x.free
	x.free = e
}

// removeKey deletes every timer of key id.
func (x *timers) removeKey(id int32) {
	for x.head[id] >= 0 {
		x.remove(x.head[id])
	}
}

// peek returns the first timer of domain d without removing it.
func (x *timers) peek(d TimeDomain) (Timer, bool) {
	h := x.heaps[d]
	if len(h) == 0 {
		return Timer{}, false
	}
	e := h[0]
	return Timer{Domain: d, Key: x.key[e], Time: x.time[e], Namespace: x.ns[e]}, true
}

// less orders entries a and b of one domain: by time, then key bytes, then namespace.
func (x *timers) less(a, b int32) bool {
	if x.time[a] != x.time[b] {
		return x.time[a] < x.time[b]
	}
	if ka, kb := x.key[a], x.key[b]; ka != kb {
		return bytes.Compare(x.keys.Key(ka), x.keys.Key(kb)) < 0
	}
	return x.ns[a] < x.ns[b]
}

// up moves the entry at heap position i towards the root; it reports whether it moved.
func (x *timers) up(d TimeDomain, i int) bool {
	h := x.heaps[d]
	start := i
	for i > 0 {
		p := (i - 1) / 2
		if !x.less(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		x.pos[h[i]], x.pos[h[p]] = int32(i), int32(p)
		i = p
	}
	return i != start
}

func (x *timers) down(d TimeDomain, i int) {
	h := x.heaps[d]
	for {
		m := i
		if l := 2*i + 1; l < len(h) && x.less(h[l], h[m]) {
			m = l
		}
		if r := 2*i + 2; r < len(h) && x.less(h[r], h[m]) {
			m = r
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		x.pos[h[i]], x.pos[h[m]] = int32(i), int32(m)
		i = m
	}
}

// save appends the timers of key id: their number, then per timer its domain byte, time and
// namespace (varints), in chain order.
func (x *timers) save(dst []byte, id int32) []byte {
	n := 0
	for e := x.head[id]; e >= 0; e = x.next[e] {
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for e := x.head[id]; e >= 0; e = x.next[e] {
		dst = append(dst, byte(x.dom[e]))
		dst = binary.AppendVarint(dst, x.time[e])
		dst = binary.AppendVarint(dst, x.ns[e])
	}
	return dst
}

// load reads the timers save wrote for key id, which has none, and returns the rest of src.
func (x *timers) load(src []byte, id int32) ([]byte, error) {
	n, src, err := getUvarint(src)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(src)) { // every timer takes at least 3 bytes
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
		if t, src, err = getVarint(src[1:]); err != nil {
			return nil, err
		}
		if ns, src, err = getVarint(src); err != nil {
			return nil, err
		}
		if !x.add(id, d, t, ns) {
			return nil, fmt.Errorf("%w: duplicate timer", ErrData)
		}
	}
	return src, nil
}

func (x *timers) bytes() int64 {
	return int64(cap(x.key))*4 + int64(cap(x.dom)) + int64(cap(x.time)+cap(x.ns))*8 +
		int64(cap(x.next)+cap(x.prev)+cap(x.pos)+cap(x.head))*4 + x.index.Bytes() +
		int64(cap(x.heaps[0])+cap(x.heaps[1]))*4
}
