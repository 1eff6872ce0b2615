package intervaljoin

import (
	"cmp"

	"github.com/ferrystream/ferry/internal/javamap"
)

// bucketMap is one key's row cache of one side, keyed by row time: Flink's
// MapState<Long, List<Tuple2<RowData, Boolean>>> on the heap state backend, which is a
// java.util.HashMap<Long, ...>. Flink's join iterates the whole map on every arriving row and on
// every cleanup timer and emits in iteration order, so bucketMap is javamap's reproduction of
// HashMap, operation for operation. Entries are only ever removed through an iterator (Flink's
// join does): Remove, never RemoveKey.
//
// A bucketMap is owned by one key's keyState; its buckets are owned by the map.
type bucketMap = javamap.Map[int64, bucket, *bucket]

// bucket holds the rows of one side with one row time, in arrival order, each with Flink's
// "emitted" flag (the row joined at least once; kept only where it decides padding). It is
// also its HashMap node.
type bucket struct {
	e       javamap.Entry[bucket]
	time    int64
	rows    [][]byte // encoded rows (rowLayout), owned by the bucket
	matched []bool
	// fired is Flink's IntervalJoinLeftFired / IntervalJoinRightFired list, aligned with rows
	// when early fire is enabled (nil otherwise): the row's early-fire pad was emitted.
	fired []bool
	// The first row's storage (most buckets hold one row): rows, matched and fired start on these.
	row0     [1][]byte
	matched0 [1]bool
	fired0   [1]bool
}

func (b *bucket) Entry() *javamap.Entry[bucket] { return &b.e }
func (b *bucket) KeyEquals(t int64) bool        { return b.time == t }
func (b *bucket) Compare(o *bucket) int         { return cmp.Compare(b.time, o.time) } // Long.compareTo

// getBucket returns the bucket of time t in m, or nil.
func getBucket(m *bucketMap, t int64) *bucket { return m.Get(t, javamap.LongHashCode(t)) }

// insertBucket links x, a zero bucket, into m as the bucket of time t, which must be absent.
func insertBucket(m *bucketMap, x *bucket, t int64) *bucket {
	x.time = t
	m.Insert(x, javamap.LongHashCode(t))
	return x
}

// newMapWithExpectedSize is the map Flink's MapSerializer.deserialize builds for n entries.
func newMapWithExpectedSize(n int) *bucketMap { return javamap.WithExpectedSize[int64, bucket](n) }
