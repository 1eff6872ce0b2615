package agg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// scenario is one randomized group-aggregate workload.
type scenario struct {
	spec  *Spec
	rows  [][]any
	kinds []engine.RowKind
	times []int64 // processing time of each row, non-decreasing; nil means 0
}

var keyTypeNames = []string{"BIGINT", "INT", "SMALLINT", "TINYINT", "BOOLEAN", "FLOAT", "DOUBLE",
	"VARCHAR", "DATE", "TIMESTAMP(3)", "TIMESTAMP(9)", "DECIMAL(10, 2)", "DECIMAL(30, 5)"}

var argTypeNames = []string{"BIGINT", "INT", "DOUBLE", "SMALLINT", "TINYINT", "FLOAT"}

// boundary values per type, mixed into random ones.
func randomValue(r *rand.Rand, t engine.Type, pool int) any {
	if t.Nullable && r.IntN(8) == 0 {
		return nil
	}
	pick := r.IntN(pool)
	switch t.ID {
	case engine.Boolean:
		return pick%2 == 0
	case engine.TinyInt, engine.SmallInt, engine.Int, engine.BigInt, engine.Date:
		bits := map[engine.TypeID]uint{engine.TinyInt: 8, engine.SmallInt: 16, engine.Int: 32, engine.Date: 32, engine.BigInt: 64}[t.ID]
		lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
		switch r.IntN(10) {
		case 0:
			return lo
		case 1:
			return hi
		case 2:
			return int64(pick) - int64(pool/2)
		}
		return wrap(map[uint]engine.TypeID{8: engine.TinyInt, 16: engine.SmallInt, 32: engine.Int, 64: engine.BigInt}[bits], int64(pick*7919)-int64(pool*3000))
	case engine.Float, engine.Double:
		specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 1e308, -1e308, 0.1, 1.5}
		var f float64
		if r.IntN(4) == 0 {
			f = specials[r.IntN(len(specials))]
		} else {
			f = float64(pick) * 0.25
		}
		if t.ID == engine.Float {
			return float32(f)
		}
		return f
	case engine.Varchar:
		return randomString(pick) // reference_decimal_test.go
	case engine.Timestamp:
		ts := enginetest.Timestamp{Millis: int64(pick)*86_400_000 - 5_000_000_000_000}
		if !t.Compact() {
			ts.Nanos = int32(pick * 1237 % 1_000_000)
		}
		return ts
	case engine.Decimal:
		return randomDecimal(r, t, pick, pool) // reference_decimal_test.go
	}
	panic(t)
}

