package intervaljoin

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// joinKeys is the per-key state of an IntervalJoin (an engine.PerKey): each key's two caches
// (with the rows' fired bits under early fire), its two cleanup times, the times of its
// registered timers and, with processing-time early fire on a row-time join, its
// processing-time timers and what they fire.
//
// Payload of a key (after the KeyedState's key bytes):
//
//	flags byte: 1 left cache present, 2 right cache present, 4 left cleanup time set,
//	            8 right cleanup time set, 16 processing-time early-fire part present
//	left cleanup time, right cleanup time (varint, when set)
//	per present cache, left first: uvarint bucket count, then per bucket in iteration order its
//	    time (varint), uvarint row count, per row its flags byte (1 matched, 2 fired: the row's
//	    early-fire pad was emitted), uvarint length and encoded row; a row count of 0 is the
//	    time of rows not stored (a key that can never match, docs/operators/interval-join.md#null-keys)
//	uvarint timer count, per timer its time (varint) and its position in the timer heap
//	    (uvarint), which orders the timers' re-registration on restore
//	with flag 16: uvarint processing-time timer count, per timer its time (varint) and heap
//	    position (uvarint); then per side, left first, uvarint schedule entry count, per entry
//	    its timer's time (varint), uvarint count and the bucket times it fires (varint)
//
// Payloads of joins without early fire have no fired flag and no flag 16 and restore with every
// bit false. A join without early fire drops the fired bits it restores, and a join that is not
// crossDomain the processing-time part (Flink's state is bound to the hint of the running job).
//
// A cache restores as Flink's heap backend restores a MapState: a map created for its size,
// filled in the saved iteration order.
type joinKeys struct {
	j *IntervalJoin
	k []keyState
	// unsettled counts keys with restored timers not yet registered (settle).
	unsettled int
	// bytes estimates the memory of every cache (buckets and rows), kept up to date by addRow,
	// removeBucket and dropMap so Bytes costs nothing.
	bytes int64
	// Removed buckets and dropped empty maps of the default capacity, zeroed, for reuse: most
	// buckets and maps live for the join's window only, and allocating them was the join's
	// largest cost after its timers. At most maxFree of each.
	freeBuckets []*bucket
	freeMaps    []*bucketMap
}

const maxFree = 4096

// newMap returns an empty map, as `new HashMap<>()`.
func (s *joinKeys) newMap() *bucketMap {
	if n := len(s.freeMaps); n > 0 {
		m := s.freeMaps[n-1]
		s.freeMaps = s.freeMaps[:n-1]
		return m
	}
	return &bucketMap{}
}

// Memory estimates: a bucket node with its slices, one without rows (the time of rows not
// stored), a row beyond its encoded bytes.
const (
	bucketBytes     = 160
	timeBucketBytes = 120
	rowOverhead     = 25
)

// keyState is the state of one key.
type keyState struct {
	left, right   *bucketMap // nil: absent (Flink's MapState has no map for the key)
	leftTimer     int64      // Flink's IntervalJoinLeftTimerState: cleans the right cache
	rightTimer    int64      // IntervalJoinRightTimerState: cleans the left cache
	hasLeftTimer  bool
	hasRightTimer bool
	timers        []int64         // times of this key's timers in the timer queue
	restored      []restoredTimer // timers read by Load or imported, registered by settle
	// importedTimers: restored came from Flink's timer queue (ImportState), whose positions
	// order the timers of all key groups together.
	importedTimers bool
	// crossDomain early fire: the times of this key's timers in procTimers, those read by Load
	// (registered by settle), and per side (left, right) which bucket times each fires.
	procTimers   []int64
	restoredProc []restoredTimer
	sched        [2][]scheduled
}

// scheduled is one processing-time early-fire timer's work on one side: Flink's
// IntervalJoinLeftEarlyFireSchedule / IntervalJoinRightEarlyFireSchedule entry fire time ->
// row times.
type scheduled struct {
	at    int64   // the timer's time
	times []int64 // bucket times, in the order scheduled, each once
}

// schedule records that the processing-time timer at fires bucket t of side.
func (ks *keyState) schedule(side int, at, t int64) {
	es := ks.sched[side]
	for i := range es {
		if es[i].at == at {
			if !slices.Contains(es[i].times, t) {
				es[i].times = append(es[i].times, t)
			}
			return
		}
	}
	ks.sched[side] = append(es, scheduled{at: at, times: []int64{t}})
}

// unschedule removes and returns the bucket times the timer at fires on side.
func (ks *keyState) unschedule(side int, at int64) []int64 {
	es := ks.sched[side]
	for i := range es {
		if es[i].at == at {
			times := es[i].times
			ks.sched[side] = slices.Delete(es, i, i+1)
			return times
		}
	}
	return nil
}

