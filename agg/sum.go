package agg

import "github.com/ferrystream/ferry/engine"

// sumAcc is SUM over a numeric type T, accumulating in T itself (integers wrap like Java's
// (int)(a + b); FLOAT rounds to float32 every step).
//
// Without retraction it is Flink's SumAggFunction: the sum starts NULL, a NULL argument keeps
// it, the first non-NULL argument replaces it. With retraction it is SumWithRetractAggFunction:
// a count of non-NULL arguments is kept too, a retraction of x subtracts x (from 0 when the sum
// is NULL), and the value is NULL whenever the count is 0.
type sumAcc[T number] struct {
	col     int
	retract bool
	st      []sumState[T] // per group
	rowValues[T]
}

// sumState is one group's SUM accumulator; one struct keeps a group's fields in one cache line.
type sumState[T number] struct {
	sum T
	cnt int64
	has bool // sum is not NULL
}

func (a *sumAcc[T]) Grow(n int)    { a.st = extend(a.st, n) }
func (a *sumAcc[T]) Reset(g int32) { a.st[g] = sumState[T]{} }
func (a *sumAcc[T]) Bytes() int64  { return int64(cap(a.st)) * 24 }

func (a *sumAcc[T]) value(s *sumState[T]) (T, bool) {
	if a.retract {
		return s.sum, s.cnt == 0
	}
	return s.sum, !s.has
}

func (a *sumAcc[T]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
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
		pv, pn := a.value(s)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			v := vals[i]
			if d > 0 {
				if s.has {
					s.sum += v
				} else {
					s.sum, s.has = v, true
				}
				s.cnt++
			} else {
				if s.has {
					s.sum -= v
				} else {
					s.sum, s.has = 0-v, true
				}
				s.cnt--
			}
		}
		nv, nn := a.value(s)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *sumAcc[T]) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	return putVarint(putScalar(putBool(dst, s.has), s.sum), s.cnt)
}

func (a *sumAcc[T]) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.has, src, err = getBool(src); err != nil {
		return nil, err
	}
	if s.sum, src, err = getScalar[T](src); err != nil {
		return nil, err
	}
	s.cnt, src, err = getVarint(src)
	return src, err
}
