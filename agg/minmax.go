package agg

import "github.com/ferrystream/ferry/engine"

// minMaxAcc is MIN or MAX without retraction (Flink's declarative Min/MaxAggFunction): the
// value starts NULL, NULL arguments are ignored, and a new argument replaces the value when it
// is strictly smaller (MIN) or larger (MAX) under Java's primitive comparison — so NaN never
// replaces a value, and -0.0 and 0.0 keep whichever came first. Retractions are ignored, as
// Flink's empty retract expressions do; the planner only picks this variant for inputs whose
// retractions cannot change the result.
type minMaxAcc[T number] struct {
	col int
	max bool
	val []T
	has []bool
	rowValues[T]
}

func (a *minMaxAcc[T]) grow(n int)    { a.val, a.has = extend(a.val, n), extend(a.has, n) }
func (a *minMaxAcc[T]) reset(g int32) { a.val[g], a.has[g] = 0, false }
func (a *minMaxAcc[T]) bytes() int64  { return int64(cap(a.val))*8 + int64(cap(a.has)) }

func (a *minMaxAcc[T]) write(out *engine.OutColumn, src []int32, usePrev []bool) {
	a.rowValues.write(out, src, usePrev)
}

func (a *minMaxAcc[T]) fold(in *engine.Batch, gids []int32, changed []bool) {
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	kinds := in.Kinds[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv, pn := a.val[g], !a.has[g]
		if !col.IsNull(i) && engine.IsAccumulate(kinds[i]) {
			if v := vals[i]; pn || (a.max && v > pv) || (!a.max && v < pv) {
				a.val[g], a.has[g] = v, true
			}
		}
		a.record(i, pv, pn, a.val[g], !a.has[g], changed)
	}
}

func (a *minMaxAcc[T]) save(dst []byte, g int32) []byte {
	return putScalar(putBool(dst, a.has[g]), a.val[g])
}

func (a *minMaxAcc[T]) load(src []byte, g int32) ([]byte, error) {
	var err error
	if a.has[g], src, err = getBool(src); err != nil {
		return nil, err
	}
	a.val[g], src, err = getScalar[T](src)
	return src, err
}
