package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// countAcc is COUNT(*) (Flink's Count1AggFunction, col < 0) or COUNT(x) (CountAggFunction):
// +1 per accumulated row, -1 per retracted row, NULL arguments ignored by COUNT(x), in Java
// long arithmetic. The value is never NULL and may go negative.
type countAcc struct {
	col int // argument column, or -1 for COUNT(*)
	cnt []int64
	rowValues[int64]
}

func (a *countAcc) WarmGroups(gids []int32) { a.warmed = warm(a.cnt, gids) }
func (a *countAcc) Grow(n int)              { a.cnt = scratch.Extend(a.cnt, n) }
func (a *countAcc) Reset(g int32)           { a.cnt[g] = 0 }
func (a *countAcc) Bytes() int64            { return int64(cap(a.cnt)) * 8 }

func (a *countAcc) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	var col *engine.Column
	if a.col >= 0 {
		col = &in.Cols[a.col]
	}
	act = act[:in.Len]
	for i, g := range a.rows(in.Len, gids) {
		c := a.cnt[g]
		n := c
		if d := act[i]; d != 0 && (col == nil || !col.IsNull(i)) {
			n += int64(d)
			a.cnt[g] = n
		}
		a.record(i, c, false, n, false, changed)
	}
}

// Records is group g's count: the record count Flink's RetractionRecordCounter reads from a
// COUNT(*).
func (a *countAcc) Records(g int32) int64 { return a.cnt[g] }

func (a *countAcc) Save(dst []byte, g int32) []byte { return values.PutVarint(dst, a.cnt[g]) }

func (a *countAcc) Load(src []byte, g int32) ([]byte, error) {
	v, rest, err := values.GetVarint(src)
	a.cnt[g] = v
	return rest, err
}

// Partial state: count (COUNT) or count1 (COUNT(*)), BIGINT; merging adds (mergeExpressions:
// count + partial count), in Java long arithmetic.

func (a *countAcc) PartialTypes() ([]engine.Type, error) { return []engine.Type{countType}, nil }
func (a *countAcc) PartialVarBytes([]int32, []int)       {}

func (a *countAcc) WritePartial(out []engine.OutColumn, groups []int32) error {
	dst := engine.OutValues[int64](&out[0])[:len(groups)]
	for j, g := range groups {
		dst[j] = a.cnt[g]
	}
	return nil
}

func (a *countAcc) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, []engine.Type{countType}, 0); err != nil {
		return err
	}
	vals := engine.Values[int64](&in.Cols[first], in.Len)
	for i, g := range a.rows(in.Len, gids) {
		c := a.cnt[g]
		a.cnt[g] = c + vals[i]
		a.record(i, c, false, a.cnt[g], false, changed)
	}
	return nil
}
