package joincore

import (
	"cmp"
	"slices"
)

// TimerQueue is the timers of one operator instance, kept exactly as the timer service of
// Flink's heap state backend keeps them (HeapPriorityQueueSet): one binary heap over the timers
// of every key, ordered by time alone, with Flink's sift-up and sift-down, so timers of equal
// time fire in the order Flink fires them, which depends on the history of additions and
// removals. A timer is (key, time, namespace), in one time domain.
//
// Registering a timer that exists changes nothing (the deduplication map of the set): the caller
// checks, against its key's own record of its timers, before it adds one. Positions are 1-based
// as in Flink's heap (QUEUE_HEAD_INDEX); heap[0] is unused. The heap keeps no position index
// (updating one per sift step cost more than the rest of the join); snapshots, which need the
// positions, build one once per state of the heap (position).
//
// Restore: Flink re-adds the timers of a snapshot key group by key group, in ascending order,
// and within a key group in the heap array order of the snapshot (HeapPriorityQueueStateSnapshot
// partitions the array stably). A snapshot therefore records each timer's position, and restore
// re-adds them in that order (SortRestored).
type TimerQueue struct {
	heap []Timer
	// pos maps each timer to its position in heap, built by position; nil whenever the heap
	// changed since.
	pos map[Timer]int32
}

// Timer is one timer: a time in milliseconds, a key id of the operator's KeyedState and the
// operator's namespace (the window join's window end; 0 for the interval join).
type Timer struct {
	Time int64
	NS   int64
	Key  int32
}

func NewTimerQueue() *TimerQueue {
	return &TimerQueue{heap: make([]Timer, 1)}
}

// Len is the number of timers.
func (q *TimerQueue) Len() int { return len(q.heap) - 1 }

// Add registers a timer that is not registered.
func (q *TimerQueue) Add(e Timer) {
	q.pos = nil
	q.heap = append(q.heap, e)
	q.siftUp(len(q.heap) - 1)
}

// Peek returns the head timer.
func (q *TimerQueue) Peek() (Timer, bool) {
	if len(q.heap) < 2 {
		return Timer{}, false
	}
	return q.heap[1], true
}

// Poll removes the head timer (HeapPriorityQueue.removeInternal(1)).
func (q *TimerQueue) Poll() Timer {
	head := q.heap[1]
	last := len(q.heap) - 1
	q.pos = nil
	if last != 1 {
		q.move(q.heap[last], 1)
		q.heap = q.heap[:last]
		q.adjust(1)
	} else {
		q.heap = q.heap[:last]
	}
	return head
}

// Position returns the heap position of a registered timer.
func (q *TimerQueue) Position(e Timer) (int32, bool) {
	if q.pos == nil {
		q.pos = make(map[Timer]int32, len(q.heap))
		for i, t := range q.heap[1:] {
			q.pos[t] = int32(i + 1)
		}
	}
	p, ok := q.pos[e]
	return p, ok
}

func (q *TimerQueue) move(e Timer, i int) { q.heap[i] = e }

// adjust is HeapPriorityQueue.adjustElementAtIndex.
func (q *TimerQueue) adjust(i int) {
	e := q.heap[i]
	q.siftDown(i)
	if q.heap[i] == e {
		q.siftUp(i)
	}
}

func (q *TimerQueue) siftUp(i int) {
	cur := q.heap[i]
	parent := i >> 1
	for parent > 0 && cur.Time < q.heap[parent].Time {
		q.move(q.heap[parent], i)
		i = parent
		parent >>= 1
	}
	q.move(cur, i)
}

func (q *TimerQueue) siftDown(i int) {
	size := len(q.heap) - 1
	cur := q.heap[i]
	first := i << 1
	second := first + 1
	if second <= size && q.heap[second].Time < q.heap[first].Time {
		first = second
	}
	for first <= size && q.heap[first].Time < cur.Time {
		q.move(q.heap[first], i)
		i = first
		first = i << 1
		second = first + 1
		if second <= size && q.heap[second].Time < q.heap[first].Time {
			first = second
		}
	}
	q.move(cur, i)
}

func (q *TimerQueue) Bytes() int64 { return int64(cap(q.heap)) * 24 }

// RestoredTimer is a timer read from a snapshot, with the key group of its key and its position
// in the snapshot's heap.
type RestoredTimer struct {
	KeyGroup int
	Pos      uint64
	Timer    Timer
}

// SortRestored orders restored timers as Flink's heap backend re-adds the timers of a snapshot:
// key group by key group in ascending order, each in its saved heap order. Adding them to a
// TimerQueue in this order rebuilds Flink's heap.
func SortRestored(ts []RestoredTimer) {
	slices.SortStableFunc(ts, func(a, b RestoredTimer) int {
		if a.KeyGroup != b.KeyGroup {
			return a.KeyGroup - b.KeyGroup
		}
		return cmp.Compare(a.Pos, b.Pos)
	})
}
