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
	sum     []T
	has     []bool // sum is not NULL
	cnt     []int64
	rowValues[T]
}

func (a *sumAcc[T]) grow(n int) {
	a.sum, a.has, a.cnt = extend(a.sum, n), extend(a.has, n), extend(a.cnt, n)
}

func (a *sumAcc[T]) reset(g int32) { a.sum[g], a.has[g], a.cnt[g] = 0, false, 0 }

func (a *sumAcc[T]) bytes() int64 {
	return int64(cap(a.sum))*8 + int64(cap(a.has)) + int64(cap(a.cnt))*8
}

func (a *sumAcc[T]) write(out *engine.OutColumn, src []int32, usePrev []bool) {
	a.rowValues.write(out, src, usePrev)
}

func (a *sumAcc[T]) value(g int32) (T, bool) {
	if a.retract {
		return a.sum[g], a.cnt[g] == 0
	}
	return a.sum[g], !a.has[g]
}

func (a *sumAcc[T]) fold(in *engine.Batch, gids []int32, changed []bool) {
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	kinds := in.Kinds[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv, pn := a.value(g)
		if !col.IsNull(i) {
			v := vals[i]
			if engine.IsAccumulate(kinds[i]) {
				if a.has[g] {
					a.sum[g] += v
				} else {
					a.sum[g], a.has[g] = v, true
				}
				a.cnt[g]++
			} else {
				if a.has[g] {
					a.sum[g] -= v
				} else {
					a.sum[g], a.has[g] = 0-v, true
				}
				a.cnt[g]--
			}
		}
		nv, nn := a.value(g)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *sumAcc[T]) save(dst []byte, g int32) []byte {
	dst = putBool(dst, a.has[g])
	dst = putScalar(dst, a.sum[g])
	return putVarint(dst, a.cnt[g])
}

func (a *sumAcc[T]) load(src []byte, g int32) ([]byte, error) {
	var err error
	if a.has[g], src, err = getBool(src); err != nil {
		return nil, err
	}
	if a.sum[g], src, err = getScalar[T](src); err != nil {
		return nil, err
	}
	a.cnt[g], src, err = getVarint(src)
	return src, err
}
