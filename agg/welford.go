package agg

import (
	"fmt"

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
// no fused multiply-add. Its partial state is a STRUCTURED accumulator Ferry does not carry, so
// it runs in single-phase aggregates only.
type welfordAcc[T number] struct {
	col int
	st  []welfordState // per group
	rowValues[float64]
}

type welfordState struct {
	n        int64
	mean, m2 float64
}

func (a *welfordAcc[T]) Grow(n int)            { a.st = extend(a.st, n) }
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

func (a *welfordAcc[T]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	for i, g := range gids[:in.Len] {
		if g < 0 {
			continue
		}
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
	dst = putVarint(dst, s.n)
	dst = putScalar(dst, s.mean)
	return putScalar(dst, s.m2)
}

func (a *welfordAcc[T]) Load(src []byte, g int32) ([]byte, error) {
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	mean, src, err := getScalar[float64](src)
	if err != nil {
		return nil, err
	}
	m2, src, err := getScalar[float64](src)
	if err != nil {
		return nil, err
	}
	a.st[g] = welfordState{n: n, mean: mean, m2: m2}
	return src, nil
}

func (a *welfordAcc[T]) partialTypes() ([]engine.Type, error) {
	return nil, fmt.Errorf("%w: $WELFORD_M2's accumulator (n, mean, m2) in a partial row: not native yet", engine.ErrUnsupported)
}

func (a *welfordAcc[T]) partialVarBytes([]int32, []int) {}
func (a *welfordAcc[T]) writePartial([]engine.OutColumn, []int32) error {
	return a.merge(nil, 0, nil, nil)
}
func (a *welfordAcc[T]) merge(*engine.Batch, int, []int32, []bool) error {
	_, err := a.partialTypes()
	return err
}

// welfordCalls holds $WELFORD_M2 per number type; DECIMAL (Flink's DecimalFunction, which reads
// DecimalDataUtils.doubleValue) is not native.
var welfordCalls = map[engine.TypeID]func(col int) accumulator{
	engine.TinyInt:  func(col int) accumulator { return &welfordAcc[int8]{col: col} },
	engine.SmallInt: func(col int) accumulator { return &welfordAcc[int16]{col: col} },
	engine.Int:      func(col int) accumulator { return &welfordAcc[int32]{col: col} },
	engine.BigInt:   func(col int) accumulator { return &welfordAcc[int64]{col: col} },
	engine.Float:    func(col int) accumulator { return &welfordAcc[float32]{col: col} },
	engine.Double:   func(col int) accumulator { return &welfordAcc[float64]{col: col} },
}
