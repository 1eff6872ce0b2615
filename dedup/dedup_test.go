package dedup

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/javahash"
	"github.com/ferrystream/ferry/internal/sessiontest"
)

// The input of every test: key k, two payload columns and the row time.
var types = []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Varchar, Nullable: true},
	{ID: engine.Double, Nullable: true}, {ID: engine.Timestamp, Precision: 3, Nullable: true}}

const rowtimeCol = 3

func specJSON(t testing.TB, p Params) []byte {
	t.Helper()
	params, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(`{"kind":"deduplicate","name":"dedup","inputs":[{"fields":[{"name":"k","type":"BIGINT"},{"name":"s","type":"VARCHAR"},` +
		`{"name":"v","type":"DOUBLE"},{"name":"rt","type":"TIMESTAMP(3)"}],"keys":[0]}],"max_parallelism":128,"chunk_rows":3,"params":` +
		string(params) + `}`)
}

// mrow is a row object of the model: Flink's RowData with its mutable RowKind.
type mrow struct {
	kind engine.RowKind
	vals []any
}

func (r *mrow) content() string { return enginetest.Row{Values: r.vals}.String()[2:] }

func (r *mrow) rowtime() int64 {
	if ts, ok := r.vals[rowtimeCol].(enginetest.Timestamp); ok {
		return ts.Millis
	}
	return 0
}

// value is one ValueState entry of the model: the object a heap backend keeps, or the copy a
// serializing backend made at update.
type value struct {
	row       *mrow
	lastWrite int64
}

// model is Flink's deduplicate functions transcribed row by row from their Java sources
// (DeduplicateFunctionHelper, the functions of StreamExecDeduplicate's translation), over row
// objects whose RowKind the functions mutate as Flink's do.
type model struct {
	p        Params
	state    map[string]*value // deduplicate-state (a Boolean as a non-nil row), or the waiting row
	emitted  map[string]int64  // already-emitted-state-boolean: its last write
	timers   map[string]int64
	wm       int64
	now      int64
	tableLen int
	out      []string
}

func newModel(p Params) *model {
	return &model{p: p, state: map[string]*value{}, emitted: map[string]int64{}, timers: map[string]int64{}, wm: -1 << 63}
}

func (m *model) expired(lastWrite int64) bool {
	return m.p.StateTTLMs > 0 && lastWrite+m.p.StateTTLMs <= m.now
}

func (m *model) get(key string) *mrow {
	v := m.state[key]
	if v == nil || m.expired(v.lastWrite) {
		delete(m.state, key)
		return nil
	}
	return v.row
}

func (m *model) update(key string, r *mrow) {
	if !m.p.StoredRowKeepsKind {
		r = &mrow{kind: r.kind, vals: r.vals}
	}
	m.state[key] = &value{row: r, lastWrite: m.now}
}

func (m *model) collect(r *mrow) {
	m.out = append(m.out, enginetest.Row{Kind: r.kind, Values: r.vals}.String())
}

func (m *model) shouldKeep(pre, cur *mrow) bool {
	if pre == nil {
		return true
	}
	if m.p.KeepLastRow {
		return pre.rowtime() <= cur.rowtime()
	}
	return cur.rowtime() < pre.rowtime()
}

func (m *model) updateResult(pre, cur *mrow) {
	if m.p.GenerateUpdateBefore || m.p.GenerateInsert {
		if pre == nil {
			cur.kind = engine.Insert
			m.collect(cur)
			return
		}
		if m.p.GenerateUpdateBefore {
			k := pre.kind
			pre.kind = engine.UpdateBefore
			m.collect(pre)
			pre.kind = k
		}
		cur.kind = engine.UpdateAfter
		m.collect(cur)
		return
	}
	cur.kind = engine.UpdateAfter
	m.collect(cur)
}

func (m *model) lastOnProcTime(key string, cur *mrow) {
	if !m.p.GenerateUpdateBefore && !m.p.GenerateInsert {
		cur.kind = engine.UpdateAfter
		m.collect(cur)
		return
	}
	pre := m.get(key)
	m.update(key, cur)
	if pre == nil {
		cur.kind = engine.Insert
		m.collect(cur)
		return
	}
	if m.p.StateTTLMs == 0 && pre.kind == cur.kind && pre.content() == cur.content() {
		return
	}
	if m.p.GenerateUpdateBefore {
		pre.kind = engine.UpdateBefore
		m.collect(pre)
	}
	cur.kind = engine.UpdateAfter
	m.collect(cur)
}

func (m *model) firstOnProcTime(key string, cur *mrow) {
	if m.get(key) != nil {
		return
	}
	m.update(key, &mrow{})
	m.collect(cur)
}

