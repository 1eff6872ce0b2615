package agg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/agg/internal/entries"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// Idle-state TTL of the MapViews behind DISTINCT and MIN/MAX with retraction: each entry expires
// on its own, lastWrite + ttl <= now, apart from the key's accumulators
// (docs/group-aggregate.md#idle-state-ttl). Hand-checked changelogs, each also run through the
// reference model and, one row per bundle, through the mini-batch operator.

// mapTTLCases are changelogs of key 1 with the row's processing time in times.
var mapTTLCases = []changelogCase{
	{
		name: "COUNT(DISTINCT) on insert-only input: an entry is written only when its bit turns on",
		spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, GenerateUpdateBefore: true, StateTTLMs: 10,
			Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true}}},
		in:    [][]any{{int64(1), int64(1)}, {int64(1), int64(2)}, {int64(1), int64(1)}, {int64(1), int64(1)}, {int64(1), int64(1)}, {int64(1), int64(1)}},
		kinds: []engine.RowKind{I, I, I, I, I, I},
		times: []int64{0, 5, 9, 10, 19, 20},
		// t=9: 1 is still there (written at 0); t=10 = 0+10: it expired, so it counts again
		// (the accumulators, written at 9, did not expire); t=19: written at 10, still there
		// (re-seeing it did not rewrite it); t=20: expired again.
		want: []string{"+I[1, 1]", "-U[1, 1]", "+U[1, 2]", "-U[1, 2]", "+U[1, 2]", "-U[1, 2]", "+U[1, 3]",
			"-U[1, 3]", "+U[1, 3]", "-U[1, 3]", "+U[1, 4]"},
	},
	{
		name: "COUNT(DISTINCT) on retracting input: every touch rewrites the entry",
		spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true, StateTTLMs: 10,
			Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true}}},
		in:    [][]any{{int64(1), int64(1)}, {int64(1), int64(1)}, {int64(1), int64(1)}, {int64(1), int64(1)}},
		kinds: []engine.RowKind{I, I, I, D},
		times: []int64{0, 9, 18, 28},
		// t=9: count 2, rewritten at 9 although nothing changed; t=18: so alive (written at 0
		// it would have expired at 10 and counted again), count 3; t=28: the accumulators
		// (written at 18) expired, so the retraction is dropped.
		want: []string{"+I[1, 1]", "+U[1, 1]", "+U[1, 1]"},
	},
	{
		name: "MIN with retraction: an expired value reads as absent, the rescan skips it",
		spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true, GenerateUpdateBefore: true, StateTTLMs: 10,
			Aggs: []AggCall{{Func: "MIN", Args: []int{1}, Retract: true}}},
		in:    [][]any{{int64(1), int64(5)}, {int64(1), int64(9)}, {int64(1), int64(5)}, {int64(1), int64(5)}, {int64(1), int64(9)}},
		kinds: []engine.RowKind{I, I, I, D, I},
		times: []int64{0, 8, 12, 19, 20},
		// t=12: 5 (written at 0) expired: count 1 again, so mapSize counts it twice (3);
		// t=19: 5 retracted to 0 is the minimum: the rescan finds only 9, written at 8 and
		// expired (18 <= 19), so mapSize 0 and NULL; t=20: 9 starts over.
		want: []string{"+I[1, 5]", "-U[1, 5]", "+U[1, 5]", "-U[1, 5]", "+U[1, 5]", "-U[1, 5]", "+U[1, null]",
			"-U[1, null]", "+U[1, 9]"},
	},
	{
		name: "the accumulators expired, a map entry did not (the clock stepped back)",
		spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true, StateTTLMs: 10,
			Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true}}},
		in:    [][]any{{int64(1), int64(1)}, {int64(1), int64(2)}, {int64(1), int64(1)}, {int64(1), int64(1)}, {int64(1), int64(3)}},
		kinds: []engine.RowKind{I, I, D, I, I},
		times: []int64{100, 95, 105, 105, 106},
		// t=95: the accumulators are rewritten at 95, the entry of 1 stays at 100; t=105: the
		// accumulators expired (95+10), the entry of 1 did not (110): the retraction is dropped
		// and leaves it alone, the accumulate starts fresh accumulators but finds 1 counted
		// already (count 2, no inner accumulate): +I with 0.
		want: []string{"+I[1, 1]", "+U[1, 2]", "+I[1, 0]", "+U[1, 1]"},
	},
	{
		name: "the record count reaching zero clears the maps",
		spec: testSpec{Input: bigintInput("k", "v"), Keys: []int{0}, NeedRetraction: true, StateTTLMs: 1000,
			Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true},
				{Func: "MAX", Args: []int{1}, Retract: true}}},
		in:    [][]any{{int64(1), int64(1)}, {int64(1), int64(3)}, {int64(1), int64(1)}},
		kinds: []engine.RowKind{I, D, I},
		times: []int64{0, 1, 2},
		// t=1: a retraction of a value never counted brings the record count to 0: -D, and
		// the entries (1 with count 1, 3 with -1) go with the key: t=2 counts 1 afresh.
		want: []string{"+I[1, 1, 1]", "-D[1, 1, 1]", "+I[1, 1, 1]"},
	},
}

