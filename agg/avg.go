package agg

import "github.com/ferrystream/ferry/engine"

// avgAcc is AVG over a numeric type T with a sum of type S (Flink's AvgAggFunction: BIGINT for
// integer arguments, DOUBLE for FLOAT and DOUBLE) and a count of non-NULL arguments. The value
// is NULL when the count is 0, else sum / count — Java long division truncating toward zero for
// integers — cast back to T. The same function serves append-only and retracting input.
type avgAcc[T number, S int64 | float64] struct {
	col int
	sum []S
	cnt []int64
	rowValues[T]
}

func (a *avgAcc[T, S]) grow(n int)    { a.sum, a.cnt = extend(a.sum, n), extend(a.cnt, n) }
func (a *avgAcc[T, S]) reset(g int32) { a.sum[g], a.cnt[g] = 0, 0 }
func (a *avgAcc[T, S]) bytes() int64  { return int64(cap(a.sum))*8 + int64(cap(a.cnt))*8 }

func (a *avgAcc[T, S]) write(out *engine.OutColumn, src []int32, usePrev []bool) {
	a.rowValues.write(out, src, usePrev)
}

func (a *avgAcc[T, S]) value(g int32) (T, bool) {
	c := a.cnt[g]
	if c == 0 {
		return 0, true
	}
	return T(a.sum[g] / S(c)), false
}

func (a *avgAcc[T, S]) fold(in *engine.Batch, gids []int32, changed []bool) {
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
			if engine.IsAccumulate(kinds[i]) {
				a.sum[g] += S(vals[i])
				a.cnt[g]++
			} else {
				a.sum[g] -= S(vals[i])
				a.cnt[g]--
			}
		}
		nv, nn := a.value(g)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *avgAcc[T, S]) save(dst []byte, g int32) []byte {
	return putVarint(putScalar(dst, a.sum[g]), a.cnt[g])
}

func (a *avgAcc[T, S]) load(src []byte, g int32) ([]byte, error) {
	var err error
	if a.sum[g], src, err = getScalar[S](src); err != nil {
		return nil, err
	}
	a.cnt[g], src, err = getVarint(src)
	return src, err
}
