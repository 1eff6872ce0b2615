package agg

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// listAggRetractAcc is LISTAGG(x [, delimiter]) with retraction: Flink's
// ListAggWithRetractAggFunction (one argument) and ListAggWsWithRetractAggFunction (two).
//
// Flink's accumulator holds list and retractList, two ListViews (a ListState each, in state),
// and for the two-argument function a delimiter, initially ','. Accumulating a non-NULL x adds
// it to list; retracting one removes the first element of list equal to it (bytes), or, when
// there is none, adds it to retractList, which only merge reads (never planned: these calls
// stay Flink's in two phases), so it is not kept here. With two arguments, accumulating or
// retracting a non-NULL x sets the delimiter to the row's (possibly NULL). A NULL x changes
// nothing. The value is NULL for an empty list, else the list's elements joined by the
// delimiter (BinaryStringDataUtil.concatWs: NULL when the delimiter is NULL); the
// one-argument function always joins with ','.
//
// With idle-state TTL the ListState is a TtlListState, whose elements expire one by one: add
// stamps the new element; get skips expired ones; remove reads the live elements, and when it
// finds the value writes the rest back (update), stamping every one of them; the delimiter
// lives in the accumulator row (engine.EntryState: it resets when the row expires, the list
// stays). The list is an occurrences table (arrival order, stamps per entry); the joined value
// is built in the arena once per group and call and again after each change.
type listAggRetractAcc struct {
	col      int // x
	delimCol int // the delimiter argument, or -1 for the one-argument function
	ops      *strOps
	delim    []delimState        // per group
	list     occurrences[strRef] // values owned by ops
	cur      []strRef            // per group: the joined value, valid when curCall is the current call
	curCall  []uint32            // per group: the call cur was built in
	call     uint32              // the current call, from 1
	built    []strRef            // the joined values built in the current call
	rowValues[strRef]
}

func newListAggRetract(col, delimCol int) *listAggRetractAcc {
	return &listAggRetractAcc{col: col, delimCol: delimCol, ops: newStrOps(-1), list: newOccurrences[strRef]()}
}

func (a *listAggRetractAcc) Grow(n int) {
	a.delim, a.cur, a.curCall = extend(a.delim, n), extend(a.cur, n), extend(a.curCall, n)
	a.list.growGroups(n)
}

func (a *listAggRetractAcc) Reset(g int32) {
	a.ResetValue(g)
	for m := &a.list; m.head[g] >= 0; {
		a.ops.drop(m.remove(m.head[g]))
	}
}

// ResetValue implements engine.EntryState: the delimiter (Flink's accumulator row) returns to
// ',', the list (its ListState) stays.
func (a *listAggRetractAcc) ResetValue(g int32) {
	a.delim[g].release(a.ops)
	a.delim[g] = delimState{}
	a.curCall[g] = 0
}

// LiveEntries implements engine.EntryState.
func (a *listAggRetractAcc) LiveEntries(g int32, nowMs int64) bool { return a.list.live(g, nowMs) }

// SweepEntries implements engine.EntryState.
func (a *listAggRetractAcc) SweepEntries(nowMs int64, budget int) {
	a.list.sweepExpired(nowMs, budget, func(e int32) {
		a.curCall[a.list.group[e]] = 0
		a.ops.drop(a.list.remove(e))
	})
}

// entryTable implements entryOwner.
func (a *listAggRetractAcc) entryTable() *groupEntries { return &a.list.groupEntries }

func (a *listAggRetractAcc) Bytes() int64 {
	var d delimState
	return int64(cap(a.delim))*int64(sizeOf(d)) + int64(cap(a.cur))*int64(sizeOf(strRef{})) +
		int64(cap(a.curCall))*4 + a.list.bytes() + a.ops.bytes()
}

// begin starts a call: the joined values of the previous one are garbage, and the arena is
// compacted when due.
func (a *listAggRetractAcc) begin() {
	for _, r := range a.built {
		a.ops.drop(r)
	}
	a.built = a.built[:0]
	a.call++
	if a.call == 0 { // wrapped: no cur may look current
		clear(a.curCall)
		a.call = 1
	}
	if !a.ops.compactDue() {
		return
	}
	a.ops.compactStart()
	for g := range a.delim {
		a.delim[g].move(a.ops)
	}
	for e, g := range a.list.group {
		if g >= 0 {
			a.list.val[e] = a.ops.move(a.list.val[e])
		}
	}
	a.ops.compactEnd()
}

// value is group g's LISTAGG value now (NULL: has() false), built once per call and change.
// Expired elements are skipped and deleted.
func (a *listAggRetractAcc) value(g int32) strRef {
	if a.curCall[g] == a.call {
		return a.cur[g]
	}
	m := &a.list
	var r strRef
	d := a.delim[g].bytes(a.ops)
	if a.delimCol < 0 {
		d = comma
	}
	h := a.ops.Arena()
	off, n := h.Len(), 0
	for e := m.tail[g]; e >= 0; {
		prev := m.prev[e]
		if m.expired(e) {
			a.ops.drop(m.remove(e))
		} else {
			if n > 0 {
				h.Append(d)
			}
			h.Append(h.Get(m.val[e]))
			n++
		}
		e = prev
	}
	switch {
	case n == 0:
	case d == nil: // concatWs with a NULL separator
		h.Truncate(off)
	default:
		r = h.Since(off)
	}
	a.cur[g], a.curCall[g] = r, a.call
	if r.has() {
		a.built = append(a.built, r)
	}
	return r
}

