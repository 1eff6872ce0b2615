package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// welfordAcc is Flink's internal $WELFORD_M2 over a number type T (WelfordM2AggFunction's
// NumberFunction): the sum of squared deviations that STDDEV_POP, STDDEV_SAMP, VAR_POP and
// VAR_SAMP are reduced to (Calcite's AggregateReduceFunctionsRule as Flink patches it, next to a
// COUNT of the same argument). One function for insert-only and retracting input. Its
// accumulator (n BIGINT, mean DOUBLE, m2 DOUBLE) starts at zeros; with the argument x as a
// double (Java's Number.doubleValue), NULL ignored:
//
//	accumulate: n += 1; if n > 0 { delta := x - mean; mean += delta / n; m2 += delta * (x - mean) }
//	retract:    n -= 1; if n <= 0 { if n == 0 { mean, m2 = 0, 0 } } else
//	            { delta2 := x - mean; mean -= delta2 / n; m2 -= (x - mean) * delta2 }
//
// and the value is NULL when n <= 0 or m2 < 0, else m2. Every product and quotient is rounded
// to a double before it is used (float64 conversions), as Java's strict IEEE arithmetic does;
// no fused multiply-add. Its partial state crosses in two-phase plans as 24 bytes (PutWelford).
type welfordAcc[T values.Number] struct {
	col int
	st  []welfordState // per group
	rowValues[float64]
}

type welfordState struct {
	n        int64
	mean, m2 float64
}

func (a *welfordAcc[T]) Grow(n int)            { a.st = scratch.Extend(a.st, n) }
func (a *welfordAcc[T]) Reset(g int32)         { a.st[g] = welfordState{} }
func (a *welfordAcc[T]) Bytes() int64          { return int64(cap(a.st)) * int64(sizeOf(welfordState{})) }
func (s *welfordState) value() (float64, bool) { return s.m2, s.n <= 0 || s.m2 < 0 }

func (s *welfordState) accumulate(x float64) {
	s.n++
	if s.n <= 0 {
		return // keeps counting, aligned with the COUNT next to it
	}
	delta := x - s.mean
	s.mean += float64(delta / float64(s.n))
	delta2 := x - s.mean
	s.m2 += float64(delta * delta2)
}

func (s *welfordState) retract(x float64) {
	s.n--
	if s.n <= 0 {
		if s.n == 0 {
			s.mean, s.m2 = 0, 0
		}
		return
	}
	delta2 := x - s.mean
	s.mean -= float64(delta2 / float64(s.n))
	delta := x - s.mean
	s.m2 -= float64(delta * delta2)
}

func (a *welfordAcc[T]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.value()
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if d > 0 {
				s.accumulate(float64(vals[i]))
			} else {
				s.retract(float64(vals[i]))
			}
		}
		nv, nn := s.value()
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *welfordAcc[T]) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	dst = values.PutVarint(dst, s.n)
	dst = values.PutScalar(dst, s.mean)
	return values.PutScalar(dst, s.m2)
}

func (a *welfordAcc[T]) Load(src []byte, g int32) ([]byte, error) {
	n, src, err := values.GetVarint(src)
	if err != nil {
		return nil, err
	}
	mean, src, err := values.GetScalar[float64](src)
	if err != nil {
		return nil, err
	}
	m2, src, err := values.GetScalar[float64](src)
	if err != nil {
		return nil, err
	}
	a.st[g] = welfordState{n: n, mean: mean, m2: m2}
	return src, nil
}

// welfordPartial is the accumulator's one partial field, Flink's nested row STRUCTURED<n BIGINT,
// mean DOUBLE, m2 DOUBLE> (dataview_welford.go).
var welfordPartial = []engine.Type{dataview.WelfordType}

func (a *welfordAcc[T]) PartialTypes() ([]engine.Type, error) { return welfordPartial, nil }

func (a *welfordAcc[T]) PartialVarBytes(groups []int32, dst []int) {
	dst[0] = dataview.WelfordSize * len(groups)
}

func (a *welfordAcc[T]) WritePartial(out []engine.OutColumn, groups []int32) error {
	col := &out[0]
	for j, g := range groups {
		s := &a.st[g]
		at := dataview.WelfordSize * j
		col.Offs[j] = int32(at)
		dataview.PutWelford(col.Data[at:], s.n, s.mean, s.m2)
	}
	col.Offs[len(groups)] = int32(dataview.WelfordSize * len(groups))
	return nil
}

// Merge merges partial rows as Flink's merge does, called once per partial row (a one-element
// iterable): a partial with n <= 0 only adds its n, at the end; into an empty accumulator a
// partial is copied; else the two combine (Chan et al.), each step rounded to a double.
func (a *welfordAcc[T]) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, welfordPartial, 0); err != nil {
		return err
	}
	col := &in.Cols[first]
	for i := range in.Len {
		if n := len(col.Bytes(i)); n != dataview.WelfordSize {
			return fmt.Errorf("%w: a $WELFORD_M2 partial of %d bytes at row %d, want %d", engine.ErrData, n, i, dataview.WelfordSize)
		}
	}
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.value()
		n, mean, m2 := dataview.Welford(col.Bytes(i))
		s.merge(welfordState{n: n, mean: mean, m2: m2})
		nv, nn := s.value()
		a.record(i, pv, pn, nv, nn, changed)
	}
	return nil
}

func (s *welfordState) merge(o welfordState) {
	var negative int64
	switch {
	case o.n <= 0:
		negative = o.n
	case s.n == 0:
		*s = o
	default:
		n := s.n + o.n
		deltaMean := o.mean - s.mean
		mean := s.mean + float64(float64(float64(o.n)/float64(n))*deltaMean)
		m2 := float64(s.m2+o.m2) + float64(float64(float64(float64(float64(s.n)*float64(o.n))/float64(n))*deltaMean)*deltaMean)
		s.n, s.mean, s.m2 = n, mean, m2
	}
	s.n += negative
	if s.n <= 0 {
		s.mean, s.m2 = 0, 0
	}
}

// welfordCalls holds $WELFORD_M2 per number type; DECIMAL (Flink's DecimalFunction, which reads
// DecimalDataUtils.doubleValue) is not native.
var welfordCalls = map[engine.TypeID]func(col int) Accumulator{
	engine.TinyInt:  func(col int) Accumulator { return &welfordAcc[int8]{col: col} },
	engine.SmallInt: func(col int) Accumulator { return &welfordAcc[int16]{col: col} },
	engine.Int:      func(col int) Accumulator { return &welfordAcc[int32]{col: col} },
	engine.BigInt:   func(col int) Accumulator { return &welfordAcc[int64]{col: col} },
	engine.Float:    func(col int) Accumulator { return &welfordAcc[float32]{col: col} },
	engine.Double:   func(col int) Accumulator { return &welfordAcc[float64]{col: col} },
}
