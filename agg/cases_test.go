package agg

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// Hand-checked changelogs for the rules of Flink's GroupAggFunction (docs/group-aggregate.md,
// sections "Per row: GroupAggFunction", "The record counter" and "Aggregate functions"),
// independent of the reference model. Every case runs at batch sizes 1, 3, a random size and
// 4096.

const (
	I = engine.Insert
	U = engine.UpdateBefore
	A = engine.UpdateAfter
	D = engine.Delete
)

type changelogCase struct {
	name  string
	spec  testSpec
	in    [][]any
	kinds []engine.RowKind
	times []int64 // processing time per row; nil means 0
	want  []string
}

func bigintInput(names ...string) []engine.FieldSpec {
	var fs []engine.FieldSpec
	for _, n := range names {
		typ := "BIGINT"
		if i := strings.IndexByte(n, ':'); i >= 0 {
			n, typ = n[:i], n[i+1:]
		}
		fs = append(fs, engine.FieldSpec{Name: n, Type: typ})
	}
	return fs
}

func TestGroupAggregateChangelogs(t *testing.T) {
	nan := math.NaN()
	cases := []changelogCase{
		{
			name: "first row +I, then -U/+U, unchanged result not re-emitted",
			spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0},
				Aggs: []AggCall{{Func: "MAX", Args: []int{1}}}, GenerateUpdateBefore: true},
			in:    [][]any{{int64(1), int64(5)}, {int64(1), int64(3)}, {int64(1), int64(9)}, {int64(2), nil}},
			kinds: []engine.RowKind{I, I, I, I},
			want:  []string{"+I[1, 5]", "-U[1, 5]", "+U[1, 9]", "+I[2, null]"},
		},
		{
			name: "no -U without generate_update_before",
			spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0},
				Aggs: []AggCall{{Func: "SUM", Args: []int{1}}, {Func: "COUNT"}}},
			in:    [][]any{{int64(1), int64(5)}, {int64(1), nil}},
			kinds: []engine.RowKind{I, I},
			want:  []string{"+I[1, 5, 1]", "+U[1, 5, 2]"},
		},
		{
			name: "retraction before any accumulate is dropped; count to zero emits -D and clears state",
			spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true, GenerateUpdateBefore: true,
				Aggs: []AggCall{{Func: "SUM", Args: []int{1}, Retract: true}, {Func: "COUNT", Args: []int{1}}}},
			in:    [][]any{{int64(1), int64(5)}, {int64(2), int64(5)}, {int64(1), int64(7)}, {int64(1), int64(5)}, {int64(1), int64(7)}, {int64(1), int64(4)}},
			kinds: []engine.RowKind{I, D, I, U, D, I},
			want: []string{"+I[1, 5, 1]", "-U[1, 5, 1]", "+U[1, 12, 2]", "-U[1, 12, 2]", "+U[1, 7, 1]",
				"-D[1, 7, 1]", "+I[1, 4, 1]"},
		},
		{
			name: "SUM with retraction is NULL when its count is 0 while the key lives on",
			spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true,
				Aggs: []AggCall{{Func: "SUM", Args: []int{1}, Retract: true}}},
			in:    [][]any{{int64(1), int64(5)}, {int64(1), nil}, {int64(1), int64(5)}},
			kinds: []engine.RowKind{I, I, U},
			want:  []string{"+I[1, 5]", "+U[1, null]"},
		},
		{
			name: "SUM wraps in INT, AVG truncates toward zero",
			spec: testSpec{Input: bigintInput("v:INT"), Keys: []int{},
				Aggs: []AggCall{{Func: "SUM", Args: []int{0}}, {Func: "AVG", Args: []int{0}}}},
			in:    [][]any{{int64(math.MaxInt32)}, {int64(1)}, {int64(-7)}},
			kinds: []engine.RowKind{I, I, I},
			want:  []string{"+I[2147483647, 2147483647]", "+U[-2147483648, 1073741824]", "+U[2147483641, 715827880]"},
		},
		{
			name: "MAX with retraction of the current extreme rescans, including negative counts",
			spec: testSpec{Input: bigintInput("v"), Keys: []int{}, NeedRetraction: true,
				Aggs: []AggCall{{Func: "MAX", Args: []int{0}, Retract: true}}},
			in:    [][]any{{int64(3)}, {int64(8)}, {int64(9)}, {int64(1)}, {int64(8)}, {int64(9)}},
			kinds: []engine.RowKind{I, I, D, I, D, D},
			// 9 is retracted before it is seen: count -1, outside mapSize, yet the rescan after
			// retracting 8 picks it. The record counter reaches 0 on the last row.
			want: []string{"+I[3]", "+U[8]", "+U[9]", "-D[9]"},
		},
		{
			name: "MIN over TIMESTAMP(3) and MAX over DATE with retraction: epoch millis and days, before the epoch too",
			spec: testSpec{Input: bigintInput("t:TIMESTAMP(3)", "d:DATE"), Keys: []int{}, NeedRetraction: true,
				Aggs: []AggCall{{Func: "MIN", Args: []int{0}, Retract: true}, {Func: "MAX", Args: []int{1}, Retract: true}}},
			in: [][]any{{enginetest.Timestamp{Millis: 5}, int64(-3)}, {enginetest.Timestamp{Millis: -86_400_000}, int64(7)},
				{enginetest.Timestamp{Millis: -86_400_000}, int64(7)}, {nil, nil}},
			kinds: []engine.RowKind{I, I, D, I},
			want:  []string{"+I[ts(5,0), -3]", "+U[ts(-86400000,0), 7]", "+U[ts(5,0), -3]"},
		},
		{
			name: "NaN never equals itself, so a NaN result re-emits on every row",
			spec: testSpec{Input: bigintInput("k", "v:DOUBLE"), Keys: []int{0},
				Aggs: []AggCall{{Func: "MAX", Args: []int{1}}}},
			in:    [][]any{{int64(1), nan}, {int64(1), 5.0}, {int64(1), nil}},
			kinds: []engine.RowKind{I, I, I},
			want:  []string{"+I[1, NaN]", "+U[1, NaN]", "+U[1, NaN]"},
		},
		{
			name: "-0.0 equals 0.0 for the equaliser, and MIN keeps the first of them",
			spec: testSpec{Input: bigintInput("k", "v:DOUBLE"), Keys: []int{0},
				Aggs: []AggCall{{Func: "MIN", Args: []int{1}}, {Func: "SUM", Args: []int{1}}}},
			// SUM turns from -0.0 into 0.0, which the equaliser's == calls unchanged: no output.
			in:    [][]any{{int64(1), math.Copysign(0, -1)}, {int64(1), 0.0}},
			kinds: []engine.RowKind{I, I},
			want:  []string{"+I[1, -0.0, -0.0]"},
		},
		{
			name: "NULL keys form their own group; VARCHAR keys inline and long",
			spec: testSpec{Input: bigintInput("k:VARCHAR", "v"), Keys: []int{0},
				Aggs: []AggCall{{Func: "COUNT"}}},
			in:    [][]any{{nil, int64(1)}, {"short", int64(1)}, {"a much longer key", int64(1)}, {nil, int64(2)}, {"short", nil}},
			kinds: []engine.RowKind{I, I, I, I, I},
			want:  []string{"+I[null, 1]", `+I["short", 1]`, `+I["a much longer key", 1]`, "+U[null, 2]", `+U["short", 2]`},
		},
		{
			// Golden scenario: a differential run against Flink's operator fed rows built in the
			// JVM found MAX("\uffff", "😀") = "\uffff": both hold Java Strings, so Flink compares
			// UTF-16 code units (0xFFFF > 0xD83D), not UTF-8 bytes (0xEF < 0xF0).
			name: "MAX over VARCHAR: Java-String rows compare in UTF-16 order, mixed pairs by bytes",
			spec: testSpec{Input: bigintInput("k", "v:VARCHAR", "j:BOOLEAN NOT NULL"), Keys: []int{0},
				Aggs: []AggCall{{Func: "MAX", Args: []int{1}, JavaStrings: new(2)}}},
			in: [][]any{{int64(1), "\uffff", true}, {int64(1), "😀", true}, {int64(1), "😀", false},
				{int64(2), "\uffff", false}, {int64(2), "😀", true}},
			kinds: []engine.RowKind{I, I, I, I, I},
			want:  []string{`+I[1, "\uffff"]`, `+U[1, "😀"]`, `+I[2, "\uffff"]`, `+U[2, "😀"]`},
		},
		{
			name: "MIN over VARCHAR with retraction: UTF-16 order for Java Strings, kept by the multiset's first key",
			spec: testSpec{Input: bigintInput("k", "v:VARCHAR", "j:BOOLEAN NOT NULL"), Keys: []int{0},
				NeedRetraction: true, Aggs: []AggCall{{Func: "MIN", Args: []int{1}, Retract: true, JavaStrings: new(2)}}},
			// "😀" < "\uffff" in UTF-16; retracting "😀" rescans to "\uffff"; a byte-backed "😀"
			// then compares by bytes against it and does not replace it.
			in: [][]any{{int64(1), "\uffff", true}, {int64(1), "😀", true}, {int64(1), "😀", true},
				{int64(1), "😀", false}},
			kinds: []engine.RowKind{I, I, D, I},
			want:  []string{`+I[1, "\uffff"]`, `+U[1, "😀"]`, `+U[1, "\uffff"]`},
		},
		{
			name: "FIRST_VALUE keeps the first non-NULL value, LAST_VALUE takes each non-NULL value",
			spec: testSpec{Input: bigintInput("k", "v:VARCHAR", "d:DECIMAL(10, 2)", "x:DOUBLE"), Keys: []int{0},
				Aggs: []AggCall{{Func: "FIRST_VALUE", Args: []int{1}}, {Func: "LAST_VALUE", Args: []int{1}},
					{Func: "FIRST_VALUE", Args: []int{2}}, {Func: "LAST_VALUE", Args: []int{3}}}},
			// an unchanged result (LAST_VALUE of an equal value, NULL arguments) emits nothing;
			// NaN never equals itself, so a NaN LAST_VALUE re-emits
			in: [][]any{{int64(1), nil, nil, nil}, {int64(1), "b", big.NewInt(150), 2.0}, {int64(1), "a", big.NewInt(200), 2.0},
				{int64(1), "a", nil, nil}, {int64(1), nil, big.NewInt(300), nan}, {int64(1), "c", nil, nan}},
			kinds: []engine.RowKind{I, I, I, I, I, I},
			want: []string{"+I[1, null, null, null, null]", `+U[1, "b", "b", 150, 2]`, `+U[1, "b", "a", 150, 2]`,
				`+U[1, "b", "a", 150, NaN]`, `+U[1, "b", "c", 150, NaN]`},
		},
		{
			name: "LISTAGG: ',' by default, the row's delimiter otherwise; a NULL delimiter makes the concatenation NULL",
			spec: testSpec{Input: bigintInput("k", "v:VARCHAR", "d:VARCHAR"), Keys: []int{0},
				Aggs: []AggCall{{Func: "LISTAGG", Args: []int{1}}, {Func: "LISTAGG", Args: []int{1, 2}}}},
			in: [][]any{{int64(1), nil, "-"}, {int64(1), "a", "-"}, {int64(1), "", "+"}, {int64(1), "b", nil},
				{int64(1), "c", "/"}, {int64(1), nil, nil}, {int64(1), "d", "//"}},
			kinds: []engine.RowKind{I, I, I, I, I, I, I},
			want: []string{"+I[1, null, null]", `+U[1, "a", "a"]`, `+U[1, "a,", "a+"]`, `+U[1, "a,,b", null]`,
				`+U[1, "a,,b,c", "c"]`, `+U[1, "a,,b,c,d", "c//d"]`},
		},
	}
	cases = append(cases, changelogCase{
		name: "idle-state TTL: unchanged results re-emit, expiry is inclusive, expired state is absent",
		spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true, GenerateUpdateBefore: true,
			StateTTLMs: 10, Aggs: []AggCall{{Func: "MAX", Args: []int{1}}}},
		in:    [][]any{{int64(1), int64(5)}, {int64(1), int64(3)}, {int64(1), int64(7)}, {int64(1), int64(7)}, {int64(1), int64(2)}},
		kinds: []engine.RowKind{I, I, I, D, I},
		times: []int64{0, 5, 15, 40, 49},
		// t=5: MAX unchanged but re-emitted; t=15 = 5+10: expired, +I from scratch; t=40: the
		// retraction finds no state and is dropped; t=49: +I again.
		want: []string{"+I[1, 5]", "-U[1, 5]", "+U[1, 5]", "+I[1, 7]", "+I[1, 2]"},
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Kind, c.spec.MaxParallelism = "group_aggregate", 128
			spec := mustParse(&c.spec)
			sc := scenario{spec: spec, rows: c.in, kinds: c.kinds, times: c.times}
			r := rand.New(rand.NewPCG(1, 1))
			for _, size := range []func() int{func() int { return 1 }, func() int { return 3 }, func() int { return 1 + r.IntN(4) }, func() int { return 4096 }} {
				got := runOperator(t, sc, size, 0, nil)
				var gs []string
				for _, row := range got {
					gs = append(gs, row.String())
				}
				if strings.Join(gs, "\n") != strings.Join(c.want, "\n") {
					t.Fatalf("got\n%s\nwant\n%s", strings.Join(gs, "\n"), strings.Join(c.want, "\n"))
				}
			}
			// The model agrees with the hand-checked changelog too.
			ref := newRefGroupAgg(spec)
			var rs []string
			for i, row := range c.in {
				now := int64(0)
				if c.times != nil {
					now = c.times[i]
				}
				for _, o := range ref.process(row, c.kinds[i], now) {
					rs = append(rs, o.String())
				}
			}
			if strings.Join(rs, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("reference model disagrees:\n%s", strings.Join(rs, "\n"))
			}
		})
	}
}

