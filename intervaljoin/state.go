package intervaljoin

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// joinKeys is the per-key state of an IntervalJoin (an engine.PerKey): each key's two caches
// (with the rows' fired bits under early fire), its two cleanup times and, with processing-time
// early fire on a row-time join, what its processing-time timers fire. The timers themselves
// are the KeyedState's (engine.TimerService), which saves them with the key.
//
// Payload of a key (after the KeyedState's key bytes and timers), layout 2 (stateVersion):
//
//	flags byte: 1 left cache present, 2 right cache present, 4 left cleanup time set,
//	            8 right cleanup time set, 16 processing-time early-fire schedule present
//	left cleanup time, right cleanup time (varint, when set)
//	per present cache, left first: uvarint bucket count, then per bucket in iteration order its
//	    time (varint), uvarint row count, per row its flags byte (1 matched, 2 fired: the row's
//	    early-fire pad was emitted), uvarint length and encoded row; a row count of 0 is the
//	    time of rows not stored (a key that can never match, docs/operators/interval-join.md#null-keys)
//	with flag 16: per side, left first, uvarint schedule entry count, per entry its timer's
//	    time (varint), uvarint count and the bucket times it fires (varint)
//
// Layout 1 held the key's timers here, after the caches (the KeyedState held none); its
// snapshots are refused by name (layout1Advice).
//
// Payloads of joins without early fire have no fired flag and no flag 16 and restore with every
// bit false. A join without early fire drops the fired bits it restores, and a row-time join that
// is not crossDomain the processing-time part, schedule and timers (Flink's state is bound to the
// hint of the running job).
//
// A cache restores as Flink's heap backend restores a MapState: a map created for its size,
// filled in the saved iteration order.
type joinKeys struct {
	j *IntervalJoin
	k []keyState
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

// stateVersion numbers the form of the join's payload (engine.StateConfig.Version): 2 since the
// timers moved into the KeyedState.
const stateVersion = 2

// layout1Advice ends the refusal of a snapshot of layout 1.
const layout1Advice = "restore the job with the library that wrote it and stop it with a savepoint, which holds the interval join's state in Flink's form, " +
	"then resume from that savepoint with this library (docs/state.md, \"Formats\"); a join with EARLY_FIRE has no such form"

// keyState is the state of one key.
type keyState struct {
	left, right   *bucketMap // nil: absent (Flink's MapState has no map for the key)
	leftTimer     int64      // Flink's IntervalJoinLeftTimerState: cleans the right cache
	rightTimer    int64      // IntervalJoinRightTimerState: cleans the left cache
	hasLeftTimer  bool
	hasRightTimer bool
	// crossDomain early fire: per side (left, right) which bucket times each processing-time
	// timer fires.
	sched [2][]scheduled
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

// Grow implements engine.PerKey.
func (s *joinKeys) Grow(n int) {
	for len(s.k) < n {
		s.k = append(s.k, keyState{})
	}
}

// Reset implements engine.PerKey.
func (s *joinKeys) Reset(id int32) {
	s.dropMap(s.k[id].left)
	s.dropMap(s.k[id].right)
	s.k[id] = keyState{}
}

// bucketAt returns the bucket of time t in map m, inserting an empty one if there is none.
func (s *joinKeys) bucketAt(m *bucketMap, t int64) *bucket {
	b := getBucket(m, t)
	if b == nil {
		x := &bucket{}
		if n := len(s.freeBuckets); n > 0 {
			x = s.freeBuckets[n-1]
			s.freeBuckets = s.freeBuckets[:n-1]
		}
		b = insertBucket(m, x, t)
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
	m.Remove(b)
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
	m.Each(func(b *bucket) { s.bytes -= bucketCost(b) })
	// An empty map of the default capacity is a new HashMap after its first insertion.
	if len(s.freeMaps) < maxFree && m.Recycle() {
		s.freeMaps = append(s.freeMaps, m)
	}
}

// Bytes implements engine.PerKey: an estimate of the per-key states, caches and rows, without a
// pass over them (the KeyedState counts the timers).
func (s *joinKeys) Bytes() int64 { return int64(cap(s.k))*int64(unsafe.Sizeof(keyState{})) + s.bytes }

// Save implements engine.PerKey.
func (s *joinKeys) Save(dst []byte, id int32) []byte {
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
	procPart := len(ks.sched[0]) > 0 || len(ks.sched[1]) > 0
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
		dst = binary.AppendUvarint(dst, uint64(m.Len()))
		m.Each(func(b *bucket) {
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
		})
	}
	if procPart {
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
	if flags&16 != 0 {
		var sched [2][]scheduled
		for side := range 2 {
			if sched[side], src, err = loadSchedule(src); err != nil {
				return nil, err
			}
		}
		if s.j.crossDomain {
			ks.sched = sched
		}
	}
	if s.j.rowtime && !s.j.crossDomain {
		s.dropProcessingTimers(id)
	}
	return src, nil
}

// dropProcessingTimers deletes the restored processing-time timers of key id: a row-time join
// without processing-time early fire has none.
func (s *joinKeys) dropProcessingTimers(id int32) {
	ts := s.j.timers
	var times []int64
	ts.Each(id, func(t engine.Timer) {
		if t.Domain == engine.ProcessingTime {
			times = append(times, t.Time)
		}
	})
	for _, t := range times {
		ts.Delete(engine.ProcessingTime, id, t, 0)
	}
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
	m = newMapWithExpectedSize(int(n))
	for range n {
		var t int64
		if t, src, err = varint(src); err != nil {
			return nil, nil, err
		}
		if getBucket(m, t) != nil {
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

func varint(src []byte) (int64, []byte, error) { return joincore.Varint(src, errTruncated) }

func uvarint(src []byte) (uint64, []byte, error) { return joincore.Uvarint(src, errTruncated) }
