package intervaljoin

import (
	"fmt"
	"math"
	"slices"

	"github.com/ferrystream/ferry/engine"
)

// model is a reference model of Flink 2.3's TimeIntervalJoin on the heap state backend, written
// from Flink's source independently of the operator: per key a map whose iteration order is
// computed from first principles (bins of the current capacity, then insertion order, which is
// what java.util.HashMap's list bins give; the scenarios never fill a bin far enough to make it a
// tree, which TestHashMapOrderVectors covers against the JDK), a transliterated timer heap, row
// at a time. Early fire follows Flink master's TimeIntervalJoin after FLINK-40171 (fired bits,
// the early-fire timer before the cleanup timer, early fire before cleanup in onTimer, -U/+U of
// a fired row's pad) and, for processing-time early fire on a row-time join, a second heap of
// processing-time timers with a per-key, per-side schedule fire time -> bucket times.
type model struct {
	leftOuter, rightOuter bool
	rowtime               bool
	leftRel, rightRel     int64
	minCleanUp, lateness  int64
	maxPar                int
	ef, cross             bool // early fire enabled; on processing time while the join is on row time
	delay                 int64
	pheap                 []mTimer // cross: the processing-time heap

	wm                int64
	leftExp, rightExp int64
	opTime            int64
	keys              map[string]*mKey
	heap              []mTimer // 1-based, Flink's HeapPriorityQueue
	seq               int
	out               []string
}

type mKey struct {
	key         string // encoded key bytes
	joinable    bool
	left, right *mMap
	lt, rt      *int64
	sched       [2]map[int64][]int64 // cross: per side, processing-time fire time -> bucket times
}

type mMap struct {
	cap     int // 0: not allocated; then initial holds the first capacity
	initial int
	entries []*mEntry
}

type mEntry struct {
	time    int64
	seq     int
	rows    []string
	matched []bool
	fired   []bool
}

type mTimer struct {
	time int64
	key  string
}

func newModel(p Params, maxPar int) *model {
	md := &model{
		leftOuter: p.JoinType == "LEFT" || p.JoinType == "FULL", rightOuter: p.JoinType == "RIGHT" || p.JoinType == "FULL",
		rowtime: p.TimeMode == "rowtime", leftRel: -p.LeftLowerBound, rightRel: p.LeftUpperBound,
		minCleanUp: max(0, p.MinCleanUpIntervalMs), lateness: p.AllowedLateness, maxPar: maxPar,
		wm: math.MinInt64, keys: map[string]*mKey{}, heap: make([]mTimer, 1), pheap: make([]mTimer, 1),
	}
	outer := md.leftOuter || md.rightOuter
	if p.EarlyFireDelayMs != nil && *p.EarlyFireDelayMs >= 0 && outer {
		md.ef, md.delay = true, *p.EarlyFireDelayMs
		md.cross = md.rowtime && p.EarlyFireTimeMode == "proctime"
	}
	return md
}

func modelBin(t int64, c int) int {
	h := int32(t ^ int64(uint64(t)>>32))
	h ^= int32(uint32(h) >> 16)
	return int(h) & (c - 1)
}

// order is the iteration order: by bin at the current capacity, then insertion order.
func (m *mMap) order() []*mEntry {
	o := slices.Clone(m.entries)
	slices.SortStableFunc(o, func(a, b *mEntry) int {
		if x, y := modelBin(a.time, m.cap), modelBin(b.time, m.cap); x != y {
			return x - y
		}
		return a.seq - b.seq
	})
	return o
}

func (m *mMap) find(t int64) *mEntry {
	for _, e := range m.entries {
		if e.time == t {
			return e
		}
	}
	return nil
}

func (md *model) put(m *mMap, t int64) *mEntry {
	if m.cap == 0 {
		m.cap = m.initial
		if m.cap == 0 {
			m.cap = 16
		}
	}
	md.seq++
	e := &mEntry{time: t, seq: md.seq}
	m.entries = append(m.entries, e)
	inBin := 0
	for _, o := range m.entries {
		if modelBin(o.time, m.cap) == modelBin(t, m.cap) {
			inBin++
		}
	}
	if inBin > 8 && m.cap < 64 {
		m.cap *= 2
	}
	if len(m.entries) > int(float32(m.cap)*0.75) {
		m.cap *= 2
	}
	return e
}

func (m *mMap) remove(t int64) {
	m.entries = slices.DeleteFunc(m.entries, func(e *mEntry) bool { return e.time == t })
}

func (md *model) exp(op, rel int64) int64 {
	if op < math.MaxInt64 {
		return op - rel - md.lateness - 1
	}
	return math.MaxInt64
}

