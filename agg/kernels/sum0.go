package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// $SUM0 is Calcite's zero-based sum (Flink's Sum0AggFunction), planned when
// AggregateReduceFunctionsRule rewrites SUM and AVG into $SUM0 and COUNT: a sum that starts at
// 0 rather than NULL, ignores NULL arguments and subtracts retracted ones. Its one accumulator
// field is the sum (partial state); merging a partial row adds it: cast(sum0 + partial).
//
// Numbers and DECIMAL have one kernel each because their state differs: a numeric sum is never
// NULL (8 bytes per group), while DECIMAL's aggDecimalPlus/Minus turn NULL beyond 38 digits and
// NULL + x is NULL, so a DECIMAL sum that overflowed stays NULL for the life of the group and
// its state carries that flag (and its snapshot the flag byte).

// sum0Acc is $SUM0 over a numeric type T, in T (integers wrap), never NULL.
type sum0Acc[T values.Number] struct {
	col int
	typ engine.Type // T's SQL type
	sum []T
	rowValues[T]
}

func (a *sum0Acc[T]) WarmGroups(gids []int32) { a.warmed = warm(a.sum, gids) }
func (a *sum0Acc[T]) Grow(n int)              { a.sum = scratch.Extend(a.sum, n) }
func (a *sum0Acc[T]) Reset(g int32)           { a.sum[g] = 0 }
func (a *sum0Acc[T]) Bytes() int64            { return int64(cap(a.sum)) * int64(sizeOf(T(0))) }

func (a *sum0Acc[T]) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
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

// Records is group g's sum: the record count a split DISTINCT's final aggregate reads from its
// $SUM0 of partial COUNT(*)s (a BIGINT sum; RetractionRecordCounter's getLong).
func (a *sum0Acc[T]) Records(g int32) int64 { return int64(a.sum[g]) }

func (a *sum0Acc[T]) Save(dst []byte, g int32) []byte { return values.PutScalar(dst, a.sum[g]) }

func (a *sum0Acc[T]) Load(src []byte, g int32) ([]byte, error) {
	var err error
	a.sum[g], src, err = values.GetScalar[T](src)
	return src, err
}

func (a *sum0Acc[T]) PartialTypes() ([]engine.Type, error) { return []engine.Type{a.typ}, nil }
func (a *sum0Acc[T]) PartialVarBytes([]int32, []int)       {}

func (a *sum0Acc[T]) WritePartial(out []engine.OutColumn, groups []int32) error {
	dst := engine.OutValues[T](&out[0])[:len(groups)]
	for j, g := range groups {
		dst[j] = a.sum[g]
	}
	return nil
}

func (a *sum0Acc[T]) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{a.typ}, 0); err != nil {
		return err
	}
	vals := engine.Values[T](&in.Cols[first], in.Len)
	for i, g := range a.rows(in.Len, gids) {
		pv := a.sum[g]
		a.sum[g] += vals[i]
		a.record(i, pv, false, a.sum[g], false, changed)
	}
	return nil
}

// decSum0Acc is $SUM0 over DECIMAL(p, s): a decSum, which ignores NULL arguments.
type decSum0Acc struct {
	col int
	typ engine.Type // DECIMAL(38, s)
	st  []decSum
	rowValues[values.Dec128]
}

func (a *decSum0Acc) WarmGroups(gids []int32) { a.warmed = warm(a.st, gids) }
func (a *decSum0Acc) Grow(n int)              { a.st = scratch.Extend(a.st, n) }
func (a *decSum0Acc) Reset(g int32)           { a.st[g] = decSum{} }
func (a *decSum0Acc) Bytes() int64            { return int64(cap(a.st)) * 24 }

func (a *decSum0Acc) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	col := &in.Cols[a.col]
	data := values.DecValues(col, in.Len)
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.sum, s.null
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if v := values.LoadDec(data[16*i:]); d > 0 {
				s.add(v)
			} else {
				s.sub(v)
			}
		}
		a.record(i, pv, pn, s.sum, s.null, changed)
	}
}

func (a *decSum0Acc) Save(dst []byte, g int32) []byte          { return a.st[g].save(dst) }
func (a *decSum0Acc) Load(src []byte, g int32) ([]byte, error) { return a.st[g].load(src) }
func (a *decSum0Acc) PartialTypes() ([]engine.Type, error)     { return []engine.Type{a.typ}, nil }
func (a *decSum0Acc) PartialVarBytes([]int32, []int)           {}

func (a *decSum0Acc) WritePartial(out []engine.OutColumn, groups []int32) error {
	sums := values.FixedSlice[values.Dec128](out[0].Data)[:len(groups)]
	for j, g := range groups {
		a.st[g].write(&out[0], sums, j)
	}
	return nil
}

func (a *decSum0Acc) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{a.typ}); err != nil {
		return err
	}
	col := &in.Cols[first]
	data := values.DecValues(col, in.Len)
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.sum, s.null
		if col.IsNull(i) { // NULL + x is NULL
			s.null = true
		} else {
			s.add(values.LoadDec(data[16*i:]))
		}
		a.record(i, pv, pn, s.sum, s.null, changed)
	}
	return nil
}
