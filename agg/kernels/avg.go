package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// AVG is Flink's AvgAggFunction, the same function for append-only and retracting input: a sum
// and a BIGINT count of non-NULL arguments, both starting at 0; the value is NULL when the count
// is 0, else sum / count cast to the result type. Its accumulator fields (partial state) are
// sum and count; merging a partial row adds both (mergeExpressions: adjustedPlus(sum, partial
// sum), count + partial count).
//
// Numbers and DECIMAL have one kernel each because their state differs: the numeric sum is a
// BIGINT or DOUBLE and the value is computed when read, while the DECIMAL sum can turn NULL
// (aggDecimalPlus beyond 38 digits, or NULL + x) and its value is a 38-digit division, cached
// per group because it costs more than the rest of a row.

// avgAcc is AVG over a numeric type T with a sum of type S (BIGINT for integer arguments,
// DOUBLE for FLOAT and DOUBLE). The value is Java long division truncating toward zero for
// integers, cast back to T.
type avgAcc[T values.Number, S int64 | float64] struct {
	col     int
	sumType engine.Type   // S's SQL type
	st      []avgState[S] // per group
	rowValues[T]
}

// avgState is one group's AVG accumulator.
type avgState[S int64 | float64] struct {
	sum S
	cnt int64
}

func (a *avgAcc[T, S]) WarmGroups(gids []int32) { a.warmed = warm(a.st, gids) }
func (a *avgAcc[T, S]) Grow(n int)              { a.st = scratch.Extend(a.st, n) }
func (a *avgAcc[T, S]) Reset(g int32)           { a.st[g] = avgState[S]{} }
func (a *avgAcc[T, S]) Bytes() int64            { return int64(cap(a.st)) * 16 }

func value[T values.Number, S int64 | float64](s *avgState[S]) (T, bool) {
	if s.cnt == 0 {
		return 0, true
	}
	return T(s.sum / S(s.cnt)), false
}

func (a *avgAcc[T, S]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := value[T](s)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if d > 0 {
				s.sum += S(vals[i])
				s.cnt++
			} else {
				s.sum -= S(vals[i])
				s.cnt--
			}
		}
		nv, nn := value[T](s)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *avgAcc[T, S]) Save(dst []byte, g int32) []byte {
	return values.PutVarint(values.PutScalar(dst, a.st[g].sum), a.st[g].cnt)
}

func (a *avgAcc[T, S]) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.sum, src, err = values.GetScalar[S](src); err != nil {
		return nil, err
	}
	s.cnt, src, err = values.GetVarint(src)
	return src, err
}

func (a *avgAcc[T, S]) PartialTypes() ([]engine.Type, error) {
	return []engine.Type{a.sumType, countType}, nil
}

func (a *avgAcc[T, S]) PartialVarBytes([]int32, []int) {}

func (a *avgAcc[T, S]) WritePartial(out []engine.OutColumn, groups []int32) error {
	sums := engine.OutValues[S](&out[0])[:len(groups)]
	cnts := engine.OutValues[int64](&out[1])[:len(groups)]
	for j, g := range groups {
		sums[j], cnts[j] = a.st[g].sum, a.st[g].cnt
	}
	return nil
}

func (a *avgAcc[T, S]) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{a.sumType, countType}, 0, 1); err != nil {
		return err
	}
	sums := engine.Values[S](&in.Cols[first], in.Len)
	cnts := engine.Values[int64](&in.Cols[first+1], in.Len)
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := value[T](s)
		s.sum += sums[i]
		s.cnt += cnts[i]
		nv, nn := value[T](s)
		a.record(i, pv, pn, nv, nn, changed)
	}
	return nil
}

// decAvgAcc is AVG over DECIMAL(p, s): a decSum and a BIGINT count, which moves on after the
// sum turned NULL. The value is NULL when the count is 0 or the sum is NULL, else
// values.DecAvg: a DECIMAL(38, max(6, s)), itself NULL when the quotient needs more than 38
// digits at that scale — so for s < 6 any average of magnitude >= 10^(32+s) reads NULL.
type decAvgAcc struct {
	col     int
	up      int         // result scale - argument scale
	sumType engine.Type // DECIMAL(38, s)
	st      []decAvgState
	rowValues[values.Dec128]
}

// decAvgState is one group's accumulator and its current value: avg, valid when has (the zero
// state reads NULL, as it should).
type decAvgState struct {
	decSum
	cnt int64
	has bool // the value is not NULL
	avg values.Dec128
}

func (a *decAvgAcc) WarmGroups(gids []int32) { a.warmed = warm(a.st, gids) }
func (a *decAvgAcc) Grow(n int)              { a.st = scratch.Extend(a.st, n) }
func (a *decAvgAcc) Reset(g int32)           { a.st[g] = decAvgState{} }
func (a *decAvgAcc) Bytes() int64            { return int64(cap(a.st)) * 56 }

// update recomputes the cached value of s from its sum and count.
func (a *decAvgAcc) update(s *decAvgState) {
	s.avg, s.has = values.Dec128{}, false
	if s.cnt != 0 && !s.null {
		s.avg, s.has = values.DecAvg(s.sum, s.cnt, a.up)
	}
}

func (a *decAvgAcc) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	data := values.DecValues(col, in.Len)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.avg, !s.has
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if v := values.LoadDec(data[16*i:]); d > 0 {
				s.add(v)
			} else {
				s.sub(v)
			}
			s.cnt += int64(d)
			a.update(s)
		}
		a.record(i, pv, pn, s.avg, !s.has, changed)
	}
}

// Save writes the sum (decSum), then the count.
func (a *decAvgAcc) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	return values.PutVarint(s.save(dst), s.cnt)
}

func (a *decAvgAcc) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if src, err = s.load(src); err != nil {
		return nil, err
	}
	if s.cnt, src, err = values.GetVarint(src); err != nil {
		return nil, err
	}
	a.update(s)
	return src, nil
}

func (a *decAvgAcc) PartialTypes() ([]engine.Type, error) {
	return []engine.Type{a.sumType, countType}, nil
}

func (a *decAvgAcc) PartialVarBytes([]int32, []int) {}

// WritePartial writes the sum and the count.
func (a *decAvgAcc) WritePartial(out []engine.OutColumn, groups []int32) error {
	sums := values.FixedSlice[values.Dec128](out[0].Data)[:len(groups)]
	cnts := engine.OutValues[int64](&out[1])[:len(groups)]
	for j, g := range groups {
		a.st[g].write(&out[0], sums, j)
		cnts[j] = a.st[g].cnt
	}
	return nil
}

// Merge adds each partial sum and count.
func (a *decAvgAcc) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{a.sumType, countType}, 1); err != nil {
		return err
	}
	col := &in.Cols[first]
	data := values.DecValues(col, in.Len)
	cnts := engine.Values[int64](&in.Cols[first+1], in.Len)
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.avg, !s.has
		if col.IsNull(i) { // NULL + x is NULL
			s.null = true
		} else {
			s.add(values.LoadDec(data[16*i:]))
		}
		s.cnt += cnts[i]
		a.update(s)
		a.record(i, pv, pn, s.avg, !s.has, changed)
	}
	return nil
}
