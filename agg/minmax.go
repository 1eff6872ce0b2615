package agg

import (
	"github.com/ferrystream/ferry/engine"
)

// minMaxAcc is MIN or MAX without retraction (Flink's declarative Min/MaxAggFunction) over any
// value type (ops): the value starts NULL, NULL arguments are ignored, and a new argument
// replaces the value when it is strictly smaller (MIN) or larger (MAX) under Flink's < on the
// type (valueOps.less): for numbers NaN never replaces a value, and -0.0 and 0.0 keep
// whichever came first. Retractions are ignored, as Flink's empty retract expressions do; the
// planner only picks this variant for inputs whose retractions cannot change the result.
//
// Partial state: the value itself (the function's only accumulator field), nullable; merging
// a partial value is accumulating it (mergeExpressions: NULL keeps, a NULL value takes it, else
// the smaller or larger wins). numMinMaxAcc runs the same rules for numbers with the
// comparisons written in the loops.
type minMaxAcc[V comparable, O valueOps[V]] struct {
	col int
	max bool
	typ engine.Type // argument and result type, nullable
	ops O
	st  []minMaxState[V] // per group
	rowValues[V]
	part rowValues[V] // partial values being written
}

// minMaxState is one group's MIN or MAX accumulator; one struct keeps it in one cache line.
type minMaxState[V any] struct {
	val V // owned by ops when has
	has bool
}

func (a *minMaxAcc[V, O]) Grow(n int) { a.st = extend(a.st, n) }

func (a *minMaxAcc[V, O]) Reset(g int32) {
	if a.st[g].has {
		a.ops.drop(a.st[g].val)
	}
	a.st[g] = minMaxState[V]{}
}

func (a *minMaxAcc[V, O]) Bytes() int64 {
	var zero minMaxState[V]
	return int64(cap(a.st))*int64(sizeOf(zero)) + a.ops.bytes()
}

// beats reports whether v replaces the current value cur.
func (a *minMaxAcc[V, O]) beats(v, cur V) bool {
	if a.max {
		return a.ops.less(cur, v)
	}
	return a.ops.less(v, cur)
}

func (a *minMaxAcc[V, O]) tidy() {
	if !a.ops.compactDue() {
		return
	}
	a.ops.compactStart()
	for g := range a.st {
		if s := &a.st[g]; s.has {
			s.val = a.ops.move(s.val)
		}
	}
	a.ops.compactEnd()
}

// note records row i's values and flags it changed under Flink's equaliser.
func (a *minMaxAcc[V, O]) note(i int, pv V, pn bool, nv V, nn bool, changed []bool) {
	a.store(i, pv, pn, nv, nn)
	if pn != nn || (!nn && pv != nv && !a.ops.same(pv, nv)) {
		changed[i] = true
	}
}

// offer makes v (of the bound column) group s's value when it beats the current one.
func (a *minMaxAcc[V, O]) offer(s *minMaxState[V], v V) {
	if !s.has || a.beats(v, s.val) {
		if s.has {
			a.ops.drop(s.val)
		}
		s.val, s.has = a.ops.keep(v), true
	}
}

func (a *minMaxAcc[V, O]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	a.ops.bind(in, a.col, true)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := s.val, !s.has
		if act[i] > 0 && !col.IsNull(i) {
			a.offer(s, a.ops.at(i))
		}
		a.note(i, pv, pn, s.val, !s.has, changed)
	}
	a.ops.unbind()
}

func (a *minMaxAcc[V, O]) differ(p, q int32) bool {
	return a.nulls[p] != a.nulls[q] || (!a.nulls[q] && a.vals[p] != a.vals[q] && !a.ops.same(a.vals[p], a.vals[q]))
}

func (a *minMaxAcc[V, O]) write(out *engine.OutColumn, pick []int32) {
	a.ops.write(out, a.vals, a.nulls, pick)
}

func (a *minMaxAcc[V, O]) varBytes(pick []int32) int {
	return a.ops.varBytes(a.vals, a.nulls, pick)
}

// Save writes a NULL flag, then the value unless ops are sparse and it is NULL.
func (a *minMaxAcc[V, O]) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	dst = putBool(dst, s.has)
	if s.has || !a.ops.sparse() {
		dst = a.ops.put(dst, s.val)
	}
	return dst
}

func (a *minMaxAcc[V, O]) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	has, src, err := getBool(src)
	if err != nil {
		return nil, err
	}
	if has || !a.ops.sparse() {
		v, rest, err := a.ops.get(src)
		if err != nil {
			return nil, err
		}
		s.val, src = v, rest
	}
	s.has = has
	return src, nil
}

func (a *minMaxAcc[V, O]) partialTypes() ([]engine.Type, error) {
	return []engine.Type{a.typ}, nil
}

// gather collects the values of groups into a.part (entry j for groups[j]).
func (a *minMaxAcc[V, O]) gather(groups []int32) {
	a.part.vals = resize(a.part.vals, len(groups))
	a.part.nulls = resize(a.part.nulls, len(groups))
	for j, g := range groups {
		s := &a.st[g]
		a.part.vals[j], a.part.nulls[j] = s.val, !s.has
	}
}

func (a *minMaxAcc[V, O]) partialVarBytes(groups []int32, dst []int) {
	a.gather(groups)
	dst[0] = a.ops.varBytes(a.part.vals, a.part.nulls, nil)
}

func (a *minMaxAcc[V, O]) writePartial(out []engine.OutColumn, groups []int32) error {
	a.gather(groups)
	a.ops.write(&out[0], a.part.vals, a.part.nulls, nil)
	return nil
}

func (a *minMaxAcc[V, O]) merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{a.typ}); err != nil {
		return err
	}
	a.tidy()
	a.rowValues.reset(in.Len)
	col := &in.Cols[first]
	a.ops.bind(in, first, false)
	for i, g := range gids[:in.Len] {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := s.val, !s.has
		if !col.IsNull(i) {
			a.offer(s, a.ops.at(i))
		}
		a.note(i, pv, pn, s.val, !s.has, changed)
	}
	a.ops.unbind()
	return nil
}

// numMinMaxAcc is minMaxAcc for numbers with Java's primitive < and > written in the per-row
// loops, which stay free of calls (docs/group-aggregate.md#kernels); state, snapshots, output
// and partial writing are minMaxAcc's.
type numMinMaxAcc[T number] struct {
	minMaxAcc[T, *numOps[T]]
}

func newNumMinMax[T number](fn string, col int, typ engine.Type) *numMinMaxAcc[T] {
	return &numMinMaxAcc[T]{minMaxAcc[T, *numOps[T]]{col: col, max: fn == "MAX", typ: typ, ops: &numOps[T]{}}}
}

func (a *numMinMaxAcc[T]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := s.val, !s.has
		if act[i] > 0 && !col.IsNull(i) {
			if v := vals[i]; pn || (a.max && v > pv) || (!a.max && v < pv) {
				s.val, s.has = v, true
			}
		}
		a.record(i, pv, pn, s.val, !s.has, changed)
	}
}

func (a *numMinMaxAcc[T]) merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{a.typ}); err != nil {
		return err
	}
	a.rowValues.reset(in.Len)
	col := &in.Cols[first]
	vals := engine.Values[T](col, in.Len)
	for i, g := range gids[:in.Len] {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := s.val, !s.has
		if !col.IsNull(i) {
			if v := vals[i]; pn || (a.max && v > pv) || (!a.max && v < pv) {
				s.val, s.has = v, true
			}
		}
		a.record(i, pv, pn, s.val, !s.has, changed)
	}
	return nil
}
