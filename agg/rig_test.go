package agg

import (
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// rig drives one accumulator directly, without an operator: a one-column input (the call's
// argument) and group ids chosen by the test. The partial-state tests use it to fold rows, read
// values, write partial state and merge it.
type rig struct {
	t      *testing.T
	fn     string
	spec   *Spec
	acc    kernels.Accumulator
	result engine.Type
	groups int
}

// newRig builds the accumulator of fn (COUNT, COUNT(*), SUM, SUM0, AVG, MIN, MAX) over an
// argument of type typ, with or without retraction, for groups [0, groups).
func newRig(t *testing.T, fn, typ string, retract bool, groups int) *rig {
	t.Helper()
	call := AggCall{Func: fn, Args: []int{0}, Retract: retract}
	if fn == "COUNT(*)" {
		call = AggCall{Func: "COUNT", Retract: retract}
	}
	spec := mustParse(&testSpec{MaxParallelism: 128, Keys: []int{},
		Input: bigintInput("v:" + typ), Aggs: []AggCall{call}, NeedRetraction: retract})
	acc, field, err := newCall(0, spec.Aggs[0], spec)
	if err != nil {
		t.Fatal(err)
	}
	acc.Grow(groups)
	return &rig{t: t, fn: fn, spec: spec, acc: acc, result: field.Type, groups: groups}
}

// fold folds rows (argument values) into groups gids, accumulating where acts[i] > 0 and
// retracting where acts[i] < 0; it returns the rows' values before and after (2i, 2i+1).
func (r *rig) fold(vals []any, gids []int32, acts []int8, opt enginetest.Options) []any {
	rows := make([][]any, len(vals))
	for i, v := range vals {
		rows[i] = []any{v}
	}
	b := enginetest.Batch(r.spec.InputTypes, rows, make([]engine.RowKind, len(vals)), opt)
	r.acc.Fold(b, gids, acts, make([]bool, len(vals)))
	return r.recorded(len(vals))
}

// recorded reads the 2n values the last fold or merge recorded.
func (r *rig) recorded(n int) []any {
	pick := make([]int32, 2*n)
	for j := range pick {
		pick[j] = int32(j)
	}
	return r.read(pick)
}

func (r *rig) read(pick []int32) []any {
	r.t.Helper()
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	vb := []int{0}
	if v, ok := r.acc.(kernels.VarOutput); ok {
		vb[0] = v.VarBytes(pick)
	}
	if err := out.Init([]engine.Type{r.result}, len(pick), vb); err != nil {
		r.t.Fatal(err)
	}
	if len(pick) == 0 {
		return nil
	}
	r.acc.Write(&out.Cols[0], pick)
	out.Finish()
	var vals []any
	for _, row := range enginetest.Rows(out) {
		vals = append(vals, row.Values[0])
	}
	return vals
}

// values returns the current value of each group.
func (r *rig) values() []any {
	gids := make([]int32, r.groups)
	for g := range gids {
		gids[g] = int32(g)
	}
	after := r.fold(make([]any, r.groups), gids, make([]int8, r.groups), enginetest.Options{})
	vals := make([]any, r.groups)
	for g := range vals {
		vals[g] = after[2*g+1]
	}
	return vals
}

// partial writes the partial state of groups and returns it decoded, one row per group.
func (r *rig) partial(groups []int32) ([]engine.Type, [][]any) {
	r.t.Helper()
	types, err := r.acc.PartialTypes()
	if err != nil {
		r.t.Fatal(err)
	}
	vb := make([]int, len(types))
	r.acc.PartialVarBytes(groups, vb)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if err := out.Init(types, len(groups), vb); err != nil {
		r.t.Fatal(err)
	}
	if len(groups) == 0 {
		return types, nil
	}
	if err := r.acc.WritePartial(out.Cols[:len(types)], groups); err != nil {
		r.t.Fatal(err)
	}
	out.Finish()
	var rows [][]any
	for _, row := range enginetest.Rows(out) {
		rows = append(rows, row.Values)
	}
	return types, rows
}

// merge merges partial rows into groups gids; with lead > 0 the partial columns follow that
// many BIGINT columns (as a global aggregate's input puts its keys first). It returns the
// rows' values before and after.
func (r *rig) merge(types []engine.Type, rows [][]any, gids []int32, lead int, rnd *rand.Rand) ([]any, error) {
	all := make([]engine.Type, lead, lead+len(types))
	for k := range all {
		all[k] = engine.Type{ID: engine.BigInt}
	}
	all = append(all, types...)
	full := make([][]any, len(rows))
	for i, row := range rows {
		full[i] = make([]any, lead, len(all))
		for k := range full[i] {
			full[i][k] = int64(i)
		}
		full[i] = append(full[i], row...)
	}
	b := enginetest.Batch(all, full, make([]engine.RowKind, len(rows)), enginetest.Options{Offset: rnd.IntN(3), Garbage: rnd})
	if err := r.acc.Merge(b, lead, gids, make([]bool, len(rows))); err != nil {
		return nil, err
	}
	return r.recorded(len(rows)), nil
}
