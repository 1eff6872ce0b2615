package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// minMaxAcc is MIN or MAX without retraction (Flink's declarative Min/MaxAggFunction) over any
// value type (ops): the value starts NULL, NULL arguments are ignored, and a new argument
// replaces the value when it is strictly smaller (MIN) or larger (MAX) under Flink's < on the
// type (values.Ops.Less): for numbers NaN never replaces a value, and -0.0 and 0.0 keep
// whichever came first. Retractions are ignored, as Flink's empty retract expressions do; the
// planner only picks this variant for inputs whose retractions cannot change the result.
//
// Its state, snapshot and partial state are groupValues': the value (the function's only
// accumulator field), nullable. Merging a partial value is accumulating it (mergeExpressions:
// NULL keeps, a NULL value takes it, else the smaller or larger wins).
//
// The accumulators are its specializations numMinMaxAcc, decMinMaxAcc and strMinMaxAcc
// (kernels_gen.go), whose per-row methods are generated from the ones marked
// kernels:specialize here and in its parts (go generate).
type minMaxAcc[V comparable, O values.Ops[V]] struct {
	col int
	max bool
	// rule is when a new argument replaces a value that is set: by order (MIN/MAX, the zero
	// value), never (FIRST_VALUE) or always (LAST_VALUE); see firstLastAcc.
	rule replaceRule
	typ  engine.Type // argument and result type, nullable
	groupValues[V, O]
}

func newMinMax[V comparable, O values.Ops[V]](fn string, col int, typ engine.Type, ops O) minMaxAcc[V, O] {
	return minMaxAcc[V, O]{col: col, max: fn == "MAX", typ: typ, groupValues: newGroupValues(ops)}
}

func (a *minMaxAcc[V, O]) WarmGroups(gids []int32) { a.warmed = warm(a.st, gids) }

// beats reports whether v replaces the current value cur.
//
//kernels:specialize
func (a *minMaxAcc[V, O]) beats(v, cur V) bool {
	switch a.rule {
	case replaceNever:
		return false
	case replaceAlways:
		return true
	}
	if a.max {
		v, cur = cur, v
	}
	return a.ops.Less(v, cur)
}

//kernels:specialize
func (a *minMaxAcc[V, O]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	col := &in.Cols[a.col]
	ops, st := a.ops, a.st // locals: the loop's stores cannot alias them
	ops.Bind(in, a.col, true)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		s := &st[g]
		pv, pn := s.val, !s.has
		if act[i] > 0 && !col.IsNull(i) {
			if v := ops.At(i); pn || a.beats(v, pv) {
				if !pn {
					ops.Drop(pv)
				}
				s.val, s.has = ops.Keep(v), true
			}
		}
		a.store(i, pv, pn, s.val, !s.has) // note, written out: it is not inlined for every V
		if pn == s.has || (s.has && pv != s.val && !ops.Same(pv, s.val)) {
			changed[i] = true
		}
	}
	a.ops.Unbind()
}

func (a *minMaxAcc[V, O]) PartialTypes() ([]engine.Type, error) {
	return []engine.Type{a.typ}, nil
}

func (a *minMaxAcc[V, O]) WritePartial(out []engine.OutColumn, groups []int32) error {
	a.writeValues(&out[0], groups)
	return nil
}

//kernels:specialize
func (a *minMaxAcc[V, O]) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{a.typ}); err != nil {
		return err
	}
	a.tidy()
	col := &in.Cols[first]
	ops, st := a.ops, a.st
	ops.Bind(in, first, false)
	for i, g := range a.rows(in.Len, gids) {
		s := &st[g]
		pv, pn := s.val, !s.has
		if !col.IsNull(i) { // accumulating a partial value
			if v := ops.At(i); pn || a.beats(v, pv) {
				if !pn {
					ops.Drop(pv)
				}
				s.val, s.has = ops.Keep(v), true
			}
		}
		a.store(i, pv, pn, s.val, !s.has) // note, written out: it is not inlined for every V
		if pn == s.has || (s.has && pv != s.val && !ops.Same(pv, s.val)) {
			changed[i] = true
		}
	}
	a.ops.Unbind()
	return nil
}

// replaceRule is when a non-NULL argument replaces the value of a minMaxAcc that is set.
type replaceRule uint8

const (
	replaceByOrder replaceRule = iota // MIN/MAX: when strictly smaller/larger
	replaceNever                      // FIRST_VALUE: the first non-NULL argument stays
	replaceAlways                     // LAST_VALUE: every non-NULL argument replaces it
)

// firstLastAcc is FIRST_VALUE or LAST_VALUE without retraction (Flink's FirstValueAggFunction
// and LastValueAggFunction, one argument): the value starts NULL and NULL arguments are ignored;
// FIRST_VALUE keeps the first non-NULL argument (Flink's accumulator also stores the wall-clock
// time of that row as its order, which only tells "set" from "unset" for a one-argument call),
// LAST_VALUE takes every non-NULL argument. Retractions never reach it: Flink plans the
// ...WithRetractAggFunction variants for retracting input (firstLastRetractAcc). Neither
// function can merge, so Flink never plans them in two phases: there is no partial state.
// It is minMaxAcc's state, snapshot and template loop (not the MIN/MAX hand kernels) under its
// replace rule.
type firstLastAcc[V comparable, O values.Ops[V]] struct {
	minMaxAcc[V, O]
}

func newFirstLast[V comparable, O values.Ops[V]](fn string, col int, typ engine.Type, ops O) firstLastAcc[V, O] {
	rule := replaceNever
	if fn == "LAST_VALUE" {
		rule = replaceAlways
	}
	typ.Nullable = true
	acc := firstLastAcc[V, O]{newMinMax(fn, col, typ, ops)}
	acc.rule = rule
	return acc
}

func (a *firstLastAcc[V, O]) PartialTypes() ([]engine.Type, error) {
	return nil, fmt.Errorf("%w: FIRST_VALUE/LAST_VALUE have no partial state (Flink cannot merge them)", engine.ErrUnsupported)
}

func (a *firstLastAcc[V, O]) Merge(*engine.Batch, int, []int32, []bool) error {
	_, err := a.PartialTypes()
	return err
}

// strFirstLastAcc is firstLastAcc over VARCHAR, whose output column has variable size.
type strFirstLastAcc struct {
	firstLastAcc[values.StrRef, *values.StrOps]
}

func (a *strFirstLastAcc) VarBytes(pick []int32) int { return a.ops.VarBytes(a.vals, a.nulls, pick) }
