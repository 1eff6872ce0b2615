package agg

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// A split DISTINCT end to end in Go: rows (k, bucket, x, f, p) go through local aggregates keyed by
// (k, bucket), in random bundles over two streams; their partial rows through the incremental
// aggregate, in random bundles, restored from a snapshot halfway; and the sum of its outputs per
// k (what the global aggregate above computes) must be COUNT(DISTINCT x), COUNT(DISTINCT x)
// FILTER (WHERE f), COUNT(*) and MAX(p) of k's rows. Java's IncrementalAggregateDifferentialTest checks
// the rows and their order against Flink's own operators.

// splitCase is the local and incremental specs of the split aggregate.
type splitCase struct {
	local *Spec
	incr  *IncrementalSpec
}

func newSplitCase(t *testing.T, retract bool) splitCase {
	t.Helper()
	f := false
	input := []engine.FieldSpec{{Name: "k", Type: "BIGINT", Nullable: &f}, {Name: "bucket", Type: "BIGINT", Nullable: &f},
		{Name: "x", Type: "VARCHAR"}, {Name: "f", Type: "BOOLEAN"}, {Name: "p", Type: "BIGINT"}}
	aggs := []AggCall{
		{Func: "COUNT", Args: []int{2}, Distinct: true, Retract: retract, Name: "dx"},
		{Func: "COUNT", Args: []int{2}, Distinct: true, Filter: new(3), Retract: retract, Name: "dxf"},
		{Func: "COUNT", Retract: retract, Name: "cnt"},
		{Func: "MAX", Args: []int{4}, Name: "top"},
	}
	h := engine.Spec{Kind: LocalKind, MaxParallelism: 128, Inputs: []engine.Input{{Fields: input, Keys: []int{0, 1}}},
		Params: jsonMarshal(&LocalParams{Aggs: aggs, NeedRetraction: retract})}
	hs, err := engine.ParseSpec(jsonMarshal(&h))
	if err != nil {
		t.Fatal(err)
	}
	local, err := ParseLocalSpec(hs)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLocalGroupAggregate(local)
	if err != nil {
		t.Fatal(err)
	}
	var fields []engine.FieldSpec
	for _, fd := range l.Output() {
		nullable, typ := fd.Type.Nullable, fd.Type
		typ.Nullable = true
		fields = append(fields, engine.FieldSpec{Name: fd.Name, Type: typ.String(), Nullable: &nullable})
	}
	merged := append([]AggCall(nil), aggs...)
	for i := range merged {
		merged[i].Filter = nil
	}
	ih := engine.Spec{Kind: IncrementalKind, MaxParallelism: 128, Inputs: []engine.Input{{Fields: fields, Keys: []int{0, 1}}},
		Params: jsonMarshal(&IncrementalParams{LocalInput: input, Aggs: merged, FinalKeys: []int{0}, NeedRetraction: retract})}
	ihs, err := engine.ParseSpec(jsonMarshal(&ih))
	if err != nil {
		t.Fatal(err)
	}
	incr, err := ParseIncrementalSpec(ihs)
	if err != nil {
		t.Fatal(err)
	}
	return splitCase{local: local, incr: incr}
}

// splitRow is one input row of a split case and its RowKind.
type splitRow struct {
	vals []any
	kind engine.RowKind
}

// splitStreams are two streams of 400 rows in all of 6 keys, x among 25 values (NULL too),
// bucket = x mod 4; with retract, retractions retract an earlier row of the same stream exactly
// once.
func splitStreams(r *rand.Rand, retract bool) [2][]splitRow {
	const buckets = 4
	var streams [2][]splitRow
	live := [2][]int{}
	for range 400 {
		s := r.IntN(2)
		if retract && len(live[s]) > 0 && r.IntN(3) == 0 {
			j := r.IntN(len(live[s]))
			old := streams[s][live[s][j]]
			live[s] = append(live[s][:j], live[s][j+1:]...)
			streams[s] = append(streams[s], splitRow{vals: old.vals, kind: engine.Delete})
			continue
		}
		var x any
		if r.IntN(10) > 0 {
			x = string(rune('a' + r.IntN(25)))
		}
		var xb int64
		if x != nil {
			xb = int64(x.(string)[0]) % buckets
		}
		vals := []any{int64(r.IntN(6)), xb, x, r.IntN(2) == 0, int64(r.IntN(1000))}
		live[s] = append(live[s], len(streams[s]))
		streams[s] = append(streams[s], splitRow{vals: vals, kind: engine.Insert})
	}
	return streams
}

// splitPartials runs each stream through a local aggregate in random bundles: their partial
// rows, shuffled.
func splitPartials(t *testing.T, sc splitCase, streams [2][]splitRow, r *rand.Rand) [][]any {
	t.Helper()
	var partials [][]any
	for s := range streams {
		l, err := NewLocalGroupAggregate(sc.local)
		if err != nil {
			t.Fatal(err)
		}
		rows := streams[s]
		for from := 0; from < len(rows); {
			to := min(len(rows), from+1+r.IntN(40))
			vals, kinds := make([][]any, 0, to-from), make([]engine.RowKind, 0, to-from)
			for _, rw := range rows[from:to] {
				vals, kinds = append(vals, rw.vals), append(kinds, rw.kind)
			}
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			in := enginetest.Batch(sc.local.InputTypes, vals, kinds, enginetest.Options{})
			if _, err := l.Process(engine.Of(0, 1, in), 0, out); err != nil {
				t.Fatal(err)
			}
			for _, o := range enginetest.Rows(out) {
				partials = append(partials, o.Values)
			}
			from = to
		}
	}
	r.Shuffle(len(partials), func(i, j int) { partials[i], partials[j] = partials[j], partials[i] })
	return partials
}

