package windowjoin

import (
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// joinKeys is the per-key state of a WindowJoin (an engine.PerKey): each key's open windows.
// Each window's timer is the KeyedState's (engine.TimerService: event time, at the window end's
// timer time, the end as namespace), which saves it with the key.
//
// Payload of a key (after the KeyedState's key bytes and timers), layout 2 (stateVersion):
// uvarint window count, then per window its end (varint) and per side, left first, uvarint row
// count and per row uvarint length and the row's bytes (Flink's BinaryRowData, as the host sent
// them). Layout 1 held each window's timer position after its end (the KeyedState held no
// timers); its snapshots are refused by name (layout1Advice).
type joinKeys struct {
	j *WindowJoin
	// first is, per key id, the index in wins of the key's first window (creation order), -1
	// for none: a key has few open windows (one for TUMBLE, size / slide for HOP, a few for
	// CUMULATE). Windows and handles live in pools of plain values linked by index, so opening a
	// window or adding a row allocates nothing once the pools are warm, and the garbage
	// collector has no pointers to follow.
	first    []int32
	wins     []window
	freeWin  int32 // the first free window of the pool, -1 for none
	links    []link
	freeLink int32 // the first free link of the pool, -1 for none
	// live counts the windows and handles in use, for Bytes.
	liveWins, liveLinks int64
}

// stateVersion numbers the form of the join's payload (engine.StateConfig.Version): 2 since the
// timers moved into the KeyedState.
const stateVersion = 2

// layout1Advice ends the refusal of a snapshot of layout 1.
const layout1Advice = "the window join's state has no form Flink's operator reads: stop the job with a drained savepoint (flink stop --drain), " +
	"which fires every open window first, or start it without state (docs/state.md, \"Formats\")"

// window is one (key, window end): Flink's two list states under the window end as namespace.
type window struct {
	end        int64
	next       int32    // the key's next window, -1 for none
	head, tail [2]int32 // per side, the first and last link of its handles in arrival order; -1: none
	n          [2]int32 // per side, the number of handles
}

// link is one handle of a window's side, and the next one (-1 for none); in the free list, the
// next free link.
type link struct {
	h    int64
	next int32
}

// Grow implements engine.PerKey.
func (s *joinKeys) Grow(n int) {
	if s.first == nil {
		s.freeWin, s.freeLink = -1, -1
	}
	for len(s.first) < n {
		s.first = append(s.first, -1)
	}
}

// Reset implements engine.PerKey: frees the key's windows and their handles; a restored row
// not yet handed back goes with them.
func (s *joinKeys) Reset(id int32) {
	for wi := s.first[id]; wi >= 0; {
		w := &s.wins[wi]
		next := w.next
		for side := range 2 {
			for li := w.head[side]; li >= 0; li = s.links[li].next {
				delete(s.j.restored[side], s.links[li].h)
			}
		}
		s.freeWindow(wi)
		wi = next
	}
	s.first[id] = -1
}

// find returns the index of key id's window ending at end, or -1.
func (s *joinKeys) find(id int32, end int64) int32 {
	for wi := s.first[id]; wi >= 0; wi = s.wins[wi].next {
		if s.wins[wi].end == end {
			return wi
		}
	}
	return -1
}

// window returns the index of key id's window ending at end, creating it if absent (created).
// Indices stay valid until the window is removed; pointers into wins do not survive the creation
// of a window.
func (s *joinKeys) window(id int32, end int64) (wi int32, created bool) {
	if wi := s.find(id, end); wi >= 0 {
		return wi, false
	}
	wi = take(&s.wins, &s.freeWin, func(w *window) int32 { return w.next })
	s.wins[wi] = window{end: end, next: -1, head: [2]int32{-1, -1}, tail: [2]int32{-1, -1}}
	s.liveWins++
	// append to the key's windows: creation order is the order Save writes
	if last := s.first[id]; last < 0 {
		s.first[id] = wi
	} else {
		for s.wins[last].next >= 0 {
			last = s.wins[last].next
		}
		s.wins[last].next = wi
	}
	return wi, true
}

// addRow appends handle h of a row of side to window wi.
func (s *joinKeys) addRow(wi int32, side int, h int64) {
	li := take(&s.links, &s.freeLink, func(l *link) int32 { return l.next })
	s.links[li] = link{h: h, next: -1}
	s.liveLinks++
	w := &s.wins[wi]
	if w.tail[side] < 0 {
		w.head[side] = li
	} else {
		s.links[w.tail[side]].next = li
	}
	w.tail[side] = li
	w.n[side]++
}

// take returns the index of an unused item of a pool: the head of its free list (free, linked
// through next; -1 for none), or a new item at the end.
func take[T any](items *[]T, free *int32, next func(*T) int32) int32 {
	if i := *free; i >= 0 {
		*free = next(&(*items)[i])
		return i
	}
	var zero T
	*items = append(*items, zero)
	return int32(len(*items) - 1)
}

// handles calls f with each handle of side of window wi, in arrival order.
func (s *joinKeys) handles(wi int32, side int, f func(h int64)) {
	for li := s.wins[wi].head[side]; li >= 0; li = s.links[li].next {
		f(s.links[li].h)
	}
}

// freeWindow returns window wi and its links to the pools.
func (s *joinKeys) freeWindow(wi int32) {
	w := &s.wins[wi]
	for side := range 2 {
		if w.head[side] >= 0 {
			s.links[w.tail[side]].next = s.freeLink
			s.freeLink = w.head[side]
			s.liveLinks -= int64(w.n[side])
		}
	}
	*w = window{next: s.freeWin}
	s.freeWin = wi
	s.liveWins--
}

// removeWindow drops window wi of key id.
func (s *joinKeys) removeWindow(id, wi int32) {
	if s.first[id] == wi {
		s.first[id] = s.wins[wi].next
	} else {
		prev := s.first[id]
		for s.wins[prev].next != wi {
			prev = s.wins[prev].next
		}
		s.wins[prev].next = s.wins[wi].next
	}
	s.freeWindow(wi)
}

// Bytes implements engine.PerKey: the pools and the key index, without a pass over them (the
// rows are the host's, the timers the KeyedState's).
func (s *joinKeys) Bytes() int64 {
	return int64(cap(s.first))*4 + int64(cap(s.wins))*int64(unsafe.Sizeof(window{})) + int64(cap(s.links))*int64(unsafe.Sizeof(link{}))
}

// Save implements engine.PerKey.
func (s *joinKeys) Save(dst []byte, id int32) []byte {
	n := 0
	for wi := s.first[id]; wi >= 0; wi = s.wins[wi].next {
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for wi := s.first[id]; wi >= 0; wi = s.wins[wi].next {
		dst = binary.AppendVarint(dst, s.wins[wi].end)
		for side := range 2 {
			dst = binary.AppendUvarint(dst, uint64(s.wins[wi].n[side]))
			s.handles(wi, side, func(h int64) {
				r, _ := s.j.rowBytes(side, h) // present: BeforeSnapshot checked every handle
				dst = binary.AppendUvarint(dst, uint64(len(r)))
				dst = append(dst, r...)
			})
		}
	}
	return dst
}

var errTruncated = fmt.Errorf("%w: window join state truncated", engine.ErrData)

// Load implements engine.PerKey. Every window must have its timer, and the key no other timer
// (the KeyedState loaded them). Each restored row gets the next negative handle and waits, in
// WindowJoin.restored, to be handed back to the host. Rows of a key that can never match are
// kept only on a preserved side (a snapshot may hold others: they would join nothing). A row's
// bytes are checked only for their length here; the host checks them as a BinaryRowData of its
// input's type when it takes them back.
func (s *joinKeys) Load(src []byte, id int32) ([]byte, error) {
	n, src, err := joincore.Uvarint(src, errTruncated)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(src))/3 { // every window takes at least 3 bytes
		return nil, fmt.Errorf("%w: window count %d out of range", engine.ErrData, n)
	}
	timers := 0
	s.j.timers.Each(id, func(engine.Timer) { timers++ })
	if uint64(timers) != n {
		return nil, fmt.Errorf("%w: %d windows with %d timers", engine.ErrData, n, timers)
	}
	joins := joincore.KeyJoins(s.j.state.Key(id), s.j.filterNulls)
	for range n {
		var end, timer int64
		if end, src, err = joincore.Varint(src, errTruncated); err != nil {
			return nil, err
		}
		if s.find(id, end) >= 0 {
			return nil, fmt.Errorf("%w: duplicate window end %d", engine.ErrData, end)
		}
		if timer, err = s.j.zone.TimerTime(end); err != nil {
			return nil, err
		}
		if !s.j.timers.Has(engine.EventTime, id, timer, end) {
			return nil, fmt.Errorf("%w: the window ending at %d has no timer at %d", engine.ErrData, end, timer)
		}
		// The window joins the key before its rows load: should the payload fail part way, the
		// key's Reset drops the rows it restored so far.
		wi, _ := s.window(id, end)
		for side := range 2 {
			var rows uint64
			if rows, src, err = joincore.Uvarint(src, errTruncated); err != nil {
				return nil, err
			}
			if rows > uint64(len(src)) {
				return nil, fmt.Errorf("%w: row count %d out of range", engine.ErrData, rows)
			}
			keep := joins || s.j.preserved(side)
			for range rows {
				var size uint64
				if size, src, err = joincore.Uvarint(src, errTruncated); err != nil {
					return nil, err
				}
				if size > uint64(len(src)) {
					return nil, errTruncated
				}
				row := slices.Clone(src[:size])
				src = src[size:]
				if keep {
					s.addRow(wi, side, s.j.restore(side, row))
				}
			}
		}
	}
	return src, nil
}