func TestMapViewTTLChangelogs(t *testing.T) {
	for _, c := range mapTTLCases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.Kind, c.spec.MaxParallelism = "group_aggregate", 128
			spec := mustParse(&c.spec)
			want := strings.Join(c.want, "\n")
			sc := scenario{spec: spec, rows: c.in, kinds: c.kinds, times: c.times}
			for _, size := range []int{1, 4096} {
				if got := rowsString(runOperator(t, sc, func() int { return size }, 0, nil)); got != want {
					t.Fatalf("batch %d: got\n%s\nwant\n%s", size, got, want)
				}
			}
			ref := newRefGroupAgg(spec)
			var rs []enginetest.Row
			for i, row := range c.in {
				rs = append(rs, ref.process(row, c.kinds[i], c.times[i])...)
			}
			if got := rowsString(rs); got != want {
				t.Fatalf("reference model disagrees:\n%s", got)
			}
			// Mini-batch, one row per bundle: the same changelog.
			mb := c.spec
			mb.MiniBatch = true
			op := mustParseOpen(t, &mb)
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			var got []enginetest.Row
			for i, row := range c.in {
				b := enginetest.Batch(spec.InputTypes, [][]any{row}, c.kinds[i:i+1], enginetest.Options{})
				if _, err := op.Process(engine.Of(0, 1, b), c.times[i], out); err != nil {
					t.Fatal(err)
				}
				got = append(got, enginetest.Rows(out)...)
			}
			if s := rowsString(got); s != want {
				t.Fatalf("mini-batch: got\n%s\nwant\n%s", s, want)
			}
		})
	}
}

func rowsString(rows []enginetest.Row) string {
	var s []string
	for _, r := range rows {
		s = append(s, r.String())
	}
	return strings.Join(s, "\n")
}

// TestMapViewTTLMiniBatchKeptKey: in one bundle, a key whose accumulators expired but whose map
// entry did not drops its leading retraction and starts fresh accumulators at its accumulate,
// over the entry (MiniBatchGroupAggFunction reads the accumulators once per bundle).
func TestMapViewTTLMiniBatchKeptKey(t *testing.T) {
	s := testSpec{Kind: "group_aggregate", MaxParallelism: 128, MiniBatch: true, Input: bigintInput("k", "v"), Keys: []int{0},
		NeedRetraction: true, StateTTLMs: 10, Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true}}}
	spec := mustParse(&s)
	op := mustParseOpen(t, &s)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	var got []string
	for _, step := range []struct {
		now   int64
		rows  [][]any
		kinds []engine.RowKind
	}{
		{100, [][]any{{int64(1), int64(1)}}, []engine.RowKind{I}},
		{95, [][]any{{int64(1), int64(2)}}, []engine.RowKind{I}},
		{105, [][]any{{int64(1), int64(1)}, {int64(1), int64(1)}, {int64(1), int64(3)}}, []engine.RowKind{D, I, I}},
	} {
		b := enginetest.Batch(spec.InputTypes, step.rows, step.kinds, enginetest.Options{})
		if _, err := op.Process(engine.Of(0, 1, b), step.now, out); err != nil {
			t.Fatal(err)
		}
		got = append(got, rowsString(enginetest.Rows(out)))
	}
	want := []string{"+I[1, 1]", "+U[1, 2]", "+I[1, 1]"} // 1 is counted already, 3 is new
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestMapViewTTLSweep: entries and keys nobody reads again are deleted by the bounded sweep.
func TestMapViewTTLSweep(t *testing.T) {
	s := testSpec{Kind: "group_aggregate", MaxParallelism: 128, Input: bigintInput("k", "v", "w"), Keys: []int{0},
		NeedRetraction: true, StateTTLMs: 10, Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true},
			{Func: "MIN", Args: []int{2}, Retract: true}}}
	spec := mustParse(&s)
	op, err := NewGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	var rows [][]any
	for k := range int64(2000) {
		for v := range int64(3) {
			rows = append(rows, []any{k, v, v})
		}
	}
	b := enginetest.Batch(spec.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
	if _, err := op.Process(engine.Of(0, 1, b), 0, out); err != nil {
		t.Fatal(err)
	}
	set, mm := op.sets[0].EntryTable(), op.calls[1].(entries.Owner).EntryTable()
	if op.Groups() != 2000 || set.Len() != 6000 || mm.Len() != 6000 {
		t.Fatalf("before: %d keys, %d distinct and %d MIN entries", op.Groups(), set.Len(), mm.Len())
	}
	empty := enginetest.Batch(spec.InputTypes, nil, nil, enginetest.Options{})
	for range 9 { // each call sweeps 1024 keys and 1024 entries of each map
		if _, err := op.Process(engine.Of(0, 1, empty), 10, out); err != nil {
			t.Fatal(err)
		}
	}
	if op.Groups() != 0 || set.Len() != 0 || mm.Len() != 0 {
		t.Fatalf("after: %d keys, %d distinct and %d MIN entries", op.Groups(), set.Len(), mm.Len())
	}
}