// invalidate forgets group g's joined value after its state changed (built still holds it).
func (a *listAggRetractAcc) invalidate(g int32) { a.curCall[g] = 0 }

func (a *listAggRetractAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.begin()
	a.rowValues.reset(in.Len)
	a.ops.bind(in, a.col, false)
	col := &in.Cols[a.col]
	var delims *engine.Column
	if a.delimCol >= 0 {
		delims = &in.Cols[a.delimCol]
	}
	for i, g := range gids[:in.Len] {
		if g < 0 {
			continue
		}
		pv := a.value(g)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if delims != nil {
				a.delim[g].set(a.ops, bytesAt(delims, i))
			}
			v := a.ops.at(i)
			h := a.ops.hash(g, v)
			if d > 0 {
				a.list.push(g, a.ops.keep(v), h)
			} else {
				a.remove(g, v, h)
			}
			a.invalidate(g)
		}
		nv := a.value(g)
		// the old value's bytes may be built again at another offset: compare bytes
		a.store(i, pv, !pv.has(), nv, !nv.has())
		if pv.has() != nv.has() || (nv.has() && pv != nv && !a.ops.same(pv, nv)) {
			changed[i] = true
		}
	}
	a.ops.unbind()
}

// remove is StateListView.remove of v (hash h) from group g's list: the oldest live element
// equal to v goes, and the live rest is written back, each stamped now (TtlListState.update);
// nothing changes when there is none.
func (a *listAggRetractAcc) remove(g int32, v strRef, h uint64) {
	m := &a.list
	e := m.oldest(g, v, h, a.ops.equal, m.expired)
	if e < 0 {
		return
	}
	a.ops.drop(m.remove(e))
	if m.at == nil {
		return
	}
	for e := m.head[g]; e >= 0; {
		next := m.next[e]
		if m.expired(e) {
			a.ops.drop(m.remove(e))
		} else {
			m.touch(e)
		}
		e = next
	}
}

func (a *listAggRetractAcc) differ(p, q int32) bool {
	return a.nulls[p] != a.nulls[q] || (!a.nulls[q] && a.vals[p] != a.vals[q] && !a.ops.same(a.vals[p], a.vals[q]))
}

func (a *listAggRetractAcc) write(out *engine.OutColumn, pick []int32) {
	a.ops.write(out, a.vals, a.nulls, pick)
}

func (a *listAggRetractAcc) varBytes(pick []int32) int { return a.ops.varBytes(a.vals, a.nulls, pick) }

// Save writes the delimiter (listAggAcc's encoding), the number of list elements, then each
// element, oldest first, followed with idle-state TTL by its last write.
func (a *listAggRetractAcc) Save(dst []byte, g int32) []byte {
	dst = a.delim[g].save(a.ops, dst)
	m := &a.list
	dst = putVarint(dst, int64(m.entries(g)))
	for e := m.tail[g]; e >= 0; e = m.prev[e] {
		dst = a.ops.put(dst, m.val[e])
		if m.at != nil {
			dst = putVarint(dst, m.at[e])
		}
	}
	return dst
}

func (a *listAggRetractAcc) Load(src []byte, g int32) ([]byte, error) {
	d, src, err := loadDelimiter(a.ops, src)
	if err != nil {
		return nil, err
	}
	a.delim[g] = d
	a.curCall[g] = 0
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src)) { // an element takes at least one byte
		return nil, fmt.Errorf("%w: LISTAGG element count %d out of range", engine.ErrData, n)
	}
	m := &a.list
	for range n {
		var v strRef
		if v, src, err = a.ops.get(src); err != nil {
			return nil, err
		}
		e := m.push(g, v, a.ops.hash(g, v))
		if m.at != nil {
			if m.at[e], src, err = getVarint(src); err != nil {
				return nil, err
			}
		}
	}
	return src, nil
}

// partialTypes refuses: Flink's partial accumulator holds two ListViews, which do not cross
// between Ferry's halves yet (PartialSupport says so first).
func (a *listAggRetractAcc) partialTypes() ([]engine.Type, error) {
	return nil, fmt.Errorf("%w: LISTAGG with retraction in two phases: its ListView partial state does not cross yet", engine.ErrUnsupported)
}

func (a *listAggRetractAcc) partialVarBytes([]int32, []int) {}

func (a *listAggRetractAcc) writePartial([]engine.OutColumn, []int32) error {
	_, err := a.partialTypes()
	return err
}

func (a *listAggRetractAcc) merge(*engine.Batch, int, []int32, []bool) error {
	_, err := a.partialTypes()
	return err
}
