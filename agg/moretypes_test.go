package agg

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// Hand-checked changelogs of MIN/MAX over BOOLEAN and TIMESTAMP(p > 3), SINGLE_VALUE and
// BINARY/VARBINARY keys, each also against the reference model, at every batch size of
// TestGroupAggregateChangelogs.
func TestMoreTypesChangelogs(t *testing.T) {
	ts := func(ms int64, ns int32) enginetest.Timestamp { return enginetest.Timestamp{Millis: ms, Nanos: ns} }
	cases := []changelogCase{
		{
			name: "MIN/MAX over BOOLEAN: false < true, NULL ignored",
			spec: testSpec{Input: bigintInput("k", "b:BOOLEAN"), Keys: []int{0}, GenerateUpdateBefore: true,
				Aggs: []AggCall{{Func: "MIN", Args: []int{1}}, {Func: "MAX", Args: []int{1}}}},
			in:    [][]any{{int64(1), nil}, {int64(1), true}, {int64(1), false}, {int64(1), true}, {int64(2), false}},
			kinds: []engine.RowKind{I, I, I, I, I},
			want: []string{"+I[1, null, null]", "-U[1, null, null]", "+U[1, true, true]", "-U[1, true, true]", "+U[1, false, true]",
				"+I[2, false, false]"},
		},
		{
			name: "MIN/MAX with retraction over BOOLEAN",
			spec: testSpec{Input: bigintInput("k", "b:BOOLEAN"), Keys: []int{0}, NeedRetraction: true, GenerateUpdateBefore: true,
				Aggs: []AggCall{{Func: "MIN", Args: []int{1}, Retract: true}, {Func: "MAX", Args: []int{1}, Retract: true}}},
			in:    [][]any{{int64(1), true}, {int64(1), false}, {int64(1), false}, {int64(1), true}, {int64(1), nil}},
			kinds: []engine.RowKind{I, I, D, D, I},
			want: []string{"+I[1, true, true]", "-U[1, true, true]", "+U[1, false, true]", "-U[1, false, true]", "+U[1, true, true]",
				"-D[1, true, true]", "+I[1, null, null]"},
		},
		{
			name: "MIN/MAX over TIMESTAMP(6): nanoseconds of the millisecond order equal milliseconds",
			spec: testSpec{Input: bigintInput("k", "t:TIMESTAMP(6)"), Keys: []int{0},
				Aggs: []AggCall{{Func: "MIN", Args: []int{1}}, {Func: "MAX", Args: []int{1}}}},
			in:    [][]any{{int64(1), ts(5, 500)}, {int64(1), ts(5, 499)}, {int64(1), ts(5, 501)}, {int64(1), ts(4, 999999)}},
			kinds: []engine.RowKind{I, I, I, I},
			want: []string{"+I[1, ts(5,500), ts(5,500)]",
				"+U[1, ts(5,499), ts(5,500)]",
				"+U[1, ts(5,499), ts(5,501)]",
				"+U[1, ts(4,999999), ts(5,501)]"},
		},
		{
			name: "MIN/MAX with retraction over TIMESTAMP(9)",
			spec: testSpec{Input: bigintInput("k", "t:TIMESTAMP(9)"), Keys: []int{0}, NeedRetraction: true,
				Aggs: []AggCall{{Func: "MIN", Args: []int{1}, Retract: true}, {Func: "MAX", Args: []int{1}, Retract: true}}},
			in:    [][]any{{int64(1), ts(5, 1)}, {int64(1), ts(5, 2)}, {int64(1), ts(5, 1)}, {int64(1), ts(5, 2)}},
			kinds: []engine.RowKind{I, I, D, D},
			want: []string{"+I[1, ts(5,1), ts(5,1)]",
				"+U[1, ts(5,1), ts(5,2)]",
				"+U[1, ts(5,2), ts(5,2)]",
				"-D[1, ts(5,2), ts(5,2)]"},
		},
		{
			name: "SINGLE_VALUE: one row per key, NULL a value, retraction back to NULL and a new value",
			spec: testSpec{Input: bigintInput("k", "v", "s:VARCHAR"), Keys: []int{0}, NeedRetraction: true, GenerateUpdateBefore: true,
				Aggs: []AggCall{{Func: "SINGLE_VALUE", Args: []int{1}, Retract: true}, {Func: "SINGLE_VALUE", Args: []int{2}, Retract: true}, {Func: "COUNT"}}},
			in:    [][]any{{int64(1), int64(5), "a"}, {int64(2), nil, nil}, {int64(1), int64(5), "a"}, {int64(1), int64(6), "bbbbbbbbbbbb"}},
			kinds: []engine.RowKind{I, I, U, A},
			want:  []string{`+I[1, 5, "a", 1]`, "+I[2, null, null, 1]", `-D[1, 5, "a", 1]`, `+I[1, 6, "bbbbbbbbbbbb", 1]`},
		},
		{
			name: "BINARY and VARBINARY keys, NULL included; COUNT over VARBINARY",
			spec: testSpec{Input: bigintInput("k:BINARY(3)", "b:VARBINARY(20)"), Keys: []int{0, 1},
				Aggs: []AggCall{{Func: "COUNT", Args: []int{1}}, {Func: "COUNT"}}},
			in: [][]any{{"abc", "0123456789"}, {nil, nil}, {"abc", "0123456789"},
				{"abd", ""}, {"abc", "0123456788"}},
			kinds: []engine.RowKind{I, I, I, I, I},
			want: []string{`+I["abc", "0123456789", 1, 1]`, "+I[null, null, 0, 1]", `+U["abc", "0123456789", 2, 2]`,
				`+I["abd", "", 1, 1]`, `+I["abc", "0123456788", 1, 1]`},
		},
	}
	runChangelogCases(t, cases)
}

