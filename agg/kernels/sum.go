package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// sumAcc is SUM, accumulating in the sum type V with ops' arithmetic: the argument type for
// numbers (integers wrap like Java's (int)(a + b); FLOAT rounds to float32 every step) and
// DECIMAL(38, s) for DECIMAL(p, s), whose plus and minus turn NULL beyond 38 digits.
//
// Without retraction it is Flink's SumAggFunction: the sum starts NULL, a NULL argument keeps
// it, a non-NULL argument replaces a NULL sum (so a DECIMAL sum that overflowed to NULL
// silently restarts from the next argument) and is added to any other. With retraction it is
// SumWithRetractAggFunction: a count of non-NULL arguments is kept too, a retraction of x
// subtracts x (from 0 when the sum is NULL), and the value is NULL whenever the count is 0.
//
// Partial state, as Flink's accumulator row holds it: sum (nullable), and with retraction
// count (BIGINT). Merging a partial row follows mergeExpressions: a NULL partial sum keeps the
// sum, a NULL sum takes the partial one, else they are added (DECIMAL overflow: NULL, and the
// next non-NULL partial sum restarts it); counts are added.
//
// The accumulators are its specializations numSumAcc and decSumAcc (kernels_gen.go), whose
// per-row methods are generated from the ones marked
// kernels:specialize (go generate).
type sumAcc[V comparable, O values.Arith[V]] struct {
	col     int
	retract bool
	typ     engine.Type // the sum type, nullable
	ops     O
	st      []sumState[V] // per group
	rowValues[V]
}

// sumState is one group's SUM accumulator, a sum and one word of bookkeeping: n holds the count
// of non-NULL arguments accumulated minus retracted (n >> 1, read with retraction only) and
// whether the sum is not NULL (n & 1). Packing the flag into the count keeps a BIGINT SUM in 16
// bytes instead of 24; the count then holds ±2^62, which no stream reaches (it moves by one per row).
type sumState[V any] struct {
	sum V
	n   int64
}

func (s *sumState[V]) has() bool  { return s.n&1 != 0 }
func (s *sumState[V]) cnt() int64 { return s.n >> 1 }

// set sets the sum and whether it is not NULL, keeping the count.
func (s *sumState[V]) set(sum V, has bool) {
	s.sum = sum
	s.n &^= 1
	if has {
		s.n |= 1
	}
}

// maxSumCount bounds the counts a sumState holds (±2^62).
const maxSumCount = 1<<62 - 1

func (a *sumAcc[V, O]) WarmGroups(gids []int32) { a.warmed = warm(a.st, gids) }
func (a *sumAcc[V, O]) Grow(n int)              { a.st = scratch.Extend(a.st, n) }
func (a *sumAcc[V, O]) Reset(g int32)           { a.st[g] = sumState[V]{} }
func (a *sumAcc[V, O]) Bytes() int64 {
	var zero sumState[V]
	return int64(cap(a.st)) * int64(sizeOf(zero))
}

//kernels:specialize
func (a *sumAcc[V, O]) value(s *sumState[V]) (V, bool) {
	return s.sum, !s.has() || (a.retract && s.cnt() == 0)
}

//kernels:specialize
func (a *sumAcc[V, O]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	ops, st := a.ops, a.st // locals: the loop's stores cannot alias them
	ops.Bind(in, a.col, true)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		s := &st[g]
		pv, pn := a.value(s)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			v := ops.At(i)
			switch {
			case !s.has() && d > 0:
				s.set(v, true)
			case !s.has(): // 0 - v
				var zero V
				s.set(ops.Sub(zero, v))
			case d > 0:
				s.set(ops.Add(s.sum, v))
			default:
				s.set(ops.Sub(s.sum, v))
			}
			s.n += int64(d) << 1
		}
		nv, nn := a.value(s)
		a.record(i, pv, pn, nv, nn, changed)
	}
	a.ops.Unbind()
}

func (a *sumAcc[V, O]) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	return values.PutVarint(a.ops.Put(values.PutBool(dst, s.has()), s.sum), s.cnt())
}

func (a *sumAcc[V, O]) Load(src []byte, g int32) ([]byte, error) {
	has, src, err := values.GetBool(src)
	if err != nil {
		return nil, err
	}
	sum, src, err := a.ops.Get(src)
	if err != nil {
		return nil, err
	}
	cnt, src, err := values.GetVarint(src)
	if err != nil {
		return nil, err
	}
	if cnt > maxSumCount || cnt < -maxSumCount {
		return nil, fmt.Errorf("%w: SUM count %d out of range", engine.ErrData, cnt)
	}
	s := &a.st[g]
	s.n = cnt << 1
	s.set(sum, has)
	return src, nil
}

func (a *sumAcc[V, O]) PartialTypes() ([]engine.Type, error) {
	if a.retract {
		return []engine.Type{a.typ, countType}, nil
	}
	return []engine.Type{a.typ}, nil
}

func (a *sumAcc[V, O]) PartialVarBytes([]int32, []int) {}

func (a *sumAcc[V, O]) WritePartial(out []engine.OutColumn, groups []int32) error {
	sums := values.FixedSlice[V](out[0].Data)[:len(groups)]
	for j, g := range groups {
		s := &a.st[g]
		sums[j] = s.sum
		if !s.has() {
			var zero V
			sums[j] = zero
			out[0].SetNull(j)
		}
	}
	if a.retract {
		cnts := engine.OutValues[int64](&out[1])[:len(groups)]
		for j, g := range groups {
			cnts[j] = a.st[g].cnt()
		}
	}
	return nil
}

// mergeInputs checks partial rows and returns the sum column and the counts (nil without
// retraction).
func (a *sumAcc[V, O]) mergeInputs(in *engine.Batch, first int) (*engine.Column, []int64, error) {
	if !a.retract {
		if err := checkPartial(in, first, []engine.Type{a.typ}); err != nil {
			return nil, nil, err
		}
		return &in.Cols[first], nil, nil
	}
	if err := checkPartial(in, first, []engine.Type{a.typ, countType}, 1); err != nil { // Flink never writes a NULL count
		return nil, nil, err
	}
	return &in.Cols[first], engine.Values[int64](&in.Cols[first+1], in.Len), nil
}

//kernels:specialize
func (a *sumAcc[V, O]) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	col, cnts, err := a.mergeInputs(in, first)
	if err != nil {
		return err
	}
	ops, st := a.ops, a.st
	ops.Bind(in, first, false)
	for i, g := range a.rows(in.Len, gids) {
		s := &st[g]
		pv, pn := a.value(s)
		if !col.IsNull(i) {
			if v := ops.At(i); s.has() {
				s.set(ops.Add(s.sum, v))
			} else {
				s.set(v, true)
			}
		}
		if cnts != nil {
			s.n += cnts[i] << 1
		}
		nv, nn := a.value(s)
		a.record(i, pv, pn, nv, nn, changed)
	}
	a.ops.Unbind()
	return nil
}
