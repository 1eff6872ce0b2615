package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/scratch"
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
// Partial state: the value itself (the function's only accumulator field), nullable; merging
// a partial value is accumulating it (mergeExpressions: NULL keeps, a NULL value takes it, else
// the smaller or larger wins).
//
// The accumulators are its specializations numMinMaxAcc, decMinMaxAcc and strMinMaxAcc
// (kernels_gen.go), whose per-row methods are generated from the ones marked
// kernels:specialize (go generate).
type minMaxAcc[V comparable, O values.Ops[V]] struct {
	col int
	max bool
	// rule is when a new argument replaces a value that is set: by order (MIN/MAX, the zero
	// value), never (FIRST_VALUE) or always (LAST_VALUE); see firstLastAcc.
	rule replaceRule
	typ  engine.Type // argument and result type, nullable
	ops  O
	st   []minMaxState[V] // per group
	rowValues[V]
	part rowValues[V] // partial values being written
}

// minMaxState is one group's MIN or MAX accumulator; one struct keeps it in one cache line.
type minMaxState[V any] struct {
	val V // owned by ops when has
	has bool
}

func (a *minMaxAcc[V, O]) WarmGroups(gids []int32) { a.warmed = warm(a.st, gids) }
func (a *minMaxAcc[V, O]) Grow(n int)              { a.st = scratch.Extend(a.st, n) }

func (a *minMaxAcc[V, O]) Reset(g int32) {
	if a.st[g].has {
		a.ops.Drop(a.st[g].val)
	}
	a.st[g] = minMaxState[V]{}
}

func (a *minMaxAcc[V, O]) Bytes() int64 {
	var zero minMaxState[V]
	return int64(cap(a.st))*int64(sizeOf(zero)) + a.ops.Bytes()
}

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
func (a *minMaxAcc[V, O]) tidy() {
	if !a.ops.CompactDue() {
		return
	}
	a.ops.CompactStart()
	for g := range a.st {
		if s := &a.st[g]; s.has {
			s.val = a.ops.Move(s.val)
		}
	}
	a.ops.CompactEnd()
}

// note records row i's values and flags it changed under Flink's equaliser.
//
//kernels:specialize
func (a *minMaxAcc[V, O]) note(i int, pv V, pn bool, nv V, nn bool, changed []bool) {
	a.store(i, pv, pn, nv, nn)
	if pn != nn || (!nn && pv != nv && !a.ops.Same(pv, nv)) {
		changed[i] = true
	}
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

//kernels:specialize
func (a *minMaxAcc[V, O]) Differ(p, q int32) bool {
	return a.nulls[p] != a.nulls[q] || (!a.nulls[q] && a.vals[p] != a.vals[q] && !a.ops.Same(a.vals[p], a.vals[q]))
}

//kernels:specialize
func (a *minMaxAcc[V, O]) Write(out *engine.OutColumn, pick []int32) {
	a.ops.Write(out, a.vals, a.nulls, pick)
}

// Save writes a NULL flag, then the value unless ops are sparse and it is NULL.
func (a *minMaxAcc[V, O]) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	dst = values.PutBool(dst, s.has)
	if s.has || !a.ops.Sparse() {
		dst = a.ops.Put(dst, s.val)
	}
	return dst
}

func (a *minMaxAcc[V, O]) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	has, src, err := values.GetBool(src)
	if err != nil {
		return nil, err
	}
	if has || !a.ops.Sparse() {
		v, rest, err := a.ops.Get(src)
		if err != nil {
			return nil, err
		}
		s.val, src = v, rest
	}
	s.has = has
	return src, nil
}

func (a *minMaxAcc[V, O]) PartialTypes() ([]engine.Type, error) {
	return []engine.Type{a.typ}, nil
}

// gather collects the values of groups into a.part (entry j for groups[j]).
func (a *minMaxAcc[V, O]) gather(groups []int32) {
	a.part.fill(len(groups), func(j int) (V, bool) { s := &a.st[groups[j]]; return s.val, s.has })
}

func (a *minMaxAcc[V, O]) PartialVarBytes(groups []int32, dst []int) {
	a.gather(groups)
	dst[0] = a.ops.VarBytes(a.part.vals, a.part.nulls, nil)
}

func (a *minMaxAcc[V, O]) WritePartial(out []engine.OutColumn, groups []int32) error {
	a.gather(groups)
	a.ops.Write(&out[0], a.part.vals, a.part.nulls, nil)
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
	return firstLastAcc[V, O]{minMaxAcc[V, O]{col: col, rule: rule, typ: typ, ops: ops}}
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
