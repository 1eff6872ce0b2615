package intervaljoin

// timerQueue is the cleanup timers of one operator instance, kept exactly as the timer service
// of Flink's heap state backend keeps them (HeapPriorityQueueSet): one binary heap over the
// timers of every key, ordered by time alone, with Flink's sift-up and sift-down, so timers of
// equal time fire in the order Flink fires them, which depends on the history of additions and
// removals. A timer is (key, time): the join's timers have no namespace and one time domain.
//
// Registering a timer that exists changes nothing (the deduplication map of the set): the caller
// checks, against its key's timers (keyState.timers), before it adds one. Positions are 1-based
// as in Flink's heap (QUEUE_HEAD_INDEX); heap[0] is unused. The heap keeps no position index
// (updating one per sift step cost more than the rest of the join); snapshots, which need the
// positions, build one once per state of the heap (position).
//
// Restore: Flink re-adds the timers of a snapshot key group by key group, in ascending order,
// and within a key group in the heap array order of the snapshot (HeapPriorityQueueStateSnapshot
// partitions the array stably). A snapshot therefore records each timer's position, and restore
// re-adds them in that order (restoreOrder).
type timerQueue struct {
	heap []timerEntry
	// pos maps each timer to its position in heap, built by position; nil whenever the heap
	// changed since.
	pos map[timerEntry]int32
}

// timerEntry is one timer: a key id of the operator's KeyedState and a time in milliseconds.
type timerEntry struct {
	time int64
	key  int32
}

func newTimerQueue() *timerQueue {
	return &timerQueue{heap: make([]timerEntry, 1)}
}

// len is the number of timers.
func (q *timerQueue) len() int { return len(q.heap) - 1 }

// add registers a timer that is not registered.
func (q *timerQueue) add(e timerEntry) {
	q.pos = nil
	q.heap = append(q.heap, e)
	q.siftUp(len(q.heap) - 1)
}

// peek returns the head timer.
func (q *timerQueue) peek() (timerEntry, bool) {
	if len(q.heap) < 2 {
		return timerEntry{}, false
	}
	return q.heap[1], true
}

// poll removes the head timer (HeapPriorityQueue.removeInternal(1)).
func (q *timerQueue) poll() timerEntry {
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

// position returns the heap position of a registered timer.
func (q *timerQueue) position(e timerEntry) (int32, bool) {
	if q.pos == nil {
		q.pos = make(map[timerEntry]int32, len(q.heap))
		for i, t := range q.heap[1:] {
			q.pos[t] = int32(i + 1)
		}
	}
	p, ok := q.pos[e]
	return p, ok
}

func (q *timerQueue) move(e timerEntry, i int) { q.heap[i] = e }

// adjust is HeapPriorityQueue.adjustElementAtIndex.
func (q *timerQueue) adjust(i int) {
	e := q.heap[i]
	q.siftDown(i)
	if q.heap[i] == e {
		q.siftUp(i)
	}
}

func (q *timerQueue) siftUp(i int) {
	cur := q.heap[i]
	parent := i >> 1
	for parent > 0 && cur.time < q.heap[parent].time {
		q.move(q.heap[parent], i)
		i = parent
		parent >>= 1
	}
	q.move(cur, i)
}

func (q *timerQueue) siftDown(i int) {
	size := len(q.heap) - 1
	cur := q.heap[i]
	first := i << 1
	second := first + 1
	if second <= size && q.heap[second].time < q.heap[first].time {
		first = second
	}
	for first <= size && q.heap[first].time < cur.time {
		q.move(q.heap[first], i)
		i = first
		first = i << 1
		second = first + 1
		if second <= size && q.heap[second].time < q.heap[first].time {
			first = second
		}
	}
	q.move(cur, i)
}

func (q *timerQueue) bytes() int64 { return int64(cap(q.heap)) * 16 }
