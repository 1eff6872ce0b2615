package agg

import "github.com/ferrystream/ferry/engine"

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
// per-row methods are generated from the ones marked agg:specialize.
type sumAcc[V comparable, O arithOps[V]] struct {
	col     int
	retract bool
	typ     engine.Type // the sum type, nullable
	ops     O
	st      []sumState[V] // per group
	rowValues[V]
}

// sumState is one group's SUM accumulator; one struct keeps a group's fields in one cache line.
type sumState[V any] struct {
	sum V
	cnt int64 // non-NULL arguments accumulated minus retracted (read with retraction only)
	has bool  // sum is not NULL
}

func (a *sumAcc[V, O]) warmGroups(gids []int32) { a.warmed = warm(a.st, gids) }
func (a *sumAcc[V, O]) Grow(n int)              { a.st = extend(a.st, n) }
func (a *sumAcc[V, O]) Reset(g int32)           { a.st[g] = sumState[V]{} }
func (a *sumAcc[V, O]) Bytes() int64 {
	var zero sumState[V]
	return int64(cap(a.st)) * int64(sizeOf(zero))
}

//agg:specialize
func (a *sumAcc[V, O]) value(s *sumState[V]) (V, bool) {
	return s.sum, !s.has || (a.retract && s.cnt == 0)
}

//agg:specialize
func (a *sumAcc[V, O]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	ops, st := a.ops, a.st // locals: the loop's stores cannot alias them
	ops.bind(in, a.col, true)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &st[g]
		pv, pn := a.value(s)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			v := ops.at(i)
			switch {
			case !s.has && d > 0:
				s.sum, s.has = v, true
			case !s.has: // 0 - v
				var zero V
				s.sum, s.has = ops.sub(zero, v)
			case d > 0:
				s.sum, s.has = ops.add(s.sum, v)
			default:
				s.sum, s.has = ops.sub(s.sum, v)
			}
			s.cnt += int64(d)
		}
		nv, nn := a.value(s)
		a.record(i, pv, pn, nv, nn, changed)
	}
	a.ops.unbind()
}

func (a *sumAcc[V, O]) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	return putVarint(a.ops.put(putBool(dst, s.has), s.sum), s.cnt)
}

func (a *sumAcc[V, O]) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.has, src, err = getBool(src); err != nil {
		return nil, err
	}
	if s.sum, src, err = a.ops.get(src); err != nil {
		return nil, err
	}
	s.cnt, src, err = getVarint(src)
	return src, err
}

func (a *sumAcc[V, O]) partialTypes() ([]engine.Type, error) {
	if a.retract {
		return []engine.Type{a.typ, countType}, nil
	}
	return []engine.Type{a.typ}, nil
}

func (a *sumAcc[V, O]) partialVarBytes([]int32, []int) {}

func (a *sumAcc[V, O]) writePartial(out []engine.OutColumn, groups []int32) error {
	sums := fixedSlice[V](out[0].Data)[:len(groups)]
	for j, g := range groups {
		s := &a.st[g]
		sums[j] = s.sum
		if !s.has {
			var zero V
			sums[j] = zero
			out[0].SetNull(j)
		}
	}
	if a.retract {
		cnts := engine.OutValues[int64](&out[1])[:len(groups)]
		for j, g := range groups {
			cnts[j] = a.st[g].cnt
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

//agg:specialize
func (a *sumAcc[V, O]) merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	col, cnts, err := a.mergeInputs(in, first)
	if err != nil {
		return err
	}
	a.rowValues.reset(in.Len)
	ops, st := a.ops, a.st
	ops.bind(in, first, false)
	for i, g := range gids[:in.Len] {
		if g < 0 {
			continue
		}
		s := &st[g]
		pv, pn := a.value(s)
		if !col.IsNull(i) {
			if v := ops.at(i); s.has {
				s.sum, s.has = ops.add(s.sum, v)
			} else {
				s.sum, s.has = v, true
			}
		}
		if cnts != nil {
			s.cnt += cnts[i]
		}
		nv, nn := a.value(s)
		a.record(i, pv, pn, nv, nn, changed)
	}
	a.ops.unbind()
	return nil
}