type restoredTimer struct {
	time int64
	pos  uint64
}

// Grow implements engine.PerKey.
func (s *joinKeys) Grow(n int) {
	for len(s.k) < n {
		s.k = append(s.k, keyState{})
	}
}

// Reset implements engine.PerKey.
func (s *joinKeys) Reset(id int32) {
	if len(s.k[id].restored) > 0 || len(s.k[id].restoredProc) > 0 {
		s.unsettled--
	}
	s.dropMap(s.k[id].left)
	s.dropMap(s.k[id].right)
	s.k[id] = keyState{}
}

// bucketAt returns the bucket of time t in map m, inserting an empty one if there is none.
func (s *joinKeys) bucketAt(m *bucketMap, t int64) *bucket {
	b := m.get(t)
	if b == nil {
		x := &bucket{}
		if n := len(s.freeBuckets); n > 0 {
			x = s.freeBuckets[n-1]
			s.freeBuckets = s.freeBuckets[:n-1]
		}
		b = m.insertNode(x, t)
		s.bytes += timeBucketBytes
	}
	return b
}

// addRow appends a row to a bucket, with its fired bit when early fire is enabled.
func (s *joinKeys) addRow(b *bucket, row []byte, matched, fired bool) {
	if len(b.rows) == 0 {
		s.bytes += bucketBytes - timeBucketBytes
		b.rows, b.matched = b.row0[:0], b.matched0[:0]
		if s.j.earlyFire {
			b.fired = b.fired0[:0]
		}
	}
	b.rows = append(b.rows, row)
	b.matched = append(b.matched, matched)
	if s.j.earlyFire {
		b.fired = append(b.fired, fired)
	}
	s.bytes += int64(len(row)) + rowOverhead
}

// bucketCost is the memory estimate of bucket b with its rows.
func bucketCost(b *bucket) int64 {
	if len(b.rows) == 0 {
		return timeBucketBytes
	}
	n := int64(bucketBytes)
	for _, r := range b.rows {
		n += int64(len(r)) + rowOverhead
	}
	return n
}

// removeBucket removes bucket b from map m. b may be reused by the next bucketAt: the caller
// keeps no use of it (iterating past it is fine).
func (s *joinKeys) removeBucket(m *bucketMap, b *bucket) {
	m.remove(b)
	s.bytes -= bucketCost(b)
	if len(s.freeBuckets) < maxFree {
		*b = bucket{}
		s.freeBuckets = append(s.freeBuckets, b)
	}
}

// dropMap forgets the memory of map m (nil: none), which its owner drops.
func (s *joinKeys) dropMap(m *bucketMap) {
	if m == nil {
		return
	}
	for _, head := range m.tab {
		for b := head; b != nil; b = b.next {
			s.bytes -= bucketCost(b)
		}
	}
	// An empty map of the default capacity is a new HashMap after its first insertion: its
	// table (all bins empty, none a tree) and threshold are what that insertion makes them.
	if m.size == 0 && len(m.tab) == defaultCapacity && len(s.freeMaps) < maxFree {
		m.threshold, m.only = int(defaultCapacity*0.75), nil
		s.freeMaps = append(s.freeMaps, m)
	}
}

// Bytes implements engine.PerKey: an estimate of the per-key states, caches, rows and timers,
// without a pass over them.
func (s *joinKeys) Bytes() int64 {
	n := int64(cap(s.k))*96 + s.bytes + s.j.timers.Bytes()
	if s.j.procTimers != nil {
		n += s.j.procTimers.Bytes()
	}
	return n
}

// dropTime removes time t from a key's list of timer times (a polled timer).
func dropTime(times *[]int64, t int64) {
	if i := slices.Index(*times, t); i >= 0 {
		*times = slices.Delete(*times, i, i+1)
	}
}