func (m *model) element(key string, cur *mrow) {
	switch {
	case m.p.OutputInsertOnly:
		if cur.rowtime() < m.wm {
			return
		}
		if at, ok := m.emitted[key]; ok && !m.expired(at) {
			return
		}
		delete(m.emitted, key)
		var pre *mrow
		if v := m.state[key]; v != nil {
			pre = v.row
		}
		if m.shouldKeep(pre, cur) {
			m.timers[key] = cur.rowtime()
			m.state[key] = &value{row: cur}
		}
	case m.p.Rowtime:
		pre := m.get(key)
		if m.shouldKeep(pre, cur) {
			m.updateResult(pre, cur)
			m.update(key, cur)
		}
	case m.p.KeepLastRow:
		m.lastOnProcTime(key, cur)
	default:
		m.firstOnProcTime(key, cur)
	}
}

// bundle is KeyedMapBundleOperator: addInput per row, finishBundle per key in HashMap order.
func (m *model) bundle(keys []string, hashes map[string]int32, rows []*mrow) {
	var order []string
	folded := map[string][]*mrow{}
	for i, k := range keys {
		acc, seen := folded[k]
		if !seen {
			order = append(order, k)
		}
		cur := rows[i]
		switch {
		case !m.p.Rowtime && !m.p.KeepLastRow:
			if !seen {
				acc = []*mrow{cur}
			}
		case !m.p.Rowtime || m.p.CompactChanges:
			if !m.p.Rowtime || len(acc) == 0 || m.shouldKeep(acc[0], cur) {
				acc = []*mrow{cur}
			}
		default:
			acc = append(acc, cur)
		}
		folded[k] = acc
	}
	hs := make([]int32, len(order))
	for i, k := range order {
		hs[i] = hashes[k]
	}
	idx, _ := javahash.Order(hs, &m.tableLen, nil, nil)
	for _, i := range idx {
		k := order[i]
		acc := folded[k]
		switch {
		case !m.p.Rowtime && !m.p.KeepLastRow:
			m.firstOnProcTime(k, acc[0])
		case !m.p.Rowtime:
			m.lastOnProcTime(k, acc[0])
		case m.p.CompactChanges:
			pre := m.get(k)
			if m.shouldKeep(pre, acc[0]) {
				m.updateResult(pre, acc[0])
				m.update(k, acc[0])
			}
		default:
			pre := m.get(k)
			for _, cur := range acc {
				if m.shouldKeep(pre, cur) {
					m.updateResult(pre, cur)
					pre = cur
				}
			}
			m.update(k, pre)
		}
	}
}

// advance fires the insert-only form's timers; their rows go out sorted (the order of timers of
// one watermark is checked against Flink's own operator on the JVM).
func (m *model) advance(wm int64) []string {
	m.wm = wm // as Flink's advanceWatermark takes it, even if not above the last
	var fired []string
	for k, t := range m.timers {
		if t <= wm {
			r := m.state[k].row
			fired = append(fired, enginetest.Row{Kind: r.kind, Values: r.vals}.String())
			delete(m.state, k)
			delete(m.timers, k)
			m.emitted[k] = m.now
		}
	}
	slices.Sort(fired)
	return fired
}

// variants are every form StreamExecDeduplicate's translation builds, with both state backends'
// stored kinds, and TTL.
func variants() []Params {
	var ps []Params
	for _, rowtime := range []bool{false, true} {
		for _, last := range []bool{false, true} {
			for _, mb := range []bool{false, true} {
				for flags := range 4 {
					ub, gi := flags&1 != 0, flags&2 != 0
					for _, ttl := range []int64{0, 40} {
						base := Params{Rowtime: rowtime, KeepLastRow: last, MiniBatch: mb, GenerateUpdateBefore: ub, GenerateInsert: gi, StateTTLMs: ttl}
						if rowtime {
							base.RowtimeIndex = rowtimeCol
						}
						for _, heap := range []bool{false, true} {
							p := base
							p.StoredRowKeepsKind = heap
							ps = append(ps, p)
							if rowtime && mb {
								p.CompactChanges = true
								ps = append(ps, p)
							}
							if rowtime && !last && !mb && flags == 0 {
								p.OutputInsertOnly = true
								ps = append(ps, p)
							}
						}
					}
				}
			}
		}
	}
	return ps
}

