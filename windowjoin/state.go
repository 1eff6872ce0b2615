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
	k []keyState
	// unsettled counts keys with restored timers not yet registered (settle).
	unsettled int
	// bytes estimates the memory of every window and row, kept up to date by window, addRow and
	// removeWindow so Bytes costs nothing.
	bytes int64
}

// Memory estimates: a window beyond its handles, a handle (the host holds the row).
const (
	windowBytes = 96
	handleBytes = 8
)

// keyState is the state of one key: its windows in creation order (a key has few open
// windows: one for TUMBLE, size / slide for HOP, a few for CUMULATE).
type keyState struct {
	wins []window
}

// window is one (key, window end): Flink's two list states under the window end as namespace
// and the window's timer.
type window struct {
	end        int64
	timer      int64      // the timer time of end
	handles    [2][]int64 // per side, the rows' handles in arrival order
	registered bool       // the timer is in the queue (false only between Load and settle)
	pos        uint64     // the restored timer's saved heap position
}

// Grow implements engine.PerKey.
func (s *joinKeys) Grow(n int) {
	for len(s.k) < n {
		s.k = append(s.k, keyState{})
	}
}

// Reset implements engine.PerKey.
func (s *joinKeys) Reset(id int32) {
	ks := &s.k[id]
	for i := range ks.wins {
		for side, hs := range ks.wins[i].handles {
			for _, h := range hs {
				delete(s.j.restored[side], h) // a restored row not yet handed back goes with its key
			}
		}
		s.bytes -= windowCost(&ks.wins[i])
		if !ks.wins[i].registered {
			s.unsettled-- // counts restored windows
		}
	}
	*ks = keyState{}
}

func (ks *keyState) find(end int64) int {
	for i := range ks.wins {
		if ks.wins[i].end == end {
			return i
		}
	}
	return -1
}

// window returns the index of key id's window ending at end, creating it with its timer time
// if absent (created). The index holds until a window of the key is removed.
func (s *joinKeys) window(id int32, end, timer int64) (i int, created bool) {
	ks := &s.k[id]
	if i := ks.find(end); i >= 0 {
		return i, false
	}
	ks.wins = append(ks.wins, window{end: end, timer: timer})
	s.bytes += windowBytes
	return len(ks.wins) - 1, true
}

// addRow appends the handle of a row of side to window w.
func (s *joinKeys) addRow(w *window, side int, h int64) {
	w.handles[side] = append(w.handles[side], h)
	s.bytes += handleBytes
}

func windowCost(w *window) int64 {
	return windowBytes + handleBytes*int64(len(w.handles[0])+len(w.handles[1]))
}

// removeWindow drops window i of key id.
func (s *joinKeys) removeWindow(id int32, i int) {
	ks := &s.k[id]
	s.bytes -= windowCost(&ks.wins[i])
	ks.wins = slices.Delete(ks.wins, i, i+1)
}

// Bytes implements engine.PerKey: an estimate of the windows, handles and timers, without a
// pass over them (the rows are the host's).
func (s *joinKeys) Bytes() int64 {
	return int64(cap(s.k))*24 + s.bytes + s.j.timers.Bytes()
}

// Save implements engine.PerKey.
func (s *joinKeys) Save(dst []byte, id int32) []byte {
	s.settle()
	ks := &s.k[id]
	dst = binary.AppendUvarint(dst, uint64(len(ks.wins)))
	for i := range ks.wins {
		w := &ks.wins[i]
		pos, _ := s.j.timers.Position(joincore.Timer{Time: w.timer, NS: w.end, Key: id})
		dst = binary.AppendVarint(dst, w.end)
		dst = binary.AppendUvarint(dst, uint64(pos))
		for side, hs := range w.handles {
			dst = binary.AppendUvarint(dst, uint64(len(hs)))
			for _, h := range hs {
				r, _ := s.j.rowBytes(side, h) // present: BeforeSnapshot checked every handle
				dst = binary.AppendUvarint(dst, uint64(len(r)))
				dst = append(dst, r...)
			}
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
	ks := &s.k[id]
	n, src, err := joincore.Uvarint(src, errTruncated)
	if err != nil {
		return nil, err
	}
	if n > uint64(len(src))/4 {
		return nil, fmt.Errorf("%w: window count %d out of range", engine.ErrData, n)
	}
	joins := joincore.KeyJoins(s.j.state.Key(id), s.j.filterNulls)
	for range n {
		var w window
		if w.end, src, err = joincore.Varint(src, errTruncated); err != nil {
			return nil, err
		}
		if ks.find(w.end) >= 0 {
			return nil, fmt.Errorf("%w: duplicate window end %d", engine.ErrData, w.end)
		}
		if w.timer, err = s.j.zone.timerTime(w.end); err != nil {
			return nil, err
		}
		if w.pos, src, err = joincore.Uvarint(src, errTruncated); err != nil {
			return nil, err
		}
		// The window joins the key before its rows load: should the payload fail part way, the
		// key's Reset drops the rows it restored so far.
		ks.wins = append(ks.wins, w)
		s.bytes += windowBytes
		s.unsettled++
		wp := &ks.wins[len(ks.wins)-1]
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
					s.addRow(wp, side, s.j.restore(side, row))
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
	for id := range s.k {
		ks := &s.k[id]
		for i := range ks.wins {
			w := &ks.wins[i]
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
