package regularjoin

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/javahash"
	"github.com/ferrystream/ferry/joincore"
)

// The inputs of the tests: left (k BIGINT, id BIGINT NOT NULL, v VARCHAR), right (k BIGINT,
// id BIGINT NOT NULL, w VARCHAR), joined on k; the unique keys are k
// (join_key_contains_unique_key) or id (input_has_unique_key).
var sideTypes = []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.BigInt}, {ID: engine.Varchar, Nullable: true}}

func specJSON(p Params, maxPar, chunk int) []byte {
	in := func(third string) string {
		return fmt.Sprintf(`{"fields":[{"name":"k","type":"BIGINT"},{"name":"id","type":"BIGINT","nullable":false},{"name":%q,"type":"VARCHAR"}],"keys":[0]}`, third)
	}
	params, _ := json.Marshal(p)
	return []byte(fmt.Sprintf(`{"kind":"regular_join","name":"test","inputs":[%s,%s],"max_parallelism":%d,"chunk_rows":%d,"params":%s}`,
		in("v"), in("w"), maxPar, chunk, params))
}

func openJoin(t testing.TB, p Params, maxPar, chunk int) *Join {
	t.Helper()
	spec, err := engine.ParseSpec(specJSON(p, maxPar, chunk))
	if err != nil {
		t.Fatal(err)
	}
	op, err := enginetest.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	return op.(*Join)
}

// params returns the params of a join of type jt with the layouts ll and rl (unique keys as the
// test inputs have them) and one `=` key.
func params(jt, ll, rl string) Params {
	p := Params{JoinType: jt, FilterNulls: []bool{true}, LeftLayout: ll, RightLayout: rl}
	uk := map[string][]int{LayoutJoinKeyUnique: {0}, LayoutUniqueKey: {1}}
	p.LeftUniqueKey, p.RightUniqueKey = uk[ll], uk[rl]
	return p
}

// ev is one input row: side 'L' or 'R', its row kind, and its values k (int64 or nil), id, v.
type ev struct {
	side byte
	kind engine.RowKind
	k    any
	id   int64
	v    any
}

func L(kind engine.RowKind, k any, id int64, v any) ev { return ev{'L', kind, k, id, v} }
func R(kind engine.RowKind, k any, id int64, v any) ev { return ev{'R', kind, k, id, v} }

const (
	I  = engine.Insert
	UB = engine.UpdateBefore
	UA = engine.UpdateAfter
	D  = engine.Delete
)

func (e ev) values() []any { return []any{e.k, e.id, e.v} }

// drain collects every chunk of a call's output as strings.
func drain(t testing.TB, op *Join, more bool, err error, out *engine.OutBatch) []string {
	t.Helper()
	var rows []string
	for {
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range enginetest.Rows(out) {
			rows = append(rows, r.String())
		}
		if !more {
			return rows
		}
		more, err = op.Continue(out)
	}
}