// Save implements engine.PerKey.
func (s *joinKeys) Save(dst []byte, id int32) []byte {
	s.settle()
	ks := &s.k[id]
	var flags byte
	if ks.left != nil {
		flags |= 1
	}
	if ks.right != nil {
		flags |= 2
	}
	if ks.hasLeftTimer {
		flags |= 4
	}
	if ks.hasRightTimer {
		flags |= 8
	}
	procPart := len(ks.procTimers) > 0 || len(ks.sched[0]) > 0 || len(ks.sched[1]) > 0
	if procPart {
		flags |= 16
	}
	dst = append(dst, flags)
	if ks.hasLeftTimer {
		dst = binary.AppendVarint(dst, ks.leftTimer)
	}
	if ks.hasRightTimer {
		dst = binary.AppendVarint(dst, ks.rightTimer)
	}
	for _, m := range []*bucketMap{ks.left, ks.right} {
		if m == nil {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(m.size))
		for _, head := range m.tab {
			for b := head; b != nil; b = b.next {
				dst = binary.AppendVarint(dst, b.time)
				dst = binary.AppendUvarint(dst, uint64(len(b.rows)))
				for i, r := range b.rows {
					var f byte
					if b.matched[i] {
						f = 1
					}
					if b.firedAt(i) {
						f |= 2
					}
					dst = append(dst, f)
					dst = binary.AppendUvarint(dst, uint64(len(r)))
					dst = append(dst, r...)
				}
			}
		}
	}
	dst = appendTimers(dst, s.j.timers, ks.timers, id)
	if procPart {
		dst = appendTimers(dst, s.j.procTimers, ks.procTimers, id)
		for _, es := range ks.sched {
			dst = binary.AppendUvarint(dst, uint64(len(es)))
			for _, e := range es {
				dst = binary.AppendVarint(dst, e.at)
				dst = binary.AppendUvarint(dst, uint64(len(e.times)))
				for _, t := range e.times {
					dst = binary.AppendVarint(dst, t)
				}
			}
		}
	}
	return dst
}

// appendTimers appends the count of times, then each time and its position in q (key id's
// timers).
func appendTimers(dst []byte, q *joincore.TimerQueue, times []int64, id int32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(times)))
	for _, t := range times {
		pos, _ := q.Position(joincore.Timer{Time: t, Key: id})
		dst = binary.AppendVarint(dst, t)
		dst = binary.AppendUvarint(dst, uint64(pos))
	}
	return dst
}

var errTruncated = fmt.Errorf("%w: interval join state truncated", engine.ErrData)

// Load implements engine.PerKey.
func (s *joinKeys) Load(src []byte, id int32) ([]byte, error) {
	ks := &s.k[id]
	if len(src) == 0 {
		return nil, errTruncated
	}
	flags := src[0]
	src = src[1:]
	if flags&^31 != 0 {
		return nil, fmt.Errorf("%w: interval join state flags %#x", engine.ErrData, flags)
	}
	var err error
	if flags&4 != 0 {
		if ks.leftTimer, src, err = varint(src); err != nil {
			return nil, err
		}
		ks.hasLeftTimer = true
	}
	if flags&8 != 0 {
		if ks.rightTimer, src, err = varint(src); err != nil {
			return nil, err
		}
		ks.hasRightTimer = true
	}
	// Rows of a key that can never match are kept only on a padded side (they are padded later,
	// also with emitNullKeys, which pads only rows arriving from now on).
	joins := s.j.joinable(s.j.state.Key(id))
	for side := range 2 {
		if flags&(1<<side) == 0 {
			continue
		}
		keep := joins || s.j.padded(side)
		var m *bucketMap
		if m, src, err = s.loadMap(src, s.j.layouts[side], keep); err != nil {
			return nil, err
		}
		if side == 0 {
			ks.left = m
		} else {
			ks.right = m
		}
	}
	if ks.restored, src, err = loadTimers(src); err != nil {
		return nil, err
	}
	if flags&16 != 0 {
		var proc []restoredTimer
		if proc, src, err = loadTimers(src); err != nil {
			return nil, err
		}
		var sched [2][]scheduled
		for side := range 2 {
			if sched[side], src, err = loadSchedule(src); err != nil {
				return nil, err
			}
		}
		if s.j.crossDomain {
			ks.restoredProc, ks.sched = proc, sched
		}
	}
	if len(ks.restored) > 0 || len(ks.restoredProc) > 0 {
		s.unsettled++
	}
	return src, nil
}

// loadTimers reads a list of timers that appendTimers wrote.
func loadTimers(src []byte) (ts []restoredTimer, _ []byte, err error) {
	n, src, err := uvarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(src))/2 {
		return nil, nil, fmt.Errorf("%w: timer count %d out of range", engine.ErrData, n)
	}
	for range n {
		var rt restoredTimer
		if rt.time, src, err = varint(src); err != nil {
			return nil, nil, err
		}
		if rt.pos, src, err = uvarint(src); err != nil {
			return nil, nil, err
		}
		if slices.ContainsFunc(ts, func(o restoredTimer) bool { return o.time == rt.time }) {
			return nil, nil, fmt.Errorf("%w: duplicate timer", engine.ErrData)
		}
		ts = append(ts, rt)
	}
	return ts, src, nil
}

