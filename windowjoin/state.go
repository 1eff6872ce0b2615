package windowjoin

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// joinKeys is the per-key state of a WindowJoin (an engine.PerKey): each key's open windows.
//
// Payload of a key (after the KeyedState's key bytes): uvarint window count, then per window
// its end (varint), its timer's position in the timer heap (uvarint; orders the timers'
// re-registration on restore), and per side, left first, uvarint row count and per row uvarint
// length and the row's bytes (Flink's BinaryRowData, as the host sent them).
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
	// unsettled counts restored windows whose timers are not yet registered (settle).
	unsettled int
	// live counts the windows and handles in use, for Bytes.
	liveWins, liveLinks int64
}

// window is one (key, window end): Flink's two list states under the window end as namespace
// and the window's timer.
type window struct {
	end        int64
	timer      int64    // the timer time of end
	pos        uint64   // the restored timer's saved heap position
	next       int32    // the key's next window, -1 for none
	head, tail [2]int32 // per side, the first and last link of its handles in arrival order; -1: none
	n          [2]int32 // per side, the number of handles
	registered bool     // the timer is in the queue (false only between Load and settle)
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
		if !w.registered {
			s.unsettled--
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

// window returns the index of key id's window ending at end, creating it with its timer time
// if absent (created). Indices stay valid until the window is removed; pointers into wins do
// not survive the creation of a window.
func (s *joinKeys) window(id int32, end, timer int64) (wi int32, created bool) {
	if wi := s.find(id, end); wi >= 0 {
		return wi, false
	}
	wi = take(&s.wins, &s.freeWin, func(w *window) int32 { return w.next })
	s.wins[wi] = window{end: end, timer: timer, next: -1, head: [2]int32{-1, -1}, tail: [2]int32{-1, -1}}
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

// Memory estimates: a window and a handle in use, beyond the pools.
const (
	windowBytes = 72
	linkBytes   = 16
)

// Bytes implements engine.PerKey: the pools, the key index and the timers, without a pass over
// them (the rows are the host's).
func (s *joinKeys) Bytes() int64 {
	return int64(cap(s.first))*4 + int64(cap(s.wins))*windowBytes + int64(cap(s.links))*linkBytes + s.j.timers.Bytes()
}

// Save implements engine.PerKey.
func (s *joinKeys) Save(dst []byte, id int32) []byte {
	s.settle()
	n := 0
	for wi := s.first[id]; wi >= 0; wi = s.wins[wi].next {
		n++
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	for wi := s.first[id]; wi >= 0; wi = s.wins[wi].next {
		w := &s.wins[wi]
		pos, _ := s.j.timers.Position(joincore.Timer{Time: w.timer, NS: w.end, Key: id})
		dst = binary.AppendVarint(dst, w.end)
		dst = binary.AppendUvarint(dst, uint64(pos))
		for side := range 2 {
			dst = binary.AppendUvarint(dst, uint64(w.n[side]))
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

// Load implements engine.PerKey. Each restored row gets the next negative handle and waits, in
// WindowJoin.restored, to be handed back to the host. Rows of a key that can never match are
// kept only on a preserved side (a snapshot may hold others: they would join nothing). A row's
// bytes are checked only for their length here; the host checks them as a BinaryRowData of its
// input's type when it takes them back.
func (s *joinKeys) Load(src []byte, id int32) ([]byte, error) {
	n, src, err := joincore.Uvarint(src, errTruncated)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(src))/4 {
		return nil, fmt.Errorf("%w: window count %d out of range", engine.ErrData, n)
	}
	joins := joincore.KeyJoins(s.j.state.Key(id), s.j.filterNulls)
	for range n {
		var end, timer int64
		var pos uint64
		if end, src, err = joincore.Varint(src, errTruncated); err != nil {
			return nil, err
		}
		if s.find(id, end) >= 0 {
			return nil, fmt.Errorf("%w: duplicate window end %d", engine.ErrData, end)
		}
		if timer, err = s.j.zone.timerTime(end); err != nil {
			return nil, err
		}
		if pos, src, err = joincore.Uvarint(src, errTruncated); err != nil {
			return nil, err
		}
		// The window joins the key before its rows load: should the payload fail part way, the
		// key's Reset drops the rows it restored so far.
		wi, _ := s.window(id, end, timer)
		s.wins[wi].pos = pos
		s.unsettled++
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

// settle registers the timers of restored windows in the order Flink's heap restore adds them
// (joincore.SortRestored).
func (s *joinKeys) settle() {
	if s.unsettled == 0 {
		return
	}
	var all []joincore.RestoredTimer
	for id := range s.first {
		for wi := s.first[id]; wi >= 0; wi = s.wins[wi].next {
			w := &s.wins[wi]
			if w.registered {
				continue
			}
			kg := engine.KeyGroup(engine.HashRow(s.j.state.Key(int32(id))), s.j.maxParallelism)
			all = append(all, joincore.RestoredTimer{KeyGroup: kg, Pos: w.pos, Timer: joincore.Timer{Time: w.timer, NS: w.end, Key: int32(id)}})
			w.registered = true
		}
	}
	s.unsettled = 0
	joincore.SortRestored(all)
	for _, t := range all {
		s.j.timers.Add(t.Timer)
	}
}