// feed hands evs to op in one call (both sides' rows in arrival order, as runs) and returns
// the output.
func feed(t testing.TB, op *Join, evs []ev) []string {
	t.Helper()
	var rows [2][][]any
	var kinds [2][]engine.RowKind
	var runs []engine.Run
	for _, e := range evs {
		s := 0
		if e.side == 'R' {
			s = 1
		}
		rows[s] = append(rows[s], e.values())
		kinds[s] = append(kinds[s], e.kind)
		if n := len(runs); n > 0 && runs[n-1].Input == s {
			runs[n-1].Rows++
		} else {
			runs = append(runs, engine.Run{Input: s, Rows: 1})
		}
	}
	in := &engine.Inputs{Batches: make([]*engine.Batch, 2), Runs: runs}
	for s := range 2 {
		if len(rows[s]) > 0 {
			in.Batches[s] = enginetest.Batch(sideTypes, rows[s], kinds[s], enginetest.Options{Offset: 1})
		}
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	more, err := op.Process(in, 0, out)
	return drain(t, op, more, err, out)
}

// flush ends a mini-batch bundle and returns the output.
func flush(t testing.TB, op *Join) []string {
	t.Helper()
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	more, err := op.Flush(0, out)
	return drain(t, op, more, err, out)
}

// step is one call of a scenario and the output it must give.
type step struct {
	in   []ev
	want []string
}

// run feeds each step's rows in one call and checks its output; then again with a snapshot and
// restore between steps, where the rows of a step must be the same but their order may differ (a
// restored map is sized for its entries, as Flink's heap backend restores it: the model test
// checks that order).
func run(t *testing.T, p Params, steps []step) *Join {
	t.Helper()
	for _, restore := range []bool{false, true} {
		op := openJoin(t, p, 8, 2)
		for i, s := range steps {
			got, want := feed(t, op, s.in), slices.Clone(s.want)
			if restore {
				slices.Sort(got)
				slices.Sort(want)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("restore %v, step %d: output differs\ngot:\n%s\nwant:\n%s", restore, i, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if restore {
				op = snapshotRestore(t, op, p, 8)
			}
		}
		if restore {
			return op
		}
		op.Close()
	}
	return nil
}

// snapshotRestore snapshots every key group of op (in small pieces) and restores them into a
// new operator.
func snapshotRestore(t testing.TB, op *Join, p Params, maxPar int) *Join {
	t.Helper()
	fresh := openJoin(t, p, maxPar, 2)
	enginetest.Restore(t, fresh.State(), enginetest.Snapshot(t, op.State(), 16))
	if fresh.State().Len() != op.State().Len() || fresh.keys.bytes != op.keys.bytes {
		t.Fatalf("restored %d keys of %d bytes, had %d of %d", fresh.State().Len(), fresh.keys.bytes, op.State().Len(), op.keys.bytes)
	}
	op.Close()
	return fresh
}

// TestInnerNoUniqueKey: duplicates are stored with a count and joined once per copy; an inner
// side forwards its row kinds (+U, -U) into the joined rows.
func TestInnerNoUniqueKey(t *testing.T) {
	op := run(t, params("INNER", LayoutNoUniqueKey, LayoutNoUniqueKey), []step{
		{[]ev{L(I, int64(1), 1, "a"), L(I, int64(1), 1, "a")}, nil},
		{[]ev{R(I, int64(1), 10, "x")}, []string{`+I[1, 1, "a", 1, 10, "x"]`, `+I[1, 1, "a", 1, 10, "x"]`}},
		{[]ev{R(UA, int64(1), 11, "y"), L(UB, int64(1), 1, "a")}, []string{
			`+U[1, 1, "a", 1, 11, "y"]`, `+U[1, 1, "a", 1, 11, "y"]`,
			`-U[1, 1, "a", 1, 10, "x"]`, `-U[1, 1, "a", 1, 11, "y"]`, // one copy left; right rows in HashMap order
		}},
		{[]ev{R(D, int64(2), 10, "x"), L(D, int64(1), 1, "a"), L(D, int64(1), 1, "a")}, []string{
			`-D[1, 1, "a", 1, 10, "x"]`, `-D[1, 1, "a", 1, 11, "y"]`,
			// lenient: a retraction of a row not stored still retracts its joins
			`-D[1, 1, "a", 1, 10, "x"]`, `-D[1, 1, "a", 1, 11, "y"]`,
		}},
		{[]ev{R(D, int64(1), 10, "x"), R(D, int64(1), 11, "y")}, nil},
	})
	if op.State().Len() != 0 || op.keys.bytes != 0 {
		t.Fatalf("%d keys, %d bytes left", op.State().Len(), op.keys.bytes)
	}
}

// TestLeftJoin: a padded left row is retracted (-D) when it first matches and padded again
// (+I) when its last match goes; the left side's rows always carry +I/-D.
func TestLeftJoin(t *testing.T) {
	for _, ll := range []string{LayoutJoinKeyUnique, LayoutUniqueKey, LayoutNoUniqueKey} {
		t.Run(ll, func(t *testing.T) {
			op := run(t, params("LEFT", ll, LayoutNoUniqueKey), []step{
				{[]ev{L(I, int64(1), 1, "a")}, []string{`+I[1, 1, "a", null, null, null]`}},
				{[]ev{R(I, int64(1), 10, "x")}, []string{`-D[1, 1, "a", null, null, null]`, `+I[1, 1, "a", 1, 10, "x"]`}},
				{[]ev{R(UA, int64(1), 10, "x")}, []string{`+I[1, 1, "a", 1, 10, "x"]`}},
				{[]ev{R(UB, int64(1), 10, "x")}, []string{`-U[1, 1, "a", 1, 10, "x"]`}},
				{[]ev{R(D, int64(1), 10, "x")}, []string{`-D[1, 1, "a", 1, 10, "x"]`, `+I[1, 1, "a", null, null, null]`}},
				{[]ev{L(UB, int64(1), 1, "a"), R(I, int64(1), 12, "z")}, []string{`-D[1, 1, "a", null, null, null]`}},
				{[]ev{L(UA, int64(1), 1, "b")}, []string{`+I[1, 1, "b", 1, 12, "z"]`}},
				{[]ev{L(D, int64(1), 1, "b"), R(D, int64(1), 12, "z")}, []string{`-D[1, 1, "b", 1, 12, "z"]`}},
				{[]ev{L(I, int64(2), 2, "c"), L(D, int64(2), 2, "c"), L(D, int64(3), 3, "d")}, []string{
					`+I[2, 2, "c", null, null, null]`, `-D[2, 2, "c", null, null, null]`, `-D[3, 3, "d", null, null, null]`}},
			})
			if op.State().Len() != 0 || op.keys.bytes != 0 {
				t.Fatalf("%d keys, %d bytes left", op.State().Len(), op.keys.bytes)
			}
		})
	}
}

// TestRightJoinLenientRetraction: a retraction of a left row never stored (the inner side)
// retracts its joins and drives the padded right row's association count below zero, as Flink's
// does: the next match then emits no -D of the padding.
func TestRightJoinLenientRetraction(t *testing.T) {
	run(t, params("RIGHT", LayoutUniqueKey, LayoutJoinKeyUnique), []step{
		{[]ev{R(I, int64(1), 10, "x")}, []string{`+I[null, null, null, 1, 10, "x"]`}},
		{[]ev{L(D, int64(1), 1, "a")}, []string{`-D[1, 1, "a", 1, 10, "x"]`}}, // association 0 -> -1: no padding
		{[]ev{L(I, int64(1), 1, "a")}, []string{`+I[1, 1, "a", 1, 10, "x"]`}}, // -1 -> 0: no -D of the padding
		{[]ev{L(D, int64(1), 1, "a")}, []string{`-D[1, 1, "a", 1, 10, "x"]`}}, // 0 -> -1
		{[]ev{L(I, int64(1), 1, "a"), L(I, int64(1), 2, "b")}, []string{
			`+I[1, 1, "a", 1, 10, "x"]`,                                       // -1 -> 0
			`-D[null, null, null, 1, 10, "x"]`, `+I[1, 2, "b", 1, 10, "x"]`}}, // 0 -> 1: the padding retracted now
		// the left map's order: unique key id 2 before id 1 (their hash codes' bins, TestMapOrder)
		{[]ev{R(D, int64(1), 10, "x")}, []string{`-D[1, 2, "b", 1, 10, "x"]`, `-D[1, 1, "a", 1, 10, "x"]`}},
		{[]ev{R(I, int64(1), 10, "y")}, []string{`+I[1, 2, "b", 1, 10, "y"]`, `+I[1, 1, "a", 1, 10, "y"]`}},
	})
}

// TestFullJoinUniqueKeys: both sides padded; input_has_unique_key replaces a row by its unique
// key, join_key_contains_unique_key keeps one row per join key and clears it on any retraction.
func TestFullJoinUniqueKeys(t *testing.T) {
	run(t, params("FULL", LayoutJoinKeyUnique, LayoutUniqueKey), []step{
		{[]ev{L(I, int64(1), 1, "a"), L(I, int64(1), 1, "b")}, []string{
			`+I[1, 1, "a", null, null, null]`, `+I[1, 1, "b", null, null, null]`}}, // the second replaces the first
		{[]ev{R(I, int64(1), 10, "x")}, []string{`-D[1, 1, "b", null, null, null]`, `+I[1, 1, "b", 1, 10, "x"]`}},
		{[]ev{R(I, int64(1), 10, "x2")}, []string{`+I[1, 1, "b", 1, 10, "x2"]`}}, // replaces x; the left row has 2 associations
		{[]ev{R(I, int64(1), 11, "y")}, []string{`+I[1, 1, "b", 1, 11, "y"]`}},
		{[]ev{L(D, int64(1), 1, "zzz")}, []string{ // clears the left row whatever its values
			`-D[1, 1, "zzz", 1, 10, "x2"]`, `+I[null, null, null, 1, 10, "x2"]`,
			`-D[1, 1, "zzz", 1, 11, "y"]`, `+I[null, null, null, 1, 11, "y"]`}},
		{[]ev{L(I, int64(1), 1, "c")}, []string{
			`-D[null, null, null, 1, 10, "x2"]`, `+I[1, 1, "c", 1, 10, "x2"]`,
			`-D[null, null, null, 1, 11, "y"]`, `+I[1, 1, "c", 1, 11, "y"]`}},
		{[]ev{R(D, int64(1), 10, "x"), R(D, int64(1), 11, "y")}, []string{
			`-D[1, 1, "c", 1, 10, "x"]`, `-D[1, 1, "c", 1, 11, "y"]`, `+I[1, 1, "c", null, null, null]`}}, // the retraction's values
	})
}

// TestNullKeys: a key with NULL at an `=` position joins nothing and is not stored: a padded
// side's rows are padded on arrival and retraction, the other side's dropped. Under IS NOT
// DISTINCT FROM, NULL keys join.
func TestNullKeys(t *testing.T) {
	op := run(t, params("LEFT", LayoutNoUniqueKey, LayoutNoUniqueKey), []step{
		{[]ev{L(I, nil, 1, "a"), R(I, nil, 10, "x"), L(I, nil, 1, "a")}, []string{
			`+I[null, 1, "a", null, null, null]`, `+I[null, 1, "a", null, null, null]`}},
		{[]ev{L(D, nil, 1, "a"), R(D, nil, 10, "x"), L(UB, nil, 2, "b")}, []string{
			`-D[null, 1, "a", null, null, null]`, `-D[null, 2, "b", null, null, null]`}},
	})
	if op.State().Len() != 0 {
		t.Fatalf("%d keys stored", op.State().Len())
	}
	p := params("LEFT", LayoutNoUniqueKey, LayoutNoUniqueKey)
	p.FilterNulls = []bool{false}
	run(t, p, []step{
		{[]ev{L(I, nil, 1, "a"), R(I, nil, 10, "x")}, []string{
			`+I[null, 1, "a", null, null, null]`, `-D[null, 1, "a", null, null, null]`, `+I[null, 1, "a", null, 10, "x"]`}},
	})
}

// TestCondition: the residual condition (left id <= right id) decides which stored rows join;
// association counts follow the joins only.
func TestCondition(t *testing.T) {
	p := params("FULL", LayoutNoUniqueKey, LayoutUniqueKey)
	p.Condition = &joincore.Expr{Op: "le", Args: []joincore.Expr{{Op: "field", Field: 1}, {Op: "field", Field: 4}}}
	run(t, p, []step{
		{[]ev{L(I, int64(1), 5, "a")}, []string{`+I[1, 5, "a", null, null, null]`}},
		{[]ev{R(I, int64(1), 4, "x")}, []string{`+I[null, null, null, 1, 4, "x"]`}},
		{[]ev{R(I, int64(1), 5, "y")}, []string{`-D[1, 5, "a", null, null, null]`, `+I[1, 5, "a", 1, 5, "y"]`}},
		// the right map's order: unique key id 5 before id 4 (TestMapOrder)
		{[]ev{L(I, int64(1), 3, "b")}, []string{
			`+I[1, 3, "b", 1, 5, "y"]`, `-D[null, null, null, 1, 4, "x"]`, `+I[1, 3, "b", 1, 4, "x"]`}},
	})
}

// TestMapOrder: the rows a right row joins come in java.util.HashMap's order over their
// BinaryRowData hash codes (javahash.Order, insertion only), here 40 rows in resized tables.
func TestMapOrder(t *testing.T) {
	for _, ll := range []string{LayoutUniqueKey, LayoutNoUniqueKey} {
		op := openJoin(t, params("INNER", ll, LayoutNoUniqueKey), 8, 1000)
		var evs []ev
		var hashes []int32
		for id := range int64(40) {
			e := L(I, int64(7), id*7919, fmt.Sprintf("r%d", id))
			evs = append(evs, e)
			cols, vals := []int{1}, []any{nil, e.id, nil}
			if ll == LayoutNoUniqueKey {
				cols, vals = []int{0, 1, 2}, e.values()
			}
			enc := engine.NewKeyEncoder(cols, sideTypes)
			if err := enc.Encode(enginetest.Batch(sideTypes, [][]any{vals}, []engine.RowKind{I}, enginetest.Options{})); err != nil {
				t.Fatal(err)
			}
			hashes = append(hashes, enc.Hash(0))
		}
		feed(t, op, evs)
		got := feed(t, op, []ev{R(I, int64(7), 0, "x")})
		var tableLen int
		order, _ := javahash.Order(hashes, &tableLen, nil, nil)
		var want []string
		for _, i := range order {
			want = append(want, fmt.Sprintf(`+I[7, %d, "r%d", 7, 0, "x"]`, evs[i].id, i))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: order\ngot:\n%s\nwant:\n%s", ll, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if slices.IsSorted(order) {
			t.Fatalf("%s: the test's order is insertion order: it checks nothing", ll)
		}
		op.Close()
	}
}

// TestRefusals: params the join does not accept name their field.
func TestRefusals(t *testing.T) {
	ok := params("INNER", LayoutUniqueKey, LayoutNoUniqueKey)
	for _, c := range []struct {
		edit        func(p *Params)
		unsupported bool
		want        string
	}{
		{func(p *Params) { p.JoinType = "LEFT_SEMI" }, false, "params.join_type"},
		{func(p *Params) { p.JoinType, p.MiniBatch = "SEMI", true }, true, "params.mini_batch: a SEMI join has no mini-batch operator"},
		{func(p *Params) { p.JoinType, p.MiniBatch = "ANTI", true }, true, "params.mini_batch"},
		{func(p *Params) { p.FilterNulls = nil }, false, "params.filter_nulls"},
		{func(p *Params) { p.LeftLayout = "x" }, false, "params.left_layout"},
		{func(p *Params) { p.LeftUniqueKey = nil }, false, "params.left_unique_key"},
		{func(p *Params) { p.LeftUniqueKey = []int{3} }, false, "params.left_unique_key[0]"},
		{func(p *Params) { p.LeftUniqueKey = []int{1, 1} }, false, "params.left_unique_key[1]"},
		{func(p *Params) { p.RightUniqueKey = []int{1} }, false, "params.right_unique_key"},
		{func(p *Params) { p.LeftLayout = LayoutJoinKeyUnique }, false, "params.left_unique_key[0]: column 1 is not a join key"},
		{func(p *Params) { p.LeftStateRetentionMs = 1000 }, true, "params.left_state_retention_ms: 1000: idle-state TTL on a regular join: not native yet"},
		{func(p *Params) { p.RightStateRetentionMs = -1 }, true, "params.right_state_retention_ms"},
	} {
		p := ok
		c.edit(&p)
		spec, err := engine.ParseSpec(specJSON(p, 8, 2))
		if err == nil {
			_, err = enginetest.Open(spec)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, engine.ErrUnsupported) != c.unsupported {
			t.Errorf("%+v: error %v, want %q (unsupported %v)", p, err, c.want, c.unsupported)
		}
	}
	// BINARY/VARBINARY fields are refused as not native.
	spec, err := engine.ParseSpec([]byte(`{"kind":"regular_join","name":"b","max_parallelism":8,"inputs":[` +
		`{"fields":[{"name":"k","type":"VARBINARY"}],"keys":[0]},{"fields":[{"name":"k","type":"VARBINARY"}],"keys":[0]}],` +
		`"params":{"join_type":"INNER","filter_nulls":[true],"left_layout":"no_unique_key","right_layout":"no_unique_key"}}`))
	if err == nil {
		_, err = enginetest.Open(spec)
	}
	if !errors.Is(err, engine.ErrUnsupported) {
		t.Fatalf("VARBINARY key: %v", err)
	}
}

// TestCorruptSnapshot restores every truncation and many byte changes of a snapshot of every
// layout: each restores or fails with engine.ErrData, never panics, and a failed key group leaves
// the memory estimate where it was.
func TestCorruptSnapshot(t *testing.T) {
	for _, p := range []Params{
		params("FULL", LayoutNoUniqueKey, LayoutUniqueKey),
		params("LEFT", LayoutJoinKeyUnique, LayoutNoUniqueKey),
	} {
		op := openJoin(t, p, 1, 2)
		var evs []ev
		for i := range int64(30) {
			evs = append(evs, L(I, i%2, i%3, "abcdefghij"[:i%10]), R(I, i%2, i%7, nil))
		}
		feed(t, op, evs)
		snap := enginetest.Snapshot(t, op.State(), 1<<20)
		chunk := snap[0][0]
		restores := 0
		try := func(c []byte) {
			fresh := openJoin(t, p, 1, 2)
			defer fresh.Close()
			err := fresh.State().RestoreKeyGroup(0, c)
			switch {
			case err == nil:
				restores++
				feed(t, fresh, evs[:4]) // usable
			case !errors.Is(err, engine.ErrData) && !errors.Is(err, engine.ErrInvalid):
				t.Fatalf("restore: %v", err)
			case fresh.keys.bytes != 0 || fresh.State().Len() != 0:
				t.Fatalf("failed restore (%v) left %d keys, %d bytes", err, fresh.State().Len(), fresh.keys.bytes)
			}
		}
		for n := range len(chunk) {
			try(chunk[:n])
		}
		for i := range len(chunk) {
			for _, x := range []byte{1, 0x80, 0xff} {
				c := slices.Clone(chunk)
				c[i] ^= x
				try(c)
			}
		}
		try(chunk)
		if restores == 0 {
			t.Fatal("nothing restored")
		}
		op.Close()
	}
}

// TestMiniBatch: changelogs read off MiniBatchStreamingJoinOperator and its bundles. Rows are
// queued until Flush; the right bundle is processed first (the left first for RIGHT); a key's
// "-X +X" messages are a suppressed pair (the state not retracted, the other side's padding left
// alone); "+X -X" cancels; a snapshot is refused while rows are queued.
func TestMiniBatch(t *testing.T) {
	type bundleStep struct {
		in   [][]ev // the Process calls of one bundle
		want []string
	}
	check := func(t *testing.T, p Params, steps []bundleStep) *Join {
		t.Helper()
		p.MiniBatch = true
		op := openJoin(t, p, 8, 2)
		for i, s := range steps {
			for _, call := range s.in {
				if got := feed(t, op, call); len(got) != 0 {
					t.Fatalf("step %d: Process emitted %v", i, got)
				}
			}
			if err := op.snapshottable(); (err != nil) != (len(s.in) > 0) || err != nil && !errors.Is(err, engine.ErrState) {
				t.Fatalf("step %d: snapshottable: %v", i, err)
			}
			got := flush(t, op)
			if strings.Join(got, "\n") != strings.Join(s.want, "\n") {
				t.Fatalf("step %d: output differs\ngot:\n%s\nwant:\n%s", i, strings.Join(got, "\n"), strings.Join(s.want, "\n"))
			}
			if err := op.snapshottable(); err != nil {
				t.Fatalf("step %d: after Flush: %v", i, err)
			}
			op = snapshotRestore(t, op, p, 8)
		}
		return op
	}
	t.Run("left", func(t *testing.T) {
		op := check(t, params("LEFT", LayoutJoinKeyUnique, LayoutJoinKeyUnique), []bundleStep{
			// right first: the left row finds its match, never padded
			{[][]ev{{L(I, int64(1), 1, "a")}, {R(I, int64(1), 1, "x")}}, []string{`+I[1, 1, "a", 1, 1, "x"]`}},
			// -U +U of the right row: suppressed, the left row's padding untouched
			{[][]ev{{R(UB, int64(1), 1, "x"), R(UA, int64(1), 1, "y")}}, []string{`-U[1, 1, "a", 1, 1, "x"]`, `+I[1, 1, "a", 1, 1, "y"]`}},
			// -D +I of the left (padded) row: its joins retracted and emitted again
			{[][]ev{{L(D, int64(1), 1, "a")}, {L(I, int64(1), 1, "b")}}, []string{`-D[1, 1, "a", 1, 1, "y"]`, `+I[1, 1, "b", 1, 1, "y"]`}},
			// +I then -D cancels; -U +U +U keeps -U and the last +U, a suppressed pair
			{[][]ev{{L(I, int64(2), 2, "c"), L(D, int64(2), 2, "c"), R(UB, int64(1), 1, "y"), R(UA, int64(1), 1, "z"), R(UA, int64(1), 1, "w")}},
				[]string{`-U[1, 1, "b", 1, 1, "y"]`, `+I[1, 1, "b", 1, 1, "w"]`}},
			// the right row retracted: the left row padded again
			{[][]ev{{R(D, int64(1), 1, "w")}}, []string{`-D[1, 1, "b", 1, 1, "w"]`, `+I[1, 1, "b", null, null, null]`}},
			{nil, nil},
		})
		op.Close()
	})
	t.Run("right", func(t *testing.T) {
		// left first: the right row finds its match
		op := check(t, params("RIGHT", LayoutUniqueKey, LayoutUniqueKey), []bundleStep{
			{[][]ev{{R(I, int64(1), 1, "x"), L(I, int64(1), 1, "a")}}, []string{`+I[1, 1, "a", 1, 1, "x"]`}},
			// the left row's -U +U (unique key 1): suppressed, the right row never padded
			{[][]ev{{L(UB, int64(1), 1, "a"), L(UA, int64(1), 1, "b")}}, []string{`-U[1, 1, "a", 1, 1, "x"]`, `+I[1, 1, "b", 1, 1, "x"]`}},
		})
		op.Close()
	})
	t.Run("watermark", func(t *testing.T) {
		// a watermark ends the bundle (processWatermark1/2); a processing-time callback does not
		p := params("LEFT", LayoutNoUniqueKey, LayoutNoUniqueKey)
		p.MiniBatch = true
		op := openJoin(t, p, 8, 2)
		feed(t, op, []ev{L(I, int64(5), 1, "a")})
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		more, err := op.Advance(math.MinInt64, 10, out)
		if got := drain(t, op, more, err, out); len(got) != 0 || op.snapshottable() == nil {
			t.Fatalf("a processing-time callback: %v, rows queued: %v", got, op.snapshottable() != nil)
		}
		more, err = op.Advance(100, 10, out)
		if got := drain(t, op, more, err, out); strings.Join(got, " ") != `+I[5, 1, "a", null, null, null]` || op.snapshottable() != nil {
			t.Fatalf("a watermark: %v", got)
		}
		op.Close()
	})
	t.Run("inner no unique key", func(t *testing.T) {
		op := check(t, params("INNER", LayoutNoUniqueKey, LayoutNoUniqueKey), []bundleStep{
			// +I +I -D of one row: one -D removes one +I; the right row stored first
			{[][]ev{{L(I, int64(1), 1, "a"), L(I, int64(1), 1, "a"), R(I, int64(1), 2, "x"), L(D, int64(1), 1, "a")}},
				[]string{`+I[1, 1, "a", 1, 2, "x"]`}},
			// -U +U of one row fold away; a retraction of another row is processed
			{[][]ev{{L(UB, int64(1), 1, "a"), L(UA, int64(1), 1, "a"), R(UB, int64(1), 2, "x")}}, []string{`-U[1, 1, "a", 1, 2, "x"]`}},
		})
		if op.State().Len() != 1 {
			t.Fatalf("%d keys", op.State().Len())
		}
		op.Close()
	})
}

// TestSemiAnti: changelogs read off StreamingSemiAntiJoinOperator. A left row is emitted with its
// own kind when it matches (SEMI) or does not (ANTI); a right row emits the left rows whose
// association count it takes from 0 or brings to 0; a NULL key matches nothing; a right
// retraction of a row never stored still lowers the counts.
func TestSemiAnti(t *testing.T) {
	for _, layouts := range [][2]string{{LayoutNoUniqueKey, LayoutNoUniqueKey}, {LayoutUniqueKey, LayoutUniqueKey}} {
		steps := func(anti bool) []step {
			pick := func(semi, antiRows []string) []string {
				if anti {
					return antiRows
				}
				return semi
			}
			return []step{
				{[]ev{L(I, int64(1), 1, "a")}, pick(nil, []string{`+I[1, 1, "a"]`})},
				{[]ev{R(I, int64(1), 10, "x")}, pick([]string{`+I[1, 1, "a"]`}, []string{`-D[1, 1, "a"]`})}, // 0 -> 1
				{[]ev{R(UA, int64(1), 11, "y")}, nil},                                                       // 1 -> 2
				{[]ev{L(UA, int64(1), 2, "b")}, pick([]string{`+U[1, 2, "b"]`}, nil)},
				{[]ev{L(D, int64(1), 2, "b")}, pick([]string{`-D[1, 2, "b"]`}, nil)},
				{[]ev{R(UB, int64(1), 10, "x")}, nil},                                                       // 2 -> 1
				{[]ev{R(D, int64(1), 11, "y")}, pick([]string{`-D[1, 1, "a"]`}, []string{`+I[1, 1, "a"]`})}, // 1 -> 0
				{[]ev{L(D, int64(1), 1, "a")}, pick(nil, []string{`-D[1, 1, "a"]`})},
				{[]ev{L(I, nil, 3, "c"), R(I, nil, 3, "c"), L(D, nil, 3, "c")}, pick(nil, []string{`+I[null, 3, "c"]`, `-D[null, 3, "c"]`})},
				{[]ev{R(D, int64(2), 5, "q"), L(I, int64(2), 6, "r")}, pick(nil, []string{`+I[2, 6, "r"]`})},
				{[]ev{R(D, int64(2), 5, "q")}, nil},                                                        // 0 -> -1: nothing
				{[]ev{R(I, int64(2), 5, "q")}, nil},                                                        // -1 -> 0: nothing
				{[]ev{R(I, int64(2), 7, "s")}, pick([]string{`+I[2, 6, "r"]`}, []string{`-D[2, 6, "r"]`})}, // 0 -> 1
			}
		}
		// no_unique_key: a right row stored twice is two matches
		twice := func(anti bool) []step {
			pick := func(semi, antiRows []string) []string {
				if anti {
					return antiRows
				}
				return semi
			}
			return []step{
				{[]ev{R(I, int64(4), 1, "d"), R(I, int64(4), 1, "d")}, nil},
				{[]ev{L(I, int64(4), 2, "e")}, pick([]string{`+I[4, 2, "e"]`}, nil)}, // stored with 2 associations
				{[]ev{R(D, int64(4), 1, "d")}, nil},                                  // 2 -> 1
				{[]ev{R(D, int64(4), 1, "d")}, pick([]string{`-D[4, 2, "e"]`}, []string{`+I[4, 2, "e"]`})},
			}
		}
		for _, jt := range []string{"SEMI", "ANTI"} {
			t.Run(jt+"/"+layouts[0], func(t *testing.T) {
				p := params(jt, layouts[0], layouts[1])
				all := steps(jt == "ANTI")
				if layouts[1] == LayoutNoUniqueKey {
					all = append(all, twice(jt == "ANTI")...)
				}
				op := run(t, p, all)
				if got := len(op.Output()); got != 3 {
					t.Fatalf("%d output fields, want the left input's 3", got)
				}
				op.Close()
			})
		}
	}
}
