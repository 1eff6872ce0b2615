package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/entries"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// firstLastRetractAcc is FIRST_VALUE or LAST_VALUE with retraction: Flink's
// FirstValueWithRetractAggFunction and LastValueWithRetractAggFunction (one argument), for
// every type Support accepts.
//
// Flink's accumulator keeps the current value and its order, valueToOrderMap (value → the
// orders it was accumulated at, oldest first) and orderToValueMap (order → the values
// accumulated at it, in arrival order), where a row's order is System.currentTimeMillis() at
// its accumulate. A retraction of v takes v's oldest order and removes the first v from that
// order's list; when v equals the current value it rescans orderToValueMap: FIRST_VALUE takes
// the first value of the smallest order, LAST_VALUE the last value of the largest. With a
// clock that never goes back (orders never decrease, equal orders keep arrival order) this is
// exactly one list of occurrences in arrival order, a retraction removing the oldest
// occurrence equal to its value (Java equals(): floats by their canonical bits), FIRST_VALUE
// the oldest occurrence left and LAST_VALUE the newest, NULL when none is left; the value does
// not depend on the clock's readings, which this accumulator therefore never takes. NULL
// arguments are ignored.
//
// Idle-state TTL is refused (New): the entries of orderToValueMap are per millisecond, so
// which rows share an entry, and so its TTL stamp, depends on the wall clock. Neither function
// has a merge method, so Flink never plans them in two phases: there is no partial state.
type firstLastRetractAcc[V comparable, O values.Ops[V]] struct {
	col  int
	last bool // LAST_VALUE
	typ  engine.Type
	occ  entries.Occurrences[V] // values owned by ops
	opsValues[V, O]
}

func newFirstLastRetract[V comparable, O values.Ops[V]](fn string, col int, typ engine.Type, ops O) *firstLastRetractAcc[V, O] {
	typ.Nullable = true
	return &firstLastRetractAcc[V, O]{col: col, last: fn == "LAST_VALUE", typ: typ, occ: entries.NewOccurrences[V](), opsValues: opsValues[V, O]{ops: ops}}
}

func (a *firstLastRetractAcc[V, O]) Grow(n int) { a.occ.GrowGroups(n) }

func (a *firstLastRetractAcc[V, O]) Reset(g int32) {
	for m := &a.occ; m.Head[g] >= 0; {
		a.ops.Drop(m.Remove(m.Head[g]))
	}
}

func (a *firstLastRetractAcc[V, O]) Bytes() int64 { return a.occ.Bytes() + a.ops.Bytes() }

// value is the group's FIRST_VALUE (oldest occurrence) or LAST_VALUE (newest), NULL when empty.
func (a *firstLastRetractAcc[V, O]) value(g int32) (V, bool) {
	e := a.occ.Tail[g]
	if a.last {
		e = a.occ.Head[g]
	}
	if e < 0 {
		var zero V
		return zero, true
	}
	return a.occ.Val[e], false
}

func (a *firstLastRetractAcc[V, O]) tidy() {
	if !a.ops.CompactDue() {
		return
	}
	a.ops.CompactStart()
	for e, g := range a.occ.Group {
		if g >= 0 {
			a.occ.Val[e] = a.ops.Move(a.occ.Val[e])
		}
	}
	a.ops.CompactEnd()
}

func never(int32) bool { return false }

func (a *firstLastRetractAcc[V, O]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	a.ops.Bind(in, a.col, true)
	for i, g := range gids[:in.Len] {
		if g < 0 {
			continue
		}
		pv, pn := a.value(g)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			v := a.ops.At(i)
			h := a.ops.Hash(g, v)
			if d > 0 {
				a.occ.Push(g, a.ops.Keep(v), h)
			} else if e := a.occ.Oldest(g, v, h, a.ops.Equal, never); e >= 0 {
				a.ops.Drop(a.occ.Remove(e))
			}
		}
		nv, nn := a.value(g)
		a.note(i, pv, pn, nv, nn, changed)
	}
	a.ops.Unbind()
}

// VarBytes is the output size of a VARCHAR result (VarOutput); 0 for fixed-width values.
func (a *firstLastRetractAcc[V, O]) VarBytes(pick []int32) int {
	return a.ops.VarBytes(a.vals, a.nulls, pick)
}

// Save writes the number of occurrences, then each value, oldest first.
func (a *firstLastRetractAcc[V, O]) Save(dst []byte, g int32) []byte {
	m := &a.occ
	dst = values.PutVarint(dst, int64(m.Entries(g)))
	for e := m.Tail[g]; e >= 0; e = m.Prev[e] {
		dst = a.ops.Put(dst, m.Val[e])
	}
	return dst
}

func (a *firstLastRetractAcc[V, O]) Load(src []byte, g int32) ([]byte, error) {
	n, src, err := values.GetVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src)) { // a value takes at least one byte
		return nil, fmt.Errorf("%w: %s occurrence count %d out of range", engine.ErrData, a.name(), n)
	}
	for range n {
		var v V
		if v, src, err = a.ops.Get(src); err != nil {
			return nil, err
		}
		a.occ.Push(g, v, a.ops.Hash(g, v))
	}
	return src, nil
}

func (a *firstLastRetractAcc[V, O]) name() string {
	if a.last {
		return "LAST_VALUE"
	}
	return "FIRST_VALUE"
}

func (a *firstLastRetractAcc[V, O]) PartialTypes() ([]engine.Type, error) {
	return nil, fmt.Errorf("%w: %s with retraction has no partial state (Flink cannot merge it)", engine.ErrUnsupported, a.name())
}

func (a *firstLastRetractAcc[V, O]) PartialVarBytes([]int32, []int) {}

func (a *firstLastRetractAcc[V, O]) WritePartial([]engine.OutColumn, []int32) error {
	_, err := a.PartialTypes()
	return err
}

func (a *firstLastRetractAcc[V, O]) Merge(*engine.Batch, int, []int32, []bool) error {
	_, err := a.PartialTypes()
	return err
}
