package kernels

import (
	"iter"
	"unsafe"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// rowValues records, for each row of the current batch, an aggregate's value before and after
// the row was folded (or, for a partial row, merged), interleaved: entry 2i is row i's value
// before, 2i+1 after. The group aggregate emits -U/-D rows from the former and +I/+U rows from
// the latter, picking entries by index with no branch. Owned by one accumulator, reused across
// batches.
//
// V is the accumulator's stored value type: a number, a values.Dec128 (DECIMAL) or a
// values.StrRef (VARCHAR, whose bytes live in the accumulator's arena). Go's == on V means "the
// same stored value"; for numbers and DECIMAL it is also Flink's equaliser (record), for
// VARCHAR the kernel compares bytes through its value-ops (values.Ops.Same).
type rowValues[V comparable] struct {
	vals   []V
	nulls  []bool
	warmed byte // warm's loads, kept
}

// fill makes v n entries long, entry j the value at(j) returns, NULL where it reports none.
func (v *rowValues[V]) fill(n int, at func(j int) (V, bool)) {
	v.vals = scratch.Resize(v.vals, n)
	v.nulls = scratch.Resize(v.nulls, n)
	for j := range n {
		var has bool
		v.vals[j], has = at(j)
		v.nulls[j] = !has
	}
}

// rows is the loop of a fold or merge over a batch of n rows: when it starts it makes v the
// batch's recorder (reset), then it yields, in order, each row i whose group gids[i] is not
// negative, with that group. It inlines into the caller together with the loop body while the
// body stays within the inliner's budget for a closure called once (800); a larger body would
// become a call per row, so the largest folds keep a plain loop.
func (v *rowValues[V]) rows(n int, gids []int32) iter.Seq2[int, int32] {
	return func(yield func(int, int32) bool) {
		v.reset(n)
		for i, g := range gids[:n] {
			if g >= 0 && !yield(i, g) {
				return
			}
		}
	}
}

// reset makes v the recorder of a batch of n rows.
func (v *rowValues[V]) reset(n int) {
	v.vals = scratch.Resize(v.vals, 2*n)
	v.nulls = scratch.Resize(v.nulls, 2*n)
	clear(v.nulls)
}

// store stores row i's values before (pv, pn = NULL) and after (nv, nn).
func (v *rowValues[V]) store(i int, pv V, pn bool, nv V, nn bool) {
	v.vals[2*i], v.vals[2*i+1] = pv, nv
	v.nulls[2*i], v.nulls[2*i+1] = pn, nn
}

// record stores row i's values and flags the row as changed when Flink's equaliser would, for
// value types whose equaliser is Go's ==: Java's == on primitives (NaN differs from itself,
// -0.0 equals 0.0) and DecimalData's compareTo within one type (equal unscaled values).
func (v *rowValues[V]) record(i int, pv V, pn bool, nv V, nn bool, changed []bool) {
	v.store(i, pv, pn, nv, nn)
	if pn != nn || (!nn && pv != nv) {
		changed[i] = true
	}
}

// Differ compares entries a and b as record compares a row's before and after.
func (v *rowValues[V]) Differ(a, b int32) bool {
	return v.nulls[a] != v.nulls[b] || (!v.nulls[b] && v.vals[a] != v.vals[b])
}

// Write fills output row j with entry pick[j]; V must be fixed-width (values.WriteFixed).
func (v *rowValues[V]) Write(out *engine.OutColumn, pick []int32) {
	values.WriteFixed(out, v.vals, v.nulls, pick)
}

// opsValues is rowValues for a kernel over value-ops O: Flink's equaliser on two values Go's ==
// calls different is ops.Same (VARCHAR's bytes, not its references), and output goes through
// ops.Write. ops is the kernel's value-ops, which own every value the kernel keeps. Its per-row
// methods are specialized with the kernel that embeds it (kernels_gen.go).
type opsValues[V comparable, O values.Ops[V]] struct {
	ops O
	rowValues[V]
}

// note records row i's values and flags it changed under Flink's equaliser. It is store and
// the test written out, which keeps it within the inliner's budget for numbers and DECIMAL.
//
//kernels:specialize
func (a *opsValues[V, O]) note(i int, pv V, pn bool, nv V, nn bool, changed []bool) {
	a.vals[2*i], a.vals[2*i+1] = pv, nv
	a.nulls[2*i], a.nulls[2*i+1] = pn, nn
	if pn == nn && (nn || pv == nv || a.ops.Same(pv, nv)) {
		return
	}
	changed[i] = true
}

// Differ compares entries p and q as note compares a row's before and after.
//
//kernels:specialize
func (a *opsValues[V, O]) Differ(p, q int32) bool {
	return a.nulls[p] != a.nulls[q] || (!a.nulls[q] && a.vals[p] != a.vals[q] && !a.ops.Same(a.vals[p], a.vals[q]))
}

// Write fills output row j with entry pick[j].
//
//kernels:specialize
func (a *opsValues[V, O]) Write(out *engine.OutColumn, pick []int32) {
	a.ops.Write(out, a.vals, a.nulls, pick)
}

// Warmer is an accumulator that can read its groups' states ahead of a fold: at high
// cardinality a fold takes a cache miss per row and, with its longer work per row, overlaps few
// of them; WarmGroups's loop has no dependency between rows, so the CPU overlaps many, and the
// fold then finds the lines in cache.
type Warmer interface {
	WarmGroups(gids []int32)
}

// warm reads one byte of the state of each group in gids (-1: none) for WarmGroups; below
// engine.WarmKeys groups, where the states mostly stay in cache, it does nothing. Its result
// only keeps the loads from being optimised away.
func warm[T any](st []T, gids []int32) byte {
	if len(st) < engine.WarmKeys {
		return 0
	}
	var x byte
	for _, g := range gids {
		if g >= 0 {
			x ^= *(*byte)(unsafe.Pointer(&st[g]))
		}
	}
	return x
}