func randomScenario(seed uint64) scenario {
	r := rand.New(rand.NewPCG(seed, 99))
	var input []engine.FieldSpec
	add := func(name, typ string, nullable bool) int {
		input = append(input, engine.FieldSpec{Name: name, Type: typ, Nullable: &nullable})
		return len(input) - 1
	}
	var keys []int
	for i := range r.IntN(4) {
		keys = append(keys, add(fmt.Sprintf("k%d", i), keyTypeNames[r.IntN(len(keyTypeNames))], r.IntN(3) > 0))
	}
	needRetraction := r.IntN(2) == 0
	var filters, values []int
	for i := range r.IntN(3) {
		filters = append(filters, add(fmt.Sprintf("f%d", i), "BOOLEAN", r.IntN(2) == 0))
	}
	var aggs []AggCall
	for i := range 1 + r.IntN(6) {
		fns := []string{"COUNT", "SUM", "AVG", "MIN", "MAX", "SUM0", "WELFORD_M2", "FIRST_VALUE", "LAST_VALUE", "LISTAGG"}
		fn := fns[r.IntN(len(fns))]
		call := AggCall{Func: fn, Name: fmt.Sprintf("a%d", i), Retract: needRetraction && r.IntN(4) > 0}
		switch fn {
		case "SUM", "FIRST_VALUE", "LAST_VALUE", "LISTAGG": // no retract method without the variant
			call.Retract = needRetraction
		}
		if fn != "COUNT" || r.IntN(2) == 0 {
			// Reuse a value column now and then, so DISTINCT calls share a value set.
			if j := r.IntN(len(values) + 1); j < len(values) && r.IntN(3) == 0 && argTypeFits(fn, input[values[j]].Type) {
				call.Args = []int{values[j]}
			} else {
				call.Args = []int{add(fmt.Sprintf("v%d", i), randomArgType(r, fn), r.IntN(4) > 0)}
				values = append(values, call.Args[0])
			}
			call.Distinct = fn != "AVG" && r.IntN(3) == 0
			if fn == "LISTAGG" && !call.Distinct && r.IntN(2) == 0 { // LISTAGG(x, delimiter)
				call.Args = append(call.Args, add(fmt.Sprintf("d%d", i), "VARCHAR", r.IntN(4) == 0))
			}
		}
		if len(filters) > 0 && r.IntN(3) == 0 {
			call.Filter = &filters[r.IntN(len(filters))]
		}
		aggs = append(aggs, call)
	}
	var ttlMs int64
	if r.IntN(3) == 0 {
		// Idle-state TTL: the accumulators expire per key, the DISTINCT values and the
		// MIN/MAX-with-retraction multisets (MapViews) per entry.
		ttlMs = 1 + r.Int64N(60)
	}
	for _, c := range aggs {
		if c.Retract && (c.Func == "FIRST_VALUE" || c.Func == "LAST_VALUE") {
			ttlMs = 0 // refused under TTL (calls.go)
		}
	}
	spec := mustParse(&testSpec{Kind: "group_aggregate", Input: input, Keys: keys, Aggs: aggs, StateTTLMs: ttlMs,
		NeedRetraction: needRetraction, GenerateUpdateBefore: r.IntN(3) > 0, MaxParallelism: 128})
	keyPool := 1 + r.IntN(12)
	valPool := 2 + r.IntN(40)
	n := r.IntN(3000)
	sc := scenario{spec: spec}
	var sent [][]any
	var now int64
	for range n {
		if ttlMs > 0 {
			if r.IntN(20) == 0 { // time moves in steps, sometimes past the TTL
				now += r.Int64N(2 * ttlMs)
			}
			sc.times = append(sc.times, now)
		}
		row := make([]any, len(input))
		for c, typ := range spec.InputTypes {
			pool := valPool
			for _, k := range keys {
				if k == c {
					pool = keyPool
				}
			}
			row[c] = randomValue(r, typ, pool)
		}
		kind := engine.Insert
		if needRetraction {
			switch x := r.IntN(10); {
			case x < 2 && len(sent) > 0: // retract an earlier row, as a real changelog does
				j := r.IntN(len(sent))
				row = sent[j]
				sent = append(sent[:j], sent[j+1:]...)
				kind = []engine.RowKind{engine.UpdateBefore, engine.Delete}[r.IntN(2)]
			case x == 2: // a retraction nobody accumulated
				kind = []engine.RowKind{engine.UpdateBefore, engine.Delete}[r.IntN(2)]
			case x == 3:
				kind = engine.UpdateAfter
			}
		}
		if engine.IsAccumulate(kind) {
			sent = append(sent, row)
		}
		sc.rows = append(sc.rows, row)
		sc.kinds = append(sc.kinds, kind)
	}
	return sc
}

// runOperator feeds sc through a GroupAggregate in batches whose sizes come from next, and
// snapshots every key group into a fresh operator after each batch when restoreEvery > 0 and
// the batch index is a multiple of it.
func runOperator(t *testing.T, sc scenario, next func() int, restoreEvery int, garbage *rand.Rand) []enginetest.Row {
	t.Helper()
	op, err := NewGroupAggregate(sc.spec)
	if err != nil {
		t.Fatal(err)
	}
	var got []enginetest.Row
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	batchNo := 0
	for pos := 0; pos < len(sc.rows); {
		end := min(pos+next(), len(sc.rows))
		now := int64(0)
		if sc.times != nil { // a batch carries one processing time: cut it where time moves
			now = sc.times[pos]
			for i := pos; i < end; i++ {
				if sc.times[i] != now {
					end = i
				}
			}
		}
		b := enginetest.Batch(sc.spec.InputTypes, sc.rows[pos:end], sc.kinds[pos:end],
			enginetest.Options{Offset: batchNo % 3, Garbage: garbage})
		if _, err := op.Process(engine.Of(0, 1, b), now, out); err != nil {
			t.Fatal(err)
		}
		got = append(got, enginetest.Rows(out)...)
		pos = end
		batchNo++
		if restoreEvery > 0 && batchNo%restoreEvery == 0 {
			op = snapshotRestore(t, op, sc.spec)
		}
	}
	return got
}

func snapshotRestore(t *testing.T, op *GroupAggregate, spec *Spec) *GroupAggregate {
	t.Helper()
	fresh, err := NewGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	// Small, varying chunk limits: a key group is restored from several payloads.
	enginetest.Restore(t, fresh.State(), enginetest.Snapshot(t, op.State(), 1+op.Groups()%97))
	for kg := 0; kg < spec.MaxParallelism; kg++ {
		if op.State().HasState(kg) != fresh.State().HasState(kg) {
			t.Fatalf("key group %d: HasState %v after restore, %v before", kg, fresh.State().HasState(kg), op.State().HasState(kg))
		}
	}
	groups := fresh.Groups()
	if groups != op.Groups() {
		t.Fatalf("restored %d groups, snapshot had %d", groups, op.Groups())
	}
	op.Close()
	return fresh
}

