package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/entries"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
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
// is built in the arena once per group and call and again after each change. Its recorder's
// per-row methods are opsValues', specialized (kernels_gen.go).
//
//kernels:specialize
type listAggRetractAcc struct {
	col      int // x
	delimCol int // the delimiter argument, or -1 for the one-argument function

	delim   []delimState                       // per group
	list    entries.Occurrences[values.StrRef] // values owned by ops
	cur     []values.StrRef                    // per group: the joined value, valid when curCall is the current call
	curCall []uint32                           // per group: the call cur was built in
	call    uint32                             // the current call, from 1
	built   []values.StrRef                    // the joined values built in the current call
	opsValues[values.StrRef, *values.StrOps]
}

func newListAggRetract(col, delimCol int) *listAggRetractAcc {
	return &listAggRetractAcc{col: col, delimCol: delimCol, list: entries.NewOccurrences[values.StrRef](),
		opsValues: opsValues[values.StrRef, *values.StrOps]{ops: values.NewStrOps(-1)}}
}

func (a *listAggRetractAcc) Grow(n int) {
	a.delim, a.cur, a.curCall = scratch.Extend(a.delim, n), scratch.Extend(a.cur, n), scratch.Extend(a.curCall, n)
	a.list.GrowGroups(n)
}

func (a *listAggRetractAcc) Reset(g int32) {
	a.ResetValue(g)
	for m := &a.list; m.Head[g] >= 0; {
		a.ops.Drop(m.Remove(m.Head[g]))
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
func (a *listAggRetractAcc) LiveEntries(g int32, nowMs int64) bool { return a.list.Live(g, nowMs) }

// SweepEntries implements engine.EntryState.
func (a *listAggRetractAcc) SweepEntries(nowMs int64, budget int) {
	a.list.SweepExpired(nowMs, budget, func(e int32) {
		a.curCall[a.list.Group[e]] = 0
		a.ops.Drop(a.list.Remove(e))
	})
}

// EntryTable implements entries.Owner.
func (a *listAggRetractAcc) EntryTable() *entries.Table { return &a.list.Table }

func (a *listAggRetractAcc) Bytes() int64 {
	var d delimState
	return int64(cap(a.delim))*int64(sizeOf(d)) + int64(cap(a.cur))*int64(sizeOf(values.StrRef{})) +
		int64(cap(a.curCall))*4 + a.list.Bytes() + a.ops.Bytes()
}

// begin starts a call: the joined values of the previous one are garbage, and the arena is
// compacted when due.
func (a *listAggRetractAcc) begin() {
	for _, r := range a.built {
		a.ops.Drop(r)
	}
	a.built = a.built[:0]
	a.call++
	if a.call == 0 { // wrapped: no cur may look current
		clear(a.curCall)
		a.call = 1
	}
	if !a.ops.CompactDue() {
		return
	}
	a.ops.CompactStart()
	for g := range a.delim {
		a.delim[g].move(a.ops)
	}
	for e, g := range a.list.Group {
		if g >= 0 {
			a.list.Val[e] = a.ops.Move(a.list.Val[e])
		}
	}
	a.ops.CompactEnd()
}

// value is group g's LISTAGG value now (NULL: has() false), built once per call and change.
// Expired elements are skipped and deleted.
func (a *listAggRetractAcc) value(g int32) values.StrRef {
	if a.curCall[g] == a.call {
		return a.cur[g]
	}
	m := &a.list
	var r values.StrRef
	d := a.delim[g].bytes(a.ops)
	if a.delimCol < 0 {
		d = comma
	}
	h := a.ops.Arena()
	off, n := h.Len(), 0
	for e := m.Tail[g]; e >= 0; {
		prev := m.Prev[e]
		if m.Expired(e) {
			a.ops.Drop(m.Remove(e))
		} else {
			if n > 0 {
				h.Append(d)
			}
			h.Append(h.Get(m.Val[e]))
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
	if r.Has() {
		a.built = append(a.built, r)
	}
	return r
}

// invalidate forgets group g's joined value after its state changed (built still holds it).
func (a *listAggRetractAcc) invalidate(g int32) { a.curCall[g] = 0 }

func (a *listAggRetractAcc) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.begin()
	a.rowValues.reset(in.Len)
	a.ops.Bind(in, a.col, false)
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
			v := a.ops.At(i)
			h := a.ops.Hash(g, v)
			if d > 0 {
				a.list.Push(g, a.ops.Keep(v), h)
			} else {
				a.remove(g, v, h)
			}
			a.invalidate(g)
		}
		nv := a.value(g)
		a.note(i, pv, !pv.Has(), nv, !nv.Has(), changed) // by bytes: pv's may be built again elsewhere
	}
	a.ops.Unbind()
}

// remove is StateListView.remove of v (hash h) from group g's list: the oldest live element
// equal to v goes, and the live rest is written back, each stamped now (TtlListState.update);
// nothing changes when there is none.
func (a *listAggRetractAcc) remove(g int32, v values.StrRef, h uint64) {
	m := &a.list
	e := m.Oldest(g, v, h, a.ops.Equal, m.Expired)
	if e < 0 {
		return
	}
	a.ops.Drop(m.Remove(e))
	if m.At == nil {
		return
	}
	for e := m.Head[g]; e >= 0; {
		next := m.Next[e]
		if m.Expired(e) {
			a.ops.Drop(m.Remove(e))
		} else {
			m.Touch(e)
		}
		e = next
	}
}

func (a *listAggRetractAcc) VarBytes(pick []int32) int { return a.ops.VarBytes(a.vals, a.nulls, pick) }

// Save writes the delimiter (listAggAcc's encoding), the number of list elements, then each
// element, oldest first, followed with idle-state TTL by its last write.
func (a *listAggRetractAcc) Save(dst []byte, g int32) []byte {
	dst = a.delim[g].save(a.ops, dst)
	m := &a.list
	dst = values.PutVarint(dst, int64(m.Entries(g)))
	for e := m.Tail[g]; e >= 0; e = m.Prev[e] {
		dst = a.ops.Put(dst, m.Val[e])
		if m.At != nil {
			dst = values.PutVarint(dst, m.At[e])
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
	n, src, err := values.GetVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src)) { // an element takes at least one byte
		return nil, fmt.Errorf("%w: LISTAGG element count %d out of range", engine.ErrData, n)
	}
	m := &a.list
	for range n {
		var v values.StrRef
		if v, src, err = a.ops.Get(src); err != nil {
			return nil, err
		}
		e := m.Push(g, v, a.ops.Hash(g, v))
		if m.At != nil {
			if m.At[e], src, err = values.GetVarint(src); err != nil {
				return nil, err
			}
		}
	}
	return src, nil
}

// PartialTypes refuses: Flink's partial accumulator holds two ListViews, which do not cross
// between Ferry's halves yet (agg's PartialSupport refuses the call first).
func (a *listAggRetractAcc) PartialTypes() ([]engine.Type, error) {
	return nil, fmt.Errorf("%w: LISTAGG with retraction in two phases: its ListView partial state does not cross yet", engine.ErrUnsupported)
}

func (a *listAggRetractAcc) PartialVarBytes([]int32, []int) {}

func (a *listAggRetractAcc) WritePartial([]engine.OutColumn, []int32) error {
	_, err := a.PartialTypes()
	return err
}

func (a *listAggRetractAcc) Merge(*engine.Batch, int, []int32, []bool) error {
	_, err := a.PartialTypes()
	return err
}