// TestSingleValueThrows checks that SINGLE_VALUE's second row fails the call with Flink's
// message, as a QueryError, with no output, in every single-phase operator and in the global
// aggregate's merge.
func TestSingleValueThrows(t *testing.T) {
	for _, retractSecond := range []bool{false, true} {
		for _, mini := range []bool{false, true} {
			spec := mustParse(&testSpec{Kind: "group_aggregate", Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true,
				Aggs: []AggCall{{Func: "SINGLE_VALUE", Args: []int{1}, Retract: true}}, MiniBatch: mini, MaxParallelism: 128})
			var op engine.KeyedOperator
			var err error
			if mini {
				op, err = NewMiniBatchGroupAggregate(spec)
			} else {
				op, err = NewGroupAggregate(spec)
			}
			if err != nil {
				t.Fatal(err)
			}
			rows := [][]any{{int64(1), int64(1)}, {int64(2), int64(1)}, {int64(1), int64(2)}}
			kinds := []engine.RowKind{I, I, I}
			if retractSecond { // count 2, then a retraction: Flink throws in retract
				rows = append(rows[:2], []any{int64(2), int64(7)}, []any{int64(2), int64(7)})
				kinds = []engine.RowKind{I, I, I, D}
			}
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			b := enginetest.Batch(spec.InputTypes, rows, kinds, enginetest.Options{})
			_, err = op.Process(engine.Of(0, 1, b), 0, out)
			var q *engine.QueryError
			if !errors.As(err, &q) || q.Msg != "SingleValueAggFunction received more than one element." || !errors.Is(err, engine.ErrQuery) {
				t.Fatalf("mini %v retract %v: err %v, want Flink's TableRuntimeException message", mini, retractSecond, err)
			}
			if out.Len != 0 {
				t.Fatalf("mini %v: %d rows emitted with the error", mini, out.Len)
			}
		}
	}
}

// runChangelogCases runs hand-checked changelog cases as TestGroupAggregateChangelogs does: the
// operator at batch sizes 1, 3, random and 4096, and the reference model.
func runChangelogCases(t *testing.T, cases []changelogCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Kind, c.spec.MaxParallelism = "group_aggregate", 128
			spec := mustParse(&c.spec)
			sc := scenario{spec: spec, rows: c.in, kinds: c.kinds, times: c.times}
			r := rand.New(rand.NewPCG(1, 1))
			for _, size := range []func() int{func() int { return 1 }, func() int { return 3 }, func() int { return 1 + r.IntN(4) }, func() int { return 4096 }} {
				var gs []string
				for _, row := range runOperator(t, sc, size, 0, nil) {
					gs = append(gs, row.String())
				}
				if strings.Join(gs, "\n") != strings.Join(c.want, "\n") {
					t.Fatalf("got\n%s\nwant\n%s", strings.Join(gs, "\n"), strings.Join(c.want, "\n"))
				}
			}
			ref := newRefGroupAgg(spec)
			var rs []string
			for i, row := range c.in {
				for _, o := range ref.process(row, c.kinds[i], 0) {
					rs = append(rs, o.String())
				}
			}
			if strings.Join(rs, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("reference model disagrees:\n%s", strings.Join(rs, "\n"))
			}
		})
	}
}