// TestMapViewTTLGlobal: the global aggregate's merge writes an entry of an insert-only map only
// when a bit turns on, and of a count map always (DistinctAggCodeGen.merge).
func TestMapViewTTLGlobal(t *testing.T) {
	input := bigintInput("k", "v")
	for _, c := range []struct {
		retract bool
		aggs    []AggCall
		want    []string
	}{
		// t=5 re-sees 1 without writing it, so it expires at 0+10 and counts again.
		{false, []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Name: "d"}},
			[]string{"[+I[1, 1]]", "[+U[1, 1]]", "[+U[1, 2]]"}},
		// t=5 rewrites 1 (count 2), so at 10 it is alive: count 3, no change.
		{true, []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Retract: true, Name: "d"}, {Func: "COUNT", Retract: true, Name: "_$count1$_"}},
			[]string{"[+I[1, 1]]", "[+U[1, 1]]", "[+U[1, 1]]"}},
	} {
		tc := twoPhaseCaseOf(t, input, []int{0}, c.aggs, c.retract, 10)
		gs := globalSpecOf(t, tc, false)
		local, err := NewLocalGroupAggregate(tc.local)
		if err != nil {
			t.Fatal(err)
		}
		var bundles [][][]any
		for range 3 {
			b := enginetest.Batch(tc.local.InputTypes, [][]any{{int64(1), int64(1)}}, []engine.RowKind{I}, enginetest.Options{})
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			if _, err := local.Process(engine.Of(0, 1, b), 0, out); err != nil {
				t.Fatal(err)
			}
			var partial [][]any
			for _, r := range enginetest.Rows(out) {
				partial = append(partial, r.Values)
			}
			bundles = append(bundles, partial)
		}
		if got := runGlobal(t, gs, bundles, []int64{0, 5, 10}); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("retract %v: got  %v\nwant %v", c.retract, got, c.want)
		}
	}
}

// TestMapViewTTLIncremental: the incremental aggregate's state is its DISTINCT maps alone, whose
// entries expire one by one; their times survive a snapshot, and keys whose entries all expired
// are swept.
func TestMapViewTTLIncremental(t *testing.T) {
	sc := newSplitCase(t, false)
	h := *sc.incr.Spec.Spec
	var p IncrementalParams
	if err := h.DecodeParams(&p); err != nil {
		t.Fatal(err)
	}
	p.StateTTLMs = 10
	h.Params = jsonMarshal(&p)
	spec, err := ParseIncrementalSpec(&h)
	if err != nil {
		t.Fatal(err)
	}
	op, err := NewIncrementalGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	local, err := NewLocalGroupAggregate(sc.local)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for n, now := range []int64{0, 5, 10, 19, 20} {
		if n == 3 {
			op = restoreIncremental(t, op, spec)
		}
		// k=1, bucket 0, x "a" (FILTER true), p 7: partial rows from the local aggregate.
		b := enginetest.Batch(sc.local.InputTypes, [][]any{{int64(1), int64(0), "a", true, int64(7)}}, []engine.RowKind{I}, enginetest.Options{})
		lo := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		if _, err := local.Process(engine.Of(0, 1, b), 0, lo); err != nil {
			t.Fatal(err)
		}
		var partial [][]any
		for _, r := range enginetest.Rows(lo) {
			partial = append(partial, r.Values)
		}
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		in := enginetest.Batch(spec.InputTypes, partial, make([]engine.RowKind, len(partial)), enginetest.Options{})
		if _, err := op.Process(engine.Of(0, 1, in), now, out); err != nil {
			t.Fatal(err)
		}
		got = append(got, rowsString(enginetest.Rows(out)))
	}
	// COUNT(DISTINCT x), with FILTER, COUNT(*), MAX(p) that each bundle adds: "a" counts at 0,
	// not at 5 (written at 0), again at 10 = 0+10, not at 19, again at 20.
	want := []string{"+I[1, 1, 1, 1, 7]", "+I[1, 0, 0, 1, 7]", "+I[1, 1, 1, 1, 7]", "+I[1, 0, 0, 1, 7]", "+I[1, 1, 1, 1, 7]"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if op.State().Len() != 1 {
		t.Fatalf("%d keys", op.State().Len())
	}
	empty := enginetest.Batch(spec.InputTypes, nil, nil, enginetest.Options{})
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if _, err := op.Process(engine.Of(0, 1, empty), 30, out); err != nil {
		t.Fatal(err)
	}
	if op.State().Len() != 0 || op.sets[0].EntryTable().Len() != 0 {
		t.Fatalf("after expiry: %d keys, %d entries", op.State().Len(), op.sets[0].EntryTable().Len())
	}
}