// TestGroupAggregateRejectsBeforeChangingState checks that invalid input leaves state untouched.
func TestGroupAggregateRejectsBeforeChangingState(t *testing.T) {
	spec := mustParse(&testSpec{Kind: "group_aggregate", Input: bigintInput("k", "v"), Keys: []int{0},
		Aggs: []AggCall{{Func: "SUM", Args: []int{1}}}, MaxParallelism: 128,
		KeyGroupStart: new(0), KeyGroupEnd: new(63)})
	op, err := NewGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	retract := enginetest.Batch(spec.InputTypes, [][]any{{int64(1), int64(1)}, {int64(1), int64(1)}}, []engine.RowKind{I, D}, enginetest.Options{})
	if _, err := op.Process(engine.Of(0, 1, retract), 0, out); err == nil || !strings.Contains(err.Error(), "row 1: retraction (-D)") {
		t.Fatalf("retraction on insert-only aggregation: %v", err)
	}
	// Find a key outside key groups [0, 63].
	var outside int64
	for k := int64(0); ; k++ {
		b := enginetest.Batch(spec.InputTypes, [][]any{{k, int64(1)}}, []engine.RowKind{I}, enginetest.Options{})
		enc := engine.NewKeyEncoder([]int{0}, spec.InputTypes)
		if err := enc.Encode(b); err != nil {
			t.Fatal(err)
		}
		if engine.KeyGroup(enc.Hash(0), 128) > 63 {
			outside = k
			break
		}
	}
	b := enginetest.Batch(spec.InputTypes, [][]any{{outside + 1000, int64(1)}, {outside, int64(1)}}, []engine.RowKind{I, I}, enginetest.Options{})
	if _, err := op.Process(engine.Of(0, 1, b), 0, out); err == nil || !strings.Contains(err.Error(), "outside this operator's range [0, 63]") {
		t.Fatalf("key outside the key-group range: %v", err)
	}
	if op.Groups() != 0 {
		t.Fatalf("rejected batches changed state: %d groups", op.Groups())
	}
}
