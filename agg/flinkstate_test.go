package agg

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// Java's GroupAggregateDifferentialTest, TwoPhaseAggregateDifferentialTest and
// SavepointSwitchTest import the state Flink's own operators wrote; these tests check the
// import's contract on Go's side.

// importRows writes, for every key of op that the rows of sc before end touched, the import row
// Flink would hand over: the key's values, its accumulator fields, its DISTINCT maps, its record
// count and, with TTL, its last write.
func importRows(t *testing.T, op *GroupAggregate, sc scenario, end int) [][]any {
	t.Helper()
	b := enginetest.Batch(sc.spec.InputTypes, sc.rows[:end], sc.kinds[:end], enginetest.Options{})
	if err := op.keys.Encode(b); err != nil {
		t.Fatal(err)
	}
	var ids []int32
	var keys [][]any
	for i := range end {
		hash := op.keys.Hash(i)
		kg, err := op.state.KeyGroupOf(hash)
		if err != nil {
			t.Fatal(err)
		}
		id := op.state.Find(op.keys.Key(i), hash, kg)
		if id < 0 || slices.Contains(ids, id) {
			continue
		}
		ids = append(ids, id)
		var key []any
		for _, k := range op.keyCols {
			key = append(key, sc.rows[i][k])
		}
		keys = append(keys, key)
	}
	l, err := op.importLayout()
	if err != nil || len(ids) == 0 {
		return nil
	}
	vb := make([]int, len(l.all))
	l.varBytes(op.calls, nil, ids, vb)
	for c, acc := range op.calls {
		if v, ok := acc.(kernels.ViewState); ok {
			vb[l.first[c]-l.start] = v.StateBytes(ids, op.ttl)
		}
	}
	for s, d := range op.sets {
		vb[l.views-l.start+s] = d.ViewBytes(ids, op.ttl)
	}
	out := engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if err := out.Init(l.all, len(ids), vb); err != nil {
		t.Fatal(err)
	}
	if err := l.writePartials(op.calls, nil, &out, 0, ids); err != nil {
		t.Fatal(err)
	}
	for c, acc := range op.calls {
		if v, ok := acc.(kernels.ViewState); ok {
			v.WriteState(&out.Cols[l.first[c]-l.start], ids, op.ttl)
		}
	}
	for s, d := range op.sets {
		d.WriteView(&out.Cols[l.views-l.start+s], ids, op.ttl)
	}
	out.Finish()
	rows := make([][]any, len(ids))
	for j, r := range enginetest.Rows(&out) {
		rows[j] = append(keys[j], r.Values...)
		if op.counter != nil {
			rows[j] = append(rows[j], op.counter.n[ids[j]])
		}
		if op.ttl {
			rows[j] = append(rows[j], op.state.LastWrite(ids[j]))
		}
	}
	return rows
}

func inserts(n int) []engine.RowKind { return make([]engine.RowKind, n) }

// processAll runs rows through op in batches of at most 64, each at its rows' processing time
// (cut where time moves), and returns the output.
func processAll(t *testing.T, op *GroupAggregate, sc scenario, from, to int) []string {
	t.Helper()
	var got []string
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	for pos, end := from, from; pos < to; pos = end {
		end = min(pos+64, to)
		now := int64(0)
		if sc.times != nil {
			now = sc.times[pos]
			for i := pos; i < end; i++ {
				if sc.times[i] != now {
					end = i
					break
				}
			}
		}
		b := enginetest.Batch(sc.spec.InputTypes, sc.rows[pos:end], sc.kinds[pos:end], enginetest.Options{})
		if _, err := op.Process(engine.Of(0, 1, b), now, out); err != nil {
			t.Fatal(err)
		}
		for _, r := range enginetest.Rows(out) {
			got = append(got, r.String())
		}
	}
	return got
}

