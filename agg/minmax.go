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
	st  []minMaxState[T] // per group
	rowValues[T]
}

// minMaxState is one group's MIN or MAX accumulator.
type minMaxState[T number] struct {
	val T
	has bool // val is not NULL
}

func (a *minMaxAcc[T]) Grow(n int)    { a.st = extend(a.st, n) }
func (a *minMaxAcc[T]) Reset(g int32) { a.st[g] = minMaxState[T]{} }
func (a *minMaxAcc[T]) Bytes() int64  { return int64(cap(a.st)) * 16 }

func (a *minMaxAcc[T]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
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
		pv, pn := s.val, !s.has
		if act[i] > 0 && !col.IsNull(i) {
			if v := vals[i]; pn || (a.max && v > pv) || (!a.max && v < pv) {
				s.val, s.has = v, true
			}
		}
		a.record(i, pv, pn, s.val, !s.has, changed)
	}
}

func (a *minMaxAcc[T]) Save(dst []byte, g int32) []byte {
	return putScalar(putBool(dst, a.st[g].has), a.st[g].val)
}

func (a *minMaxAcc[T]) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.has, src, err = getBool(src); err != nil {
		return nil, err
	}
	s.val, src, err = getScalar[T](src)
	return src, err
}