// restoreIncremental moves op's state into a fresh operator through per-key-group snapshots.
func restoreIncremental(t *testing.T, op *IncrementalGroupAggregate, spec *IncrementalSpec) *IncrementalGroupAggregate {
	t.Helper()
	fresh, err := NewIncrementalGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	enginetest.Restore(t, fresh.State(), enginetest.Snapshot(t, op.State(), 1+op.State().Len()%7))
	if fresh.State().Len() != op.State().Len() {
		t.Fatalf("restored %d keys of %d", fresh.State().Len(), op.State().Len())
	}
	op.Close()
	return fresh
}

func TestIncrementalGroupAggregateSumsToDistinctCounts(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		retract := seed%2 == 0
		sc := newSplitCase(t, retract)
		r := rand.New(rand.NewPCG(seed, 7))
		streams := splitStreams(r, retract)
		// What the global aggregate above the incremental must end with, per k.
		type want struct{ dx, dxf, cnt int64 }
		expect := map[int64]*want{}
		distinct := map[int64]map[string]int{}
		distinctF := map[int64]map[string]int{}
		for s := range streams {
			for _, rw := range streams[s] {
				k := rw.vals[0].(int64)
				if expect[k] == nil {
					expect[k] = &want{}
					distinct[k], distinctF[k] = map[string]int{}, map[string]int{}
				}
				d := 1
				if rw.kind == engine.Delete {
					d = -1
				}
				expect[k].cnt += int64(d)
				if x, ok := rw.vals[2].(string); ok {
					distinct[k][x] += d
					if rw.vals[3].(bool) {
						distinctF[k][x] += d
					}
				}
			}
		}
		positive := func(m map[string]int) (n int64) {
			for _, c := range m {
				if c > 0 {
					n++
				}
			}
			return n
		}
		for k, w := range expect {
			w.dx, w.dxf = positive(distinct[k]), positive(distinctF[k])
		}

		partials := splitPartials(t, sc, streams, r)

		// The incremental aggregate, restored from a snapshot halfway; its outputs summed per k.
		op, err := NewIncrementalGroupAggregate(sc.incr)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]*want{}
		top := map[int64]int64{}
		for from, n := 0, 0; from < len(partials); n++ {
			if n == 3 {
				op = restoreIncremental(t, op, sc.incr)
			}
			to := min(len(partials), from+1+r.IntN(30))
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			in := enginetest.Batch(sc.incr.InputTypes, partials[from:to], make([]engine.RowKind, to-from), enginetest.Options{})
			if _, err := op.Process(engine.Of(0, 1, in), 0, out); err != nil {
				t.Fatal(err)
			}
			for _, o := range enginetest.Rows(out) {
				if o.Kind != engine.Insert {
					t.Fatalf("seed %d: %s: the incremental aggregate emits +I only", seed, o)
				}
				k := o.Values[0].(int64)
				if got[k] == nil {
					got[k] = &want{}
				}
				got[k].dx += o.Values[1].(int64)
				got[k].dxf += o.Values[2].(int64)
				got[k].cnt += o.Values[3].(int64)
				if p, ok := o.Values[4].(int64); ok && p > top[k] {
					top[k] = p
				}
			}
			from = to
		}
		for k, w := range expect {
			g := got[k]
			if g == nil {
				g = &want{}
			}
			if *g != *w {
				t.Errorf("seed %d (retract %v): key %d: COUNT(DISTINCT x), with FILTER, COUNT(*) = %+v, want %+v", seed, retract, k, *g, *w)
			}
		}
		if !retract {
			for s := range streams {
				for _, rw := range streams[s] {
					if p := rw.vals[4].(int64); p > top[rw.vals[0].(int64)] {
						t.Errorf("seed %d: key %v: MAX below %d", seed, rw.vals[0], p)
					}
				}
			}
		}
	}
}

func TestIncrementalSpecErrors(t *testing.T) {
	sc := newSplitCase(t, false)
	h := *sc.incr.Spec.Spec
	var p IncrementalParams
	if err := h.DecodeParams(&p); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		edit func(*IncrementalParams)
		want string
	}{
		{func(p *IncrementalParams) { p.FinalKeys = []int{2} }, "final_keys[0]: 2 is not a position in the 2-field partial key"},
		{func(p *IncrementalParams) { p.Aggs[0].Filter = new(3) }, "FILTER applies in the local aggregate"},
		{func(p *IncrementalParams) { p.StateTTLMs = -1 }, "negative"},
	} {
		q := p
		q.Aggs = append([]AggCall(nil), p.Aggs...)
		c.edit(&q)
		h.Params = jsonMarshal(&q)
		_, err := ParseIncrementalSpec(&h)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", q, err, c.want)
		}
	}
	ttl := p
	ttl.StateTTLMs = 1000
	h.Params = jsonMarshal(&ttl)
	spec, err := ParseIncrementalSpec(&h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewIncrementalGroupAggregate(spec); err != nil { // the maps expire per entry (mapttl_test.go)
		t.Errorf("TTL: %v", err)
	}
}