func (md *model) updateTime(now int64) {
	if md.rowtime {
		md.opTime = max(md.wm, 0)
	} else {
		md.opTime = now
	}
}

func (md *model) emit(l, r string) { md.emitKind("+I", l, r) }

func (md *model) emitKind(kind, l, r string) {
	if l == "" {
		l = "null, null, null"
	}
	if r == "" {
		r = "null, null, null"
	}
	md.out = append(md.out, kind+"["+l+", "+r+"]")
}

// padRow emits row of side padded, as kind.
func (md *model) padRow(kind string, side int, row string) {
	if side == 0 {
		md.emitKind(kind, row, "")
	} else {
		md.emitKind(kind, "", row)
	}
}

// earlyFire pads the unmatched, unfired rows of bucket t of side's map m.
func (md *model) earlyFire(m *mMap, side int, t int64) {
	if m == nil {
		return
	}
	if e := m.find(t); e != nil {
		for i, r := range e.rows {
			if !e.matched[i] && !e.fired[i] {
				md.padRow("+I", side, r)
				e.fired[i] = true
			}
		}
	}
}

// element processes one row of side (0 left, 1 right) of key k at time t (rowtime).
func (md *model) element(side int, k *mKey, row string, t, now int64) {
	md.updateTime(now)
	if !md.rowtime {
		t = md.opTime
	}
	own, other := &k.left, &k.right
	ownRel, otherRel := md.leftRel, md.rightRel
	otherExp := &md.rightExp
	ownOuter, otherOuter := md.leftOuter, md.rightOuter
	otherTimer := &k.rt // the timer state a cached row of this side sets
	if side == 1 {
		own, other = &k.right, &k.left
		ownRel, otherRel = md.rightRel, md.leftRel
		otherExp = &md.leftExp
		ownOuter, otherOuter = md.rightOuter, md.leftOuter
		otherTimer = &k.lt
	}
	lo, hi := t-otherRel, t+ownRel
	emitted := false
	if *otherExp < hi {
		*otherExp = md.exp(md.opTime, otherRel)
		if *other != nil {
			for _, e := range (*other).order() {
				if e.time >= lo && e.time <= hi && k.joinable {
					for i, o := range e.rows {
						kind := "+I"
						if md.ef && otherOuter && !e.matched[i] && e.fired[i] {
							md.padRow("-U", 1-side, o)
							kind = "+U"
						}
						if side == 0 {
							md.emitKind(kind, row, o)
						} else {
							md.emitKind(kind, o, row)
						}
						emitted = true
						if otherOuter {
							e.matched[i] = true
						}
					}
				}
				if e.time <= *otherExp {
					if otherOuter {
						for i, o := range e.rows {
							if !e.matched[i] && !e.fired[i] {
								if side == 0 {
									md.emit("", o)
								} else {
									md.emit(o, "")
								}
							}
						}
					}
					(*other).remove(e.time)
				}
			}
		}
	}
	if md.opTime < hi {
		if *own == nil {
			*own = &mMap{}
		}
		e := (*own).find(t)
		if e == nil {
			e = md.put(*own, t)
		}
		e.rows = append(e.rows, row)
		e.matched = append(e.matched, emitted)
		e.fired = append(e.fired, false)
		if md.ef && ownOuter && !emitted {
			if md.cross {
				at := now + md.delay
				if k.sched[side] == nil {
					k.sched[side] = map[int64][]int64{}
				}
				if !slices.Contains(k.sched[side][at], t) {
					k.sched[side][at] = append(k.sched[side][at], t)
				}
				addTimer(&md.pheap, mTimer{at, k.key})
			} else {
				addTimer(&md.heap, mTimer{t + md.delay, k.key})
			}
		}
		if *otherTimer == nil {
			md.cleanUp(k, t, side == 0)
		}
	} else if !emitted && ownOuter {
		if side == 0 {
			md.emit(row, "")
		} else {
			md.emit("", row)
		}
	}
}

func (md *model) cleanUp(k *mKey, t int64, left bool) {
	if left {
		at := t + md.leftRel + md.minCleanUp + md.lateness + 1
		addTimer(&md.heap, mTimer{at, k.key})
		k.rt = &at
	} else {
		at := t + md.rightRel + md.minCleanUp + md.lateness + 1
		addTimer(&md.heap, mTimer{at, k.key})
		k.lt = &at
	}
}

func addTimer(hp *[]mTimer, t mTimer) {
	if slices.Contains((*hp)[1:], t) {
		return
	}
	*hp = append(*hp, t)
	h := *hp
	i := len(h) - 1
	for i > 1 && t.time < h[i/2].time {
		h[i] = h[i/2]
		i /= 2
	}
	h[i] = t
}