// TestAgainstModel: random streams with ties, duplicates, NULL keys and NULL row times, through
// every variant, with watermarks, processing time for TTL, and a snapshot restored into a new
// operator midway; the operator's changelog equals the model's.
func TestAgainstModel(t *testing.T) {
	for vi, p := range variants() {
		t.Run(fmt.Sprintf("%d", vi), func(t *testing.T) {
			for seed := range 4 {
				runModel(t, p, uint64(seed*1000+vi))
			}
		})
	}
}

func runModel(t *testing.T, p Params, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	var h sessiontest.Host
	s := h.Open(t, specJSON(t, p))
	m := newModel(p)
	enc := engine.NewKeyEncoder([]int{0}, types)
	wm := int64(-1 << 63)
	for step := range 60 {
		m.now += int64(rng.IntN(15))
		switch r := rng.IntN(10); {
		case r < 7:
			n := 1 + rng.IntN(12)
			rows := make([][]any, n)
			for i := range rows {
				var k any = int64(rng.IntN(5))
				if rng.IntN(8) == 0 {
					k = nil
				}
				var rt any = enginetest.Timestamp{Millis: int64(rng.IntN(30)) + int64(step)}
				if rng.IntN(20) == 0 {
					rt = nil
				}
				vals := []any{"a", "b"}
				var v any = float64(rng.IntN(2))
				if rng.IntN(6) == 0 {
					v = -0.0
				}
				rows[i] = []any{k, vals[rng.IntN(2)], v, rt}
			}
			b := enginetest.Batch(types, rows, make([]engine.RowKind, n), enginetest.Options{Offset: 1})
			if err := enc.Encode(b); err != nil {
				t.Fatal(err)
			}
			keys := make([]string, n)
			hashes := map[string]int32{}
			objs := make([]*mrow, n)
			for i := range rows {
				keys[i] = string(enc.Key(i))
				hashes[keys[i]] = enc.Hash(i)
				objs[i] = &mrow{vals: rows[i]}
			}
			if p.MiniBatch {
				m.bundle(keys, hashes, objs)
			} else {
				for i := range objs {
					m.element(keys[i], objs[i])
				}
			}
			more, err := s.Process([]*engine.CArray{enginetest.CArray(b)}, nil, m.now, nil)
			sessiontest.Drain(t, s, more, err)
			if !slices.Equal(h.Rows, m.out) {
				t.Fatalf("seed %d step %d: %+v\ninput %v\ngot  %v\nwant %v", seed, step, p, rows, h.Rows, m.out)
			}
		case r < 9:
			wm += int64(1 + rng.IntN(10))
			if wm < 0 {
				wm = int64(rng.IntN(10))
			}
			want := m.advance(wm)
			from := len(h.Rows)
			more, err := s.Advance(wm, m.now, nil)
			sessiontest.Drain(t, s, more, err)
			got := slices.Clone(h.Rows[from:])
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d: %+v: advance to %d: got %v, want %v", seed, step, p, wm, got, want)
			}
			m.out = append(m.out, h.Rows[from:]...)
		default:
			s, _ = h.Move(t, s, specJSON(t, p), 128)
			m.tableLen = 0       // Flink's restored operator starts a new HashMap,
			m.wm = math.MinInt64 // and its timer service the watermark
		}
	}
}