// An operator that imported another's state, written as Flink's accumulator rows (with idle-state
// TTL, their last write times), continues exactly as the other does, time moving on: same output,
// same keys.
func TestImportStateContinuesAsTheExporter(t *testing.T) {
	imported, distinct, distinctTTL, minMax := 0, 0, 0, 0
	for seed := range uint64(1000) {
		sc := randomScenario(seed)
		a, err := NewGroupAggregate(sc.spec)
		if err != nil {
			t.Fatal(err)
		}
		types, err := a.ImportTypes()
		if err != nil {
			if !errors.Is(err, engine.ErrUnsupported) {
				t.Fatalf("seed %d: %v", seed, err)
			}
			continue
		}
		half := len(sc.rows) / 2
		processAll(t, a, sc, 0, half)
		rows := importRows(t, a, sc, half)
		b, err := NewGroupAggregate(sc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.ImportState(enginetest.Batch(types, rows, inserts(len(rows)), enginetest.Options{Offset: 1})); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if a.Groups() != b.Groups() {
			t.Fatalf("seed %d: %d keys imported, the exporter holds %d", seed, b.Groups(), a.Groups())
		}
		want, got := processAll(t, a, sc, half, len(sc.rows)), processAll(t, b, sc, half, len(sc.rows))
		if !slices.Equal(want, got) {
			t.Fatalf("seed %d: after the import:\n got %v\nwant %v", seed, got, want)
		}
		if len(rows) > 0 {
			imported++
			if len(a.sets) > 0 {
				distinct++
				if a.ttl {
					distinctTTL++
				}
			}
			if slices.ContainsFunc(a.calls, func(c kernels.Accumulator) bool { _, ok := c.(kernels.ViewState); return ok }) {
				minMax++
			}
		}
	}
	t.Logf("%d of 1000 scenarios imported state, %d of them DISTINCT maps (%d of those with TTL), %d MIN/MAX with retraction", imported, distinct, distinctTTL, minMax)
	if imported < 80 || distinct < 20 || minMax < 20 {
		t.Fatalf("only %d of 1000 scenarios imported state, %d of them DISTINCT maps", imported, distinct)
	}
}

// sumCountSpec is SUM(v), COUNT(*) GROUP BY k (BIGINT) over retracting input.
func sumCountSpec() *Spec {
	return mustParse(&testSpec{Kind: "group_aggregate", MaxParallelism: 128, NeedRetraction: true,
		Input: []engine.FieldSpec{{Name: "k", Type: "BIGINT"}, {Name: "v", Type: "BIGINT"}}, Keys: []int{0},
		Aggs: []AggCall{{Func: "SUM", Args: []int{1}, Retract: true, Name: "s"}, {Func: "COUNT", Retract: true, Name: "n"}}})
}

// A bad import batch fails with a precise error and keeps no key of the batch.
func TestImportStateRefusesBadBatches(t *testing.T) {
	spec := sumCountSpec()
	op, err := NewGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	types, err := op.ImportTypes()
	if err != nil {
		t.Fatal(err)
	}
	// k, SUM's (sum, count), COUNT's count, then the record count
	if want := "[BIGINT NOT NULL, BIGINT, BIGINT, BIGINT, BIGINT NOT NULL]"; typeList(types) != strings.ReplaceAll(want, " NOT NULL", "") {
		t.Fatalf("import types %s, want %s", typeList(types), want)
	}
	good := []any{int64(1), int64(10), int64(2), int64(2), int64(2)}
	for _, c := range []struct {
		name  string
		types []engine.Type
		rows  [][]any
		want  string
	}{
		{"too few columns", types[:4], [][]any{good[:4]}, "an import batch has 4 columns, want 5"},
		{"wrong type", append([]engine.Type{{ID: engine.Int}}, types[1:]...), [][]any{append([]any{int64(1)}, good[1:]...)}, "import column 0 is INT, want BIGINT"},
		{"record count 0", types, [][]any{{int64(1), int64(10), int64(2), int64(2), int64(0)}}, "row 0: a key with record count NULL or 0"},
		{"a key twice", types, [][]any{good, good}, "row 1: the key holds state already"},
	} {
		err := op.ImportState(enginetest.Batch(c.types, c.rows, inserts(len(c.rows)), enginetest.Options{}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: error %v, want %q", c.name, err, c.want)
		}
		if op.Groups() != 0 {
			t.Fatalf("%s: %d keys kept after a failed import", c.name, op.Groups())
		}
	}
	if err := op.ImportState(enginetest.Batch(types, [][]any{good}, inserts(1), enginetest.Options{})); err != nil {
		t.Fatal(err)
	}
	if err := op.ImportState(enginetest.Batch(types, [][]any{good}, inserts(1), enginetest.Options{})); err == nil || !strings.Contains(err.Error(), "the key holds state already") {
		t.Fatalf("importing a key twice: %v", err)
	}
}

// State Flink keeps outside accState is not imported.
func TestImportStateRefusesWhatItCannotCarry(t *testing.T) {
	in := []engine.FieldSpec{{Name: "k", Type: "BIGINT"}, {Name: "v", Type: "BIGINT"}}
	for _, c := range []struct {
		spec *testSpec
		want string
	}{
		{&testSpec{Aggs: []AggCall{{Func: "LAST_VALUE", Args: []int{1}, Retract: true, Name: "m"}}, NeedRetraction: true}, "aggs[0]: importing Flink's state of an aggregate with retraction that keeps a data view"},
	} {
		c.spec.Kind, c.spec.MaxParallelism, c.spec.Input, c.spec.Keys = "group_aggregate", 128, in, []int{0}
		op, err := NewGroupAggregate(mustParse(c.spec))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.ImportTypes(); !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%v: error %v, want ErrUnsupported with %q", c.spec.Aggs, err, c.want)
		}
	}
}

// An export writes every key once, in chunks of exportChunk keys: the key's encoded bytes, its
// accumulator fields as an import row carries them, and its record count.
func TestExportStateWritesEveryKey(t *testing.T) {
	spec := sumCountSpec()
	op, err := NewGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	const keys = 2*exportChunk + 100
	var rows [][]any
	for k := range int64(keys) {
		rows = append(rows, []any{k, 10 * k}, []any{k, int64(1)})
	}
	sc := scenario{spec: spec, rows: rows, kinds: inserts(len(rows))}
	processAll(t, op, sc, 0, len(rows))
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	seen := map[string]bool{}
	for chunk, more := 0, true; more; chunk++ {
		if more, err = op.ExportState(out, chunk == 0); err != nil {
			t.Fatal(err)
		}
		if want := chunk < 2; more != want {
			t.Fatalf("chunk %d: more %v, want %v", chunk, more, want)
		}
		for _, r := range enginetest.Rows(out) {
			key := r.Values[0].(string)                             // BINARY decodes as a string of its bytes
			k := int64(binary.LittleEndian.Uint64([]byte(key)[8:])) // the header word, then the BIGINT
			if seen[key] {
				t.Fatalf("key %d exported twice", k)
			}
			seen[key] = true
			// SUM's (sum, count), COUNT's count, the record count
			if want := []any{10*k + 1, int64(2), int64(2), int64(2)}; !slices.Equal(r.Values[1:], want) {
				t.Fatalf("key %d: exported %v, want %v", k, r.Values[1:], want)
			}
		}
	}
	if len(seen) != keys {
		t.Fatalf("%d keys exported, want %d", len(seen), keys)
	}
}

// viewState encodes a DISTINCT map of BIGINT values in the import form: entries of (NULL?, value,
// one BIGINT word).
func viewState(entries ...[3]int64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 1)
	for _, e := range entries {
		if e[0] == 1 {
			b = append(b, 1)
		} else {
			b = binary.LittleEndian.AppendUint64(append(b, 0), uint64(e[1]))
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(e[2]))
	}
	return b
}