// loadSchedule reads one side's processing-time early-fire schedule.
func loadSchedule(src []byte) (es []scheduled, _ []byte, err error) {
	n, src, err := uvarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(src))/2 {
		return nil, nil, fmt.Errorf("%w: schedule entry count %d out of range", engine.ErrData, n)
	}
	for range n {
		var e scheduled
		if e.at, src, err = varint(src); err != nil {
			return nil, nil, err
		}
		var m uint64
		if m, src, err = uvarint(src); err != nil {
			return nil, nil, err
		}
		if m == 0 || m > uint64(len(src)) {
			return nil, nil, fmt.Errorf("%w: schedule entry of %d bucket times", engine.ErrData, m)
		}
		for range m {
			var t int64
			if t, src, err = varint(src); err != nil {
				return nil, nil, err
			}
			e.times = append(e.times, t)
		}
		es = append(es, e)
	}
	return es, src, nil
}

// loadMap reads one cache; keep false drops its rows (a snapshot taken before Ferry stopped
// storing the rows of keys that can never match), keeping their times.
func (s *joinKeys) loadMap(src []byte, layout *joincore.RowLayout, keep bool) (_ *bucketMap, _ []byte, err error) {
	var m *bucketMap
	defer func() {
		if err != nil {
			s.dropMap(m) // its rows were counted
		}
	}()
	n, src, err := uvarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(src))/2 {
		return nil, nil, fmt.Errorf("%w: bucket count %d out of range", engine.ErrData, n)
	}
	m = newBucketMapWithExpectedSize(int(n))
	for range n {
		var t int64
		if t, src, err = varint(src); err != nil {
			return nil, nil, err
		}
		if m.get(t) != nil {
			return nil, nil, fmt.Errorf("%w: duplicate bucket time %d", engine.ErrData, t)
		}
		var rows uint64
		if rows, src, err = uvarint(src); err != nil {
			return nil, nil, err
		}
		if rows > uint64(len(src))/2 {
			return nil, nil, fmt.Errorf("%w: bucket row count %d out of range", engine.ErrData, rows)
		}
		b := s.bucketAt(m, t)
		for range rows {
			if len(src) == 0 || src[0] > 3 {
				return nil, nil, fmt.Errorf("%w: row flags invalid or missing", engine.ErrData)
			}
			matched, fired := src[0]&1 != 0, src[0]&2 != 0
			var size uint64
			if size, src, err = uvarint(src[1:]); err != nil {
				return nil, nil, err
			}
			if size > uint64(len(src)) {
				return nil, nil, errTruncated
			}
			row := slices.Clone(src[:size])
			src = src[size:]
			if err := layout.Check(row); err != nil {
				return nil, nil, err
			}
			if keep {
				s.addRow(b, row, matched, fired)
			}
		}
	}
	return m, src, nil
}

// settle registers the timers of restored keys, as Flink's restore adds the timers of its heap
// snapshot: key group by key group in ascending order, each in its saved heap order; each time
// domain's timers in their own queue.
func (s *joinKeys) settle() {
	if s.unsettled == 0 {
		return
	}
	var all, proc []joincore.RestoredTimer
	for id := range s.k {
		ks := &s.k[id]
		if len(ks.restored) == 0 && len(ks.restoredProc) == 0 {
			continue
		}
		kg := engine.KeyGroup(engine.HashRow(s.j.state.Key(int32(id))), s.j.maxParallelism)
		if ks.importedTimers {
			// Flink's restored heap, re-added in its array order, is rebuilt as it is: the
			// positions order the timers, not the key groups.
			kg, ks.importedTimers = 0, false
		}
		for _, r := range ks.restored {
			all = append(all, joincore.RestoredTimer{KeyGroup: kg, Pos: r.pos, Timer: joincore.Timer{Time: r.time, Key: int32(id)}})
		}
		for _, r := range ks.restoredProc {
			proc = append(proc, joincore.RestoredTimer{KeyGroup: kg, Pos: r.pos, Timer: joincore.Timer{Time: r.time, Key: int32(id)}})
		}
		ks.restored, ks.restoredProc = nil, nil
	}
	s.unsettled = 0
	joincore.SortRestored(all)
	for _, p := range all {
		s.j.registerTimer(p.Timer.Key, p.Timer.Time)
	}
	joincore.SortRestored(proc)
	for _, p := range proc {
		s.j.registerProcTimer(p.Timer.Key, p.Timer.Time)
	}
}

func varint(src []byte) (int64, []byte, error) { return joincore.Varint(src, errTruncated) }

func uvarint(src []byte) (uint64, []byte, error) { return joincore.Uvarint(src, errTruncated) }