// TestHeapStoredKind: processing-time keep-last under the heap backend suppresses a row equal to
// the stored one only while that went out as +I: a row stored after a +U carries that kind, which
// Flink's equaliser compares. RocksDB's stored copy keeps +I and suppresses every repeat.
func TestHeapStoredKind(t *testing.T) {
	rows := [][]any{{int64(1), "a", 1.0, nil}, {int64(1), "a", 1.0, nil}, {int64(1), "b", 1.0, nil}, {int64(1), "b", 1.0, nil}, {int64(1), "b", 1.0, nil}}
	for _, c := range []struct {
		heap bool
		want []string
	}{
		{false, []string{`+I[1, "a", 1, null]`, `-U[1, "a", 1, null]`, `+U[1, "b", 1, null]`}},
		{true, []string{`+I[1, "a", 1, null]`, `-U[1, "a", 1, null]`, `+U[1, "b", 1, null]`, `-U[1, "b", 1, null]`, `+U[1, "b", 1, null]`,
			`-U[1, "b", 1, null]`, `+U[1, "b", 1, null]`}},
	} {
		var h sessiontest.Host
		s := h.Open(t, specJSON(t, Params{KeepLastRow: true, GenerateUpdateBefore: true, GenerateInsert: true, StoredRowKeepsKind: c.heap}))
		sessiontest.Process(t, s, types, 0, rows, nil)
		if !slices.Equal(h.Rows, c.want) {
			t.Fatalf("heap %v: %v, want %v", c.heap, h.Rows, c.want)
		}
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{StateTTLMs: -1}, "params.state_ttl_ms: negative (-1)"},
		{Params{Rowtime: true, RowtimeIndex: 1}, "params.rowtime_index: column 1 is VARCHAR"},
		{Params{Rowtime: true, RowtimeIndex: 9}, "params.rowtime_index: column 9 out of range"},
		{Params{RowtimeIndex: 3}, "params.rowtime_index: set without rowtime"},
		{Params{Rowtime: true, RowtimeIndex: 3, KeepLastRow: true, OutputInsertOnly: true}, "params.output_insert_only"},
		{Params{Rowtime: true, RowtimeIndex: 3, CompactChanges: true}, "params.compact_changes"},
	} {
		parsed, err := engine.ParseSpec(specJSON(t, c.p))
		if err == nil {
			_, err = engine.OpenKeyed(parsed)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	var h sessiontest.Host
	s := h.Open(t, specJSON(t, Params{KeepLastRow: true, GenerateInsert: true}))
	b := enginetest.Batch(types, [][]any{{int64(1), "a", 1.0, nil}}, []engine.RowKind{engine.UpdateBefore}, enginetest.Options{})
	if _, err := s.Process([]*engine.CArray{enginetest.CArray(b)}, nil, 0, nil); err == nil || !strings.Contains(err.Error(), "insert-only") {
		t.Fatalf("retraction: %v", err)
	}
}

// TestFlinkStateRoundTrip: the state one operator exports, imported into a new one (for the
// keep-first processing-time forms and the insert-only row-time keep-first: its keys as fields),
// continues exactly as the original, in the insert-only form also the order its timers of equal
// time fire in (waiting rows of some keys, others emitted, with TTL expiring some of those);
// import refuses a key twice and a RowKind Flink never stores. The interchange with Flink's own
// operator is tested on the JVM.
func TestFlinkStateRoundTrip(t *testing.T) {
	for vi, p := range variants() {
		rng := rand.New(rand.NewPCG(uint64(vi), 11))
		batch := func() *engine.Batch {
			rows := make([][]any, 20)
			for i := range rows {
				var k any = int64(rng.IntN(6))
				if i%7 == 0 {
					k = nil
				}
				rows[i] = []any{k, []string{"a", "b"}[rng.IntN(2)], float64(rng.IntN(2)), enginetest.Timestamp{Millis: int64(rng.IntN(9))}}
			}
			return enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
		}
		spec, err := engine.ParseSpec(specJSON(t, p))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := engine.OpenKeyed(spec)
		b, _ := engine.OpenKeyed(spec)
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		for r := range 3 {
			if _, err := a.Operator.Process(engine.Of(0, 1, batch()), 5, out); err != nil {
				t.Fatal(err)
			}
			if p.OutputInsertOnly && r == 1 { // some keys' rows go out, the others' wait
				if _, err := a.Operator.Advance(1, 5, out); err != nil {
					t.Fatal(err)
				}
			}
		}
		// a's export, as import rows: the fields after the key bytes; for the keys-only forms the
		// key fields of each key a holds, from its key bytes' BIGINT (k) or NULL.
		importTypes, _ := a.FlinkState.ImportTypes()
		var imports [][]any
		for first := true; ; first = false {
			more, err := a.FlinkState.ExportState(out, first)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range enginetest.Rows(out) {
				if a.Operator.(*Dedup).importEnc == nil {
					imports = append(imports, r.Values[1:])
					continue
				}
				// a BinaryRowData of one BIGINT field: the header byte and null bits (field 0's is
				// bit 8), then the value, little-endian
				key := []byte(r.Values[0].(string))
				var k any = int64(key[8])
				if key[1]&1 != 0 {
					k = nil
				}
				imports = append(imports, append([]any{k}, r.Values[1:]...))
			}
			if !more {
				break
			}
		}
		if len(imports) == 0 {
			if p.KeepLastRow && !p.Rowtime && !p.GenerateUpdateBefore && !p.GenerateInsert {
				continue // Flink keeps no state in this form
			}
			t.Fatalf("%+v: nothing exported", p)
		}
		if p.OutputInsertOnly { // the key fields, the row's fields, its RowKind, the emitted flag, ...
			var waiting, emitted int
			for _, r := range imports {
				if r[1+len(types)] != nil {
					waiting++
				}
				if r[2+len(types)] != nil {
					emitted++
				}
			}
			if waiting == 0 || emitted == 0 {
				t.Fatalf("%+v: %d keys waiting, %d emitted: want some of both", p, waiting, emitted)
			}
		}
		kinds := make([]engine.RowKind, len(imports))
		if err := b.FlinkState.ImportState(enginetest.Batch(importTypes, imports, kinds, enginetest.Options{})); err != nil {
			t.Fatalf("%+v: import: %v", p, err)
		}
		if err := b.FlinkState.ImportState(enginetest.Batch(importTypes, imports[:1], kinds[:1], enginetest.Options{})); err == nil || !strings.Contains(err.Error(), "holds state already") {
			t.Fatalf("%+v: a key imported twice: %v", p, err)
		}
		after := 0 // rows out after the import
		for r := range 3 {
			in := batch()
			var got [2][]string
			for j, op := range []engine.Keyed{a, b} {
				drain := func(more bool, err error) {
					for ; ; more, err = op.Operator.Continue(out) {
						if err != nil {
							t.Fatal(err)
						}
						for _, r := range enginetest.Rows(out) {
							got[j] = append(got[j], r.String())
						}
						if !more {
							return
						}
					}
				}
				if p.OutputInsertOnly { // first the watermark a saw (b's starts over, as after a restore), then higher
					drain(op.Operator.Advance(int64(1+r*3), 20+int64(r)*20, out))
				}
				drain(op.Operator.Process(engine.Of(0, 1, in), 20+int64(r)*20, out))
			}
			after += len(got[0])
			if !slices.Equal(got[0], got[1]) {
				t.Fatalf("%+v: after the import %v, the original %v", p, got[1], got[0])
			}
		}
		if p.OutputInsertOnly && after == 0 {
			t.Fatalf("%+v: no row went out after the import", p)
		}
	}
	// a stored row of kind -U
	p := Params{KeepLastRow: true, GenerateInsert: true}
	spec, _ := engine.ParseSpec(specJSON(t, p))
	op, _ := engine.OpenKeyed(spec)
	ts, _ := op.FlinkState.ImportTypes()
	err := op.FlinkState.ImportState(enginetest.Batch(ts, [][]any{{int64(1), "a", 1.0, nil, int64(engine.UpdateBefore)}}, []engine.RowKind{0}, enginetest.Options{}))
	if err == nil || !strings.Contains(err.Error(), "never stores") {
		t.Fatalf("a -U row: %v", err)
	}
	// the insert-only row-time keep-first: key k, the waiting row, its kind, emitted, timer, position
	p = Params{Rowtime: true, RowtimeIndex: rowtimeCol, OutputInsertOnly: true}
	spec, _ = engine.ParseSpec(specJSON(t, p))
	ts5 := enginetest.Timestamp{Millis: 5}
	ins, yes := int64(engine.Insert), true
	for _, c := range []struct {
		row  []any
		want string
	}{
		{[]any{int64(1), int64(1), "a", 1.0, ts5, ins, nil, int64(5), int64(1)}, ""},
		{[]any{int64(1), nil, nil, nil, nil, nil, yes, nil, nil}, ""},
		{[]any{int64(1), int64(1), "a", 1.0, ts5, ins, yes, int64(5), int64(1)}, "not both or neither"},
		{[]any{int64(1), nil, nil, nil, nil, nil, nil, nil, nil}, "not both or neither"},
		{[]any{int64(1), nil, nil, nil, nil, nil, false, nil, nil}, "holds false"},
		{[]any{int64(1), int64(1), "a", 1.0, ts5, int64(engine.UpdateAfter), nil, int64(5), int64(1)}, "never stores"},
		{[]any{int64(1), int64(2), "a", 1.0, ts5, ins, nil, int64(5), int64(1)}, "another key"},
		{[]any{int64(1), int64(1), "a", 1.0, ts5, ins, nil, int64(6), int64(1)}, "not at the waiting row's time 5"},
		{[]any{int64(1), int64(1), "a", 1.0, ts5, ins, nil, nil, nil}, "a timer exactly when"},
		{[]any{int64(1), nil, nil, nil, nil, nil, yes, int64(5), int64(1)}, "a timer exactly when"},
		{[]any{int64(1), int64(1), "a", 1.0, ts5, ins, nil, int64(5), nil}, "without its position"},
	} {
		op, _ := engine.OpenKeyed(spec)
		ts, _ := op.FlinkState.ImportTypes()
		err := op.FlinkState.ImportState(enginetest.Batch(ts, [][]any{c.row}, []engine.RowKind{0}, enginetest.Options{}))
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("import %v: %v, want %q", c.row, err, c.want)
		}
		if err != nil && op.Operator.State().Len() != 0 {
			t.Errorf("import %v: a key kept after the error", c.row)
		}
	}
}
