package agg

import "github.com/ferrystream/ferry/engine"

// avgAcc is AVG over a numeric type T with a sum of type S (Flink's AvgAggFunction: BIGINT for
// integer arguments, DOUBLE for FLOAT and DOUBLE) and a count of non-NULL arguments. The value
// is NULL when the count is 0, else sum / count — Java long division truncating toward zero for
// integers — cast back to T. The same function serves append-only and retracting input.
type avgAcc[T number, S int64 | float64] struct {
	col int
	st  []avgState[S] // per group
	rowValues[T]
}

// avgState is one group's AVG accumulator.
type avgState[S int64 | float64] struct {
	sum S
	cnt int64
}

func (a *avgAcc[T, S]) Grow(n int)    { a.st = extend(a.st, n) }
func (a *avgAcc[T, S]) Reset(g int32) { a.st[g] = avgState[S]{} }
func (a *avgAcc[T, S]) Bytes() int64  { return int64(cap(a.st)) * 16 }

func value[T number, S int64 | float64](s *avgState[S]) (T, bool) {
	if s.cnt == 0 {
		return 0, true
	}
	return T(s.sum / S(s.cnt)), false
}

func (a *avgAcc[T, S]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
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
	return putVarint(putScalar(dst, a.st[g].sum), a.st[g].cnt)
}

func (a *avgAcc[T, S]) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.sum, src, err = getScalar[S](src); err != nil {
		return nil, err
	}
	s.cnt, src, err = getVarint(src)
	return src, err
}
