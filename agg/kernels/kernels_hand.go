package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// Per-row methods written by hand for a specialization, which the generator then skips
// (internal/gen). Each is the template's method with its value-ops calls written out,
// kept where the generated loop measured slower on a hot kernel (BenchmarkKernelFold, CPU time
// per row, interleaved runs against the loops as they were before the kernels became templates;
// docs/group-aggregate.md#kernels):
//
//   - numbers, MIN/MAX and SUM fold (the Nexmark shapes): the generated loops ran 12-35 % slower,
//     reloading the bound values and state through the accumulator on every row;
//   - VARCHAR, MIN/MAX fold: the generated loop ran at 15-17 ns per row against 11, taking
//     every argument through a StrRef and the bound column.
//
// The template stays the definition; keep these in step with it (the tests run both paths
// against the same reference model).

// Fold is minMaxAcc.Fold for numbers, with Java's primitive < and > in the loop.
func (a *numMinMaxAcc[T]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
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

// Fold is sumAcc.Fold for numbers, with Java's wrapping + and - in the loop.
func (a *numSumAcc[T]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := a.value(s)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			v := vals[i]
			if d > 0 {
				if s.has() {
					s.sum += v
				} else {
					s.sum = v
				}
				s.n = s.n | 1 + 2 // not NULL, one more argument
			} else {
				if s.has() {
					s.sum -= v
				} else {
					s.sum = 0 - v
				}
				s.n = s.n | 1 - 2
			}
		}
		nv, nn := a.value(s)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

// Fold is minMaxAcc.Fold for VARCHAR: each argument's bytes and Java-String flag are read once
// and compared straight against the arena.
func (a *strMinMaxAcc) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	a.rowValues.reset(in.Len) // before the recorder's slices become locals: a plain loop, not rows
	col := &in.Cols[a.col]
	java := values.NewJavaFlags(in, a.ops.JavaCol())
	h := a.ops.Arena()
	want := -1 // MIN: replace when v compares below the value
	if a.max {
		want = 1
	}
	st, vals, nulls := a.st, a.vals, a.nulls // locals: the loop's stores cannot alias them
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &st[g]
		pv, pn := s.val, !s.has
		if act[i] > 0 && !col.IsNull(i) {
			v, vJava := col.Bytes(i), java.At(i)
			if pn || values.CompareStrings(v, vJava, h.Get(pv), pv.Java()) == want {
				if !pn {
					a.ops.Drop(pv)
				}
				s.val, s.has = h.Add(v, vJava), true
			}
		}
		vals[2*i], vals[2*i+1] = pv, s.val
		nulls[2*i], nulls[2*i+1] = pn, !s.has
		if pn == s.has || (s.has && pv != s.val && !a.ops.Same(pv, s.val)) {
			changed[i] = true
		}
	}
}