// A DISTINCT map is imported as Flink holds it, but for the NULL value's entry and entries
// without a bit, which no row can tell from absent ones; a malformed map fails the import and
// keeps no key.
func TestImportStateOfDistinctMaps(t *testing.T) {
	spec := mustParse(&testSpec{Kind: "group_aggregate", MaxParallelism: 128, Input: bigintInput("k", "v"), Keys: []int{0},
		Aggs: []AggCall{{Func: "COUNT", Args: []int{1}, Distinct: true, Name: "d"}}})
	op, err := NewGroupAggregate(spec)
	if err != nil {
		t.Fatal(err)
	}
	types, err := op.ImportTypes()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := typeList(types), "[BIGINT, BIGINT, BYTES]"; got != want { // k, COUNT's count, the map
		t.Fatalf("import types %s, want %s", got, want)
	}
	for _, c := range []struct {
		name string
		view any
		want string
	}{
		{"NULL map", nil, "NULL, want a map"},
		{"a value twice", string(viewState([3]int64{0, 7, 1}, [3]int64{0, 7, 1})), "distinct map holds a value twice"},
		{"a bit of no call", string(viewState([3]int64{0, 7, 2})), "bit 1 set for 1 calls"},
		{"truncated", string(viewState([3]int64{0, 7, 1})[:12]), "key of 8 bytes, 7 left"},
	} {
		err := op.ImportState(enginetest.Batch(types, [][]any{{int64(1), int64(1), c.view}}, inserts(1), enginetest.Options{}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: error %v, want %q", c.name, err, c.want)
		}
		if op.Groups() != 0 {
			t.Fatalf("%s: %d keys kept after a failed import", c.name, op.Groups())
		}
	}
	view := viewState([3]int64{1, 0, 1}, [3]int64{0, 5, 1}, [3]int64{0, 6, 0})
	if err := op.ImportState(enginetest.Batch(types, [][]any{{int64(1), int64(1), string(view)}}, inserts(1), enginetest.Options{})); err != nil {
		t.Fatal(err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if _, err := op.ExportState(out, true); err != nil {
		t.Fatal(err)
	}
	rows := enginetest.Rows(out)
	if len(rows) != 1 || rows[0].Values[2] != string(viewState([3]int64{0, 5, 1})) {
		t.Fatalf("exported %v, want the entry of 5 alone", rows)
	}
	// 5 is in the set, 6 is not: one more distinct value
	sc := scenario{spec: spec, rows: [][]any{{int64(1), int64(5)}, {int64(1), int64(6)}}, kinds: inserts(2)}
	if got, want := processAll(t, op, sc, 0, 2), []string{"+U[1, 2]"}; !slices.Equal(got, want) {
		t.Fatalf("after the import: %v, want %v", got, want)
	}
}
