package agg

import "github.com/ferrystream/ferry/engine"

// sum0Acc is Calcite's $SUM0 (Flink's Sum0AggFunction): a sum in the argument type T that starts
// at 0 rather than NULL, ignores NULL arguments, subtracts retracted ones and is never NULL.
// Flink plans it when AggregateReduceFunctionsRule rewrites SUM and AVG into SUM0 and COUNT.
type sum0Acc[T number] struct {
	col int
	sum []T
	rowValues[T]
}

func (a *sum0Acc[T]) Grow(n int)    { a.sum = extend(a.sum, n) }
func (a *sum0Acc[T]) Reset(g int32) { a.sum[g] = 0 }
func (a *sum0Acc[T]) Bytes() int64  { return int64(cap(a.sum)) * 8 }

func (a *sum0Acc[T]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv := a.sum[g]
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if d > 0 {
				a.sum[g] += vals[i]
			} else {
				a.sum[g] -= vals[i]
			}
		}
		a.record(i, pv, false, a.sum[g], false, changed)
	}
}

func (a *sum0Acc[T]) Save(dst []byte, g int32) []byte { return putScalar(dst, a.sum[g]) }

func (a *sum0Acc[T]) Load(src []byte, g int32) ([]byte, error) {
	var err error
	a.sum[g], src, err = getScalar[T](src)
	return src, err
}