func pollTimer(hp *[]mTimer) mTimer {
	h := *hp
	head := h[1]
	last := len(h) - 1
	x := h[last]
	h = h[:last]
	*hp = h
	if last == 1 {
		return head
	}
	h[1] = x
	// siftDown, then siftUp if it did not move (adjustElementAtIndex)
	i := 1
	for {
		c := 2 * i
		if c+1 < len(h) && h[c+1].time < h[c].time {
			c++
		}
		if c >= len(h) || !(h[c].time < x.time) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
	return head
}

func (md *model) advance(wm, now int64) {
	upTo := now
	if md.rowtime {
		md.wm, upTo = wm, wm
	}
	for len(md.heap) > 1 && md.heap[1].time <= upTo {
		t := pollTimer(&md.heap)
		k := md.keys[t.key]
		md.updateTime(now)
		if md.ef && !md.cross {
			if md.leftOuter {
				md.earlyFire(k.left, 0, t.time-md.delay)
			}
			if md.rightOuter {
				md.earlyFire(k.right, 1, t.time-md.delay)
			}
		}
		if k.lt != nil && t.time == *k.lt {
			md.rightExp = md.exp(md.opTime, md.rightRel)
			md.expire(k, false)
		}
		if k.rt != nil && t.time == *k.rt {
			md.leftExp = md.exp(md.opTime, md.leftRel)
			md.expire(k, true)
		}
	}
}

// procAdvance fires the processing-time early-fire timers up to now (cross): each fires its
// scheduled buckets, the left side's first.
func (md *model) procAdvance(now int64) {
	for len(md.pheap) > 1 && md.pheap[1].time <= now {
		t := pollTimer(&md.pheap)
		k := md.keys[t.key]
		for side, m := range []*mMap{k.left, k.right} {
			times := k.sched[side][t.time]
			delete(k.sched[side], t.time)
			for _, rt := range times {
				md.earlyFire(m, side, rt)
			}
		}
	}
}

func (md *model) expire(k *mKey, left bool) {
	m, exp, pad := k.right, md.rightExp, md.rightOuter
	if left {
		m, exp, pad = k.left, md.leftExp, md.leftOuter
	}
	earliest := int64(-1)
	if m != nil {
		for _, e := range m.order() {
			if e.time <= exp {
				if pad {
					for i, r := range e.rows {
						if !e.matched[i] && !e.fired[i] {
							if left {
								md.emit(r, "")
							} else {
								md.emit("", r)
							}
						}
					}
				}
				m.remove(e.time)
			} else if e.time < earliest || earliest < 0 {
				earliest = e.time
			}
		}
	}
	switch {
	case earliest > 0:
		md.cleanUp(k, earliest, left)
	case left:
		k.rt, k.left = nil, nil
	default:
		k.lt, k.right = nil, nil
	}
}

// restore is what a snapshot and restore does to Flink's operator: maps rebuilt for their size
// in iteration order, timers re-added by key group and heap position, operator fields reset.
func (md *model) restore() {
	for _, k := range md.keys {
		for _, mp := range []**mMap{&k.left, &k.right} {
			if *mp == nil {
				continue
			}
			old := (*mp).order()
			n := len(old)
			c := n + 1
			if n > 2 {
				c = int(ceilFloat32(float32(n) / 0.75))
			}
			nm := &mMap{initial: tableSizeFor(c)}
			for _, e := range old {
				ne := md.put(nm, e.time)
				ne.rows, ne.matched, ne.fired = e.rows, e.matched, e.fired
			}
			*mp = nm
		}
	}
	type pt struct {
		kg, pos int
		t       mTimer
	}
	for _, hp := range []*[]mTimer{&md.heap, &md.pheap} {
		var all []pt
		for i, t := range (*hp)[1:] {
			all = append(all, pt{engine.KeyGroup(engine.HashRow([]byte(t.key)), md.maxPar), i, t})
		}
		slices.SortStableFunc(all, func(a, b pt) int {
			if a.kg != b.kg {
				return a.kg - b.kg
			}
			return a.pos - b.pos
		})
		*hp = (*hp)[:1]
		for _, p := range all {
			addTimer(hp, p.t)
		}
	}
	md.wm, md.leftExp, md.rightExp = math.MinInt64, 0, 0
}

func (k *mKey) String() string { return fmt.Sprintf("%x", k.key) }

// ceilFloat32 is Java's (float) Math.ceil; tableSizeFor is HashMap.tableSizeFor.
func ceilFloat32(f float32) float32 {
	if i := float32(int64(f)); i < f {
		return i + 1
	} else {
		return i
	}
}

func tableSizeFor(c int) int {
	n := 1
	for n < c {
		n <<= 1
	}
	return n
}