func diffRows(got, want []enginetest.Row) string {
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		if g != w {
			return fmt.Sprintf("first difference at output row %d of %d/%d:\n got  %s\n want %s", i, len(got), len(want), g, w)
		}
	}
	return ""
}

// TestGroupAggregateMatchesReference runs randomized workloads (insert-only and retracting,
// NULLs, integer extremes, NaN, ±Inf, -0.0, retractions before any accumulate) through the
// operator at batch sizes 1, 3, random and 4096, with garbage under NULL slots and non-zero
// offsets, and with snapshot/restore into fresh operators mid-stream, and compares the whole
// changelog with the row-at-a-time model of Flink's GroupAggFunction.
func TestGroupAggregateMatchesReference(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	for seed := range uint64(seeds) {
		sc := randomScenario(seed)
		ref := newRefGroupAgg(sc.spec)
		var want []enginetest.Row
		for i, row := range sc.rows {
			now := int64(0)
			if sc.times != nil {
				now = sc.times[i]
			}
			want = append(want, ref.process(row, sc.kinds[i], now)...)
		}
		r := rand.New(rand.NewPCG(seed, 7))
		variants := []struct {
			name    string
			size    func() int
			restore int
		}{
			{"batch=1", func() int { return 1 }, 0},
			{"batch=3", func() int { return 3 }, 0},
			{"batch=random+restore", func() int { return 1 + r.IntN(200) }, 1 + r.IntN(4)},
			{"batch=4096", func() int { return 4096 }, 0},
		}
		for _, v := range variants {
			got := runOperator(t, sc, v.size, v.restore, rand.New(rand.NewPCG(seed, 3)))
			if d := diffRows(got, want); d != "" {
				t.Fatalf("seed %d %s (%d input rows, spec %s): %s", seed, v.name, len(sc.rows), jsonMarshal(sc.spec), d)
			}
		}
	}
}

// TestGroupAggregateManyKeys: above engine.WarmKeys groups the batch's lookups and folds are
// warmed first (KeyTable.Warm, warm); the results must not change. Two batches over the same
// keys (BIGINT and VARCHAR keys): the first inserts every group, the second updates each.
func TestGroupAggregateManyKeys(t *testing.T) {
	const keys = engine.WarmKeys + 5000
	for _, keyType := range []string{"BIGINT", "VARCHAR"} {
		header, err := engine.ParseSpec([]byte(`{"kind":"group_aggregate","inputs":[{"fields":[{"name":"k","type":"` + keyType + `","nullable":false},{"name":"v","type":"BIGINT"}],"keys":[0]}],
			"max_parallelism":128,"params":{"aggs":[{"func":"COUNT"},{"func":"SUM","args":[1]},{"func":"MAX","args":[1]},{"func":"AVG","args":[1]}],"generate_update_before":true}}`))
		if err != nil {
			t.Fatal(err)
		}
		spec, err := ParseSpec(header)
		if err != nil {
			t.Fatal(err)
		}
		op, err := NewGroupAggregate(spec)
		if err != nil {
			t.Fatal(err)
		}
		key := func(k int) any {
			if keyType == "VARCHAR" {
				return fmt.Sprintf("key-%d", k)
			}
			return int64(k)
		}
		for pass, v := range []int64{10, 30} {
			want := map[string]bool{}
			for start := 0; start < keys; start += 4096 {
				var rows [][]any
				for k := start; k < min(start+4096, keys); k++ {
					rows = append(rows, []any{key(k), v + int64(k%7)})
					x := v + int64(k%7)
					if pass == 0 {
						want[fmt.Sprintf("+I[%s, 1, %d, %d, %d]", enginetest.Format(key(k)), x, x, x)] = true
					} else {
						old := 10 + int64(k%7)
						want[fmt.Sprintf("-U[%s, 1, %d, %d, %d]", enginetest.Format(key(k)), old, old, old)] = true
						want[fmt.Sprintf("+U[%s, 2, %d, %d, %d]", enginetest.Format(key(k)), old+x, x, (old+x)/2)] = true
					}
				}
				out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
				if _, err := op.Process(engine.Of(0, 1, enginetest.Batch(spec.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})), 0, out); err != nil {
					t.Fatal(err)
				}
				for _, r := range enginetest.Rows(out) {
					if !want[r.String()] {
						t.Fatalf("%s keys, pass %d: unexpected row %s", keyType, pass, r)
					}
					delete(want, r.String())
				}
			}
			if len(want) != 0 {
				t.Fatalf("%s keys, pass %d: %d rows missing", keyType, pass, len(want))
			}
		}
		op.Close()
	}
}
