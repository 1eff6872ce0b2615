package session

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	_ "github.com/ferrystream/ferry/agg" // registers group_aggregate
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	_ "github.com/ferrystream/ferry/intervaljoin" // registers interval_join
	"github.com/ferrystream/ferry/snapshot"
)

// gate holds a Process inside the operator (kind test_gate).
var gate = enginetest.NewGate()

func init() {
	engine.RegisterKeyed(enginetest.FanoutKind, enginetest.OpenFanout)
	engine.RegisterKeyed("test_gate", gate.Open)
}

// recorder is a Host that keeps every exported batch as rows.
type recorder struct {
	alloc engine.Allocator
	rows  []string
	fail  error // returned by Export when set
}

func (r *recorder) host() Host {
	if r.alloc == nil {
		r.alloc = engine.HeapAllocator{}
	}
	return Host{Alloc: r.alloc,
		Export: func(dst any, b *engine.OutBatch) error {
			rec := dst.(*recorder) // the call's own destination
			if rec.fail != nil {
				return rec.fail
			}
			for _, row := range enginetest.Rows(b) {
				rec.rows = append(rec.rows, row.String())
			}
			return nil
		},
		Blob: func(dst any, chunk []byte) error {
			*dst.(*[]byte) = append([]byte(nil), chunk...)
			return nil
		}}
}

func parse(t testing.TB, json string) *engine.Spec {
	t.Helper()
	s, err := engine.ParseSpec([]byte(json))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testSession is a Session whose output goes to its recorder.
type testSession struct {
	*Session
	r *recorder
}

// process processes in as the one batch of its call, of input.
func (s testSession) process(input int, in *engine.CArray, now int64) (bool, error) {
	batches := make([]*engine.CArray, len(s.inputs))
	batches[input] = in
	return s.Process(batches, nil, now, s.r)
}
func (s testSession) advance(wm, now int64) (bool, error) { return s.Advance(wm, now, s.r) }
func (s testSession) flush(now int64) (bool, error)       { return s.Flush(now, s.r) }
func (s testSession) next() (bool, error)                 { return s.Next(s.r) }

// snapshot returns the next chunk of key group kg, or nil at the end of the sequence.
func (s testSession) snapshot(kg int) ([]byte, error) {
	var chunk []byte
	ok, err := s.Snapshot(kg, &chunk)
	if ok != (chunk != nil) {
		panic("Snapshot reported a chunk it did not hand out, or the reverse")
	}
	return chunk, err
}

// chunks returns every chunk of key group kg's sequence.
func (s testSession) chunks(t testing.TB, kg int) [][]byte {
	t.Helper()
	var all [][]byte
	for {
		c, err := s.snapshot(kg)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			return all
		}
		all = append(all, c)
	}
}

func open(t testing.TB, json string, r *recorder) testSession {
	t.Helper()
	s, err := Open(parse(t, json), nil, nil, r.host())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return testSession{s, r}
}

const bigintInput = `{"fields":[{"name":"k","type":"BIGINT"},{"name":"v","type":"BIGINT"}],"keys":[0]}`

func fanoutSpec(copies, chunk int) string {
	return fmt.Sprintf(`{"kind":"test_fanout","inputs":[%s,%s],"max_parallelism":128,"chunk_rows":%d,"params":{"copies":%d}}`,
		bigintInput, bigintInput, chunk, copies)
}

const aggSpec = `{"kind":"group_aggregate","name":"agg","inputs":[` + bigintInput + `],"max_parallelism":128,` +
	`"params":{"aggs":[{"func":"SUM","args":[1]}],"generate_update_before":true}}`

func batch(rows [][]any, kinds ...engine.RowKind) *engine.CArray {
	if kinds == nil {
		kinds = make([]engine.RowKind, len(rows))
	}
	types := []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.BigInt, Nullable: true}}
	return enginetest.CArray(enginetest.Batch(types, rows, kinds, enginetest.Options{Offset: 1}))
}

func wantErr(t *testing.T, err error, sentinel error, contains ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("got %v, want %v", err, sentinel)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("%q does not mention %q", err, c)
		}
	}
}

// TestChunkedOutput: a call with more output than a chunk sets more; only Next (and Close) are
// valid until more is false; every row arrives once, in order.
func TestChunkedOutput(t *testing.T) {
	var r recorder
	s := open(t, fanoutSpec(3, 4), &r)
	more, err := s.process(1, batch([][]any{{int64(1), int64(10)}, {int64(2), nil}, {int64(3), int64(30)}},
		engine.Insert, engine.Delete, engine.UpdateAfter), 0)
	if err != nil || !more {
		t.Fatalf("process: more %v, %v", more, err)
	}
	if len(r.rows) != 4 {
		t.Fatalf("first chunk holds %d rows, want chunk_rows 4", len(r.rows))
	}
	_, err = s.process(0, batch([][]any{{int64(9), int64(9)}}), 0)
	wantErr(t, err, engine.ErrState, "output is pending", "ferry_operator_next")
	for _, call := range []func() error{
		func() error { _, err := s.advance(0, 0); return err },
		func() error { _, err := s.flush(0); return err },
		func() error { _, err := s.snapshot(0); return err },
		func() error { return s.Restore(0, nil) },
		func() error { _, err := s.Stats(); return err },
		func() error { _, err := s.Output(); return err },
	} {
		wantErr(t, call(), engine.ErrState, "output is pending")
	}
	chunks := 1
	for more {
		if more, err = s.next(); err != nil {
			t.Fatal(err)
		}
		chunks++
	}
	want := []string{"+I[1, 10]", "+I[1, 10]", "+I[1, 10]", "-D[2, null]", "-D[2, null]", "-D[2, null]", "+U[3, 30]", "+U[3, 30]", "+U[3, 30]"}
	if chunks != 3 || strings.Join(r.rows, " ") != strings.Join(want, " ") {
		t.Fatalf("%d chunks: %v", chunks, r.rows)
	}
	_, err = s.next()
	wantErr(t, err, engine.ErrState, "no output is pending")
	// One chunk exactly: more is false at once.
	r.rows = nil
	if more, err := s.process(0, batch([][]any{{int64(1), int64(1)}}), 0); err != nil || more {
		t.Fatalf("3 rows in chunks of 4: more %v, %v", more, err)
	}
	// An empty batch produces nothing.
	if more, err := s.process(0, batch(nil), 0); err != nil || more || len(r.rows) != 3 {
		t.Fatalf("empty batch: more %v, %v, %d rows", more, err, len(r.rows))
	}
	// Close drops pending output.
	if more, err := s.process(0, batch([][]any{{int64(1), int64(1)}, {int64(2), int64(2)}}), 0); err != nil || !more {
		t.Fatalf("more %v %v", more, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close with output pending: %v", err)
	}
	_, err = s.process(0, batch(nil), 0)
	wantErr(t, err, engine.ErrInvalid, "closed")
}

func TestInputIndexAndSchemas(t *testing.T) {
	var r recorder
	s := open(t, fanoutSpec(1, 10), &r)
	for _, in := range []int32{-1, 2} {
		_, err := s.Process([]*engine.CArray{batch(aggRows(0, 1)), nil}, []int32{in, 1}, 0, s.r)
		wantErr(t, err, engine.ErrInvalid, fmt.Sprintf("run 0: input %d out of range (the operator has 2 inputs)", in))
	}
	_, err := s.Process([]*engine.CArray{nil, nil}, nil, 0, s.r)
	wantErr(t, err, engine.ErrInvalid, "no batch: a call carries at least one")
	_, err = Open(parse(t, fanoutSpec(1, 10)), nil, []*engine.CSchema{nil}, r.host())
	wantErr(t, err, engine.ErrInvalid, "1 input schemas for 2 inputs")
	if _, err := Open(parse(t, fanoutSpec(1, 10)), nil, []*engine.CSchema{nil, nil}, r.host()); err != nil {
		t.Fatalf("NULL schemas skip the check: %v", err)
	}
	_, err = Open(parse(t, `{"kind":"test_fanout","inputs":[`+bigintInput+`],"max_parallelism":1,"params":{"copies":0}}`), nil, nil, r.host())
	wantErr(t, err, engine.ErrInvalid, "spec: params.copies")
	_, err = Open(parse(t, `{"kind":"window_join","inputs":[`+bigintInput+`],"max_parallelism":1}`), nil, nil, r.host())
	wantErr(t, err, engine.ErrUnsupported, `"window_join" is not a native operator`)
}

func aggRows(from, n int) [][]any {
	var rows [][]any
	for i := from; i < from+n; i++ {
		rows = append(rows, []any{int64(i), int64(i)})
	}
	return rows
}

// TestSnapshotRestoreSequencing: chunks of a key group in order, the empty call after the last,
// restore ordering and its rule that nothing but restore runs while a key group is incomplete.
func TestSnapshotRestoreSequencing(t *testing.T) {
	var r recorder
	src := open(t, aggSpec, &r)
	if _, err := src.process(0, batch(aggRows(0, 20000)), 0); err != nil {
		t.Fatal(err)
	}
	blobs := map[int][][]byte{}
	for kg := range 128 {
		if c := src.chunks(t, kg); c != nil {
			blobs[kg] = c
		}
	}
	if len(blobs) != 128 {
		t.Fatalf("%d key groups with state", len(blobs))
	}
	kg := 7
	dst := open(t, aggSpec, &recorder{})
	// Out of order: a later chunk first. Make a two-chunk sequence by hand from kg's payload.
	hd := snapshot.Header{Kind: "group_aggregate", MaxParallelism: 128, KeyGroup: kg, Fingerprint: dst.state.Fingerprint()}
	_, payload, err := snapshot.Decode(blobs[kg][0], hd, nil)
	if err != nil {
		t.Fatal(err)
	}
	cut := splitAfterFirstKey(t, payload) // a payload boundary
	first := snapshot.Encode(nil, hd, payload[:cut])
	hd.Chunk, hd.Last = 1, true
	second := snapshot.Encode(nil, hd, payload[cut:])
	wantErr(t, dst.Restore(kg, second), engine.ErrData, "chunk 1 out of sequence (expected chunk 0)")
	if err := dst.Restore(kg, first); err != nil {
		t.Fatal(err)
	}
	_, err = dst.process(0, batch(aggRows(0, 1)), 0)
	wantErr(t, err, engine.ErrData, fmt.Sprintf("restore of key group %d stopped after chunk 0", kg))
	_, err = dst.snapshot(kg)
	wantErr(t, err, engine.ErrData, "unfinished sequence")
	wantErr(t, dst.Restore(kg, first), engine.ErrInvalid, fmt.Sprintf("key group %d already holds state", kg))
	if err := dst.Restore(kg, second); err != nil {
		t.Fatal(err)
	}
	wantErr(t, dst.Restore(kg, blobs[kg][0]), engine.ErrInvalid, fmt.Sprintf("key group %d already holds state", kg))
	wantErr(t, dst.Restore(128, blobs[kg][0]), engine.ErrInvalid, "key group 128 outside this operator's range [0, 127]")
	for k, chunks := range blobs {
		if k == kg {
			continue
		}
		for _, c := range chunks {
			if err := dst.Restore(k, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, _ := src.Stats()
	b, _ := dst.Stats()
	if a.Keys != 20000 || b.Keys != a.Keys {
		t.Fatalf("restored %d keys of %d", b.Keys, a.Keys)
	}
	// Both continue alike.
	var ra, rb recorder
	src.r, dst.r = &ra, &rb
	for _, s := range []testSession{src, dst} {
		if _, err := s.process(0, batch(aggRows(5, 3)), 0); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(ra.rows, " ") != strings.Join(rb.rows, " ") || len(ra.rows) != 6 {
		t.Fatalf("after restore: %v vs %v", ra.rows, rb.rows)
	}
	// Snapshot: the range is checked; another key group abandons a sequence.
	_, err = src.snapshot(-1)
	wantErr(t, err, engine.ErrInvalid, "key group -1 outside")
	c1, _ := src.snapshot(kg)
	c2, _ := src.snapshot((kg + 1) % 128)
	c3, _ := src.snapshot(kg)
	if c1 == nil || c2 == nil || c3 == nil {
		t.Fatal("switching key groups must restart the sequence")
	}
}

// TestSnapshotSeesEveryChange: Snapshot writes the whole state on its first call and hands it
// out key group by key group; a call that may change the state drops it, so a snapshot after a
// change, even one between the key groups of a checkpoint, holds the change.
func TestSnapshotSeesEveryChange(t *testing.T) {
	src := open(t, aggSpec, &recorder{})
	keys := func(s testSession, kg int) int {
		t.Helper()
		hd := snapshot.Header{Kind: "group_aggregate", MaxParallelism: 128, KeyGroup: kg, Fingerprint: s.state.Fingerprint()}
		fresh := open(t, aggSpec, &recorder{})
		for _, c := range s.chunks(t, kg) {
			if _, _, err := snapshot.Decode(c, hd, nil); err != nil {
				t.Fatal(err)
			}
			if err := fresh.Restore(kg, c); err != nil {
				t.Fatal(err)
			}
		}
		st, _ := fresh.Stats()
		return int(st.Keys)
	}
	if _, err := src.process(0, batch(aggRows(0, 1000)), 0); err != nil {
		t.Fatal(err)
	}
	before := make([]int, 128)
	for kg := range 64 {
		before[kg] = keys(src, kg)
	}
	if _, err := src.process(0, batch(aggRows(1000, 1000)), 0); err != nil {
		t.Fatal(err)
	}
	total := 0
	for kg := range 128 {
		n := keys(src, kg)
		if kg < 64 && n <= before[kg] {
			t.Fatalf("key group %d: %d keys after the second batch, %d before", kg, n, before[kg])
		}
		total += n
	}
	if total != 2000 {
		t.Fatalf("the snapshot holds %d keys, want 2000", total)
	}
}

// splitAfterFirstKey returns the payload offset after the first key of a group-aggregate payload
// (uvarint key length, key, the SUM state): the shortest prefix that restores.
func splitAfterFirstKey(t *testing.T, payload []byte) int {
	t.Helper()
	off := 1 + int(payload[0])
	for end := off + 1; end < len(payload); end++ {
		st := open(t, aggSpec, &recorder{}).state
		if st.RestoreKeyGroup(engine.KeyGroup(engine.HashRow(payload[1:off]), 128), payload[:end]) == nil {
			return end
		}
	}
	t.Fatal("payload holds one key")
	return 0
}

func TestStatelessSnapshotRestore(t *testing.T) {
	s := open(t, fanoutSpec(1, 10), &recorder{})
	if c, err := s.snapshot(5); c != nil || err != nil {
		t.Fatalf("snapshot of a stateless operator: %v %v", c, err)
	}
	wantErr(t, s.Restore(5, []byte("x")), engine.ErrData, "keeps no state")
	wantErr(t, s.Restore(500, []byte("x")), engine.ErrInvalid, "outside")
	if st, err := s.Stats(); err != nil || st != (engine.Stats{NextTimerMs: math.MaxInt64}) {
		t.Fatalf("stats %+v %v", st, err)
	}
}

// failingAlloc returns nil: the memory limit is reached.
type failingAlloc struct{}

func (failingAlloc) Alloc(int) []byte { return nil }

func TestBrokenAfterMemoryFailure(t *testing.T) {
	r := recorder{alloc: failingAlloc{}}
	s := open(t, aggSpec, &r)
	_, err := s.process(0, batch(aggRows(0, 3)), 0)
	wantErr(t, err, engine.ErrMemory, "agg: ", "cannot allocate")
	_, err = s.flush(0)
	wantErr(t, err, engine.ErrState, "failed earlier", "close it and restore from a checkpoint")
	if err := s.Close(); err != nil {
		t.Fatalf("close after a failure: %v", err)
	}
	// An export that fails on memory breaks the session too, and so does one that loses the
	// rest of a chunked output.
	r2 := recorder{fail: fmt.Errorf("%w: no room for the batch structs", engine.ErrMemory)}
	s2 := open(t, fanoutSpec(2, 1), &r2)
	_, err = s2.process(0, batch(aggRows(0, 1)), 0)
	wantErr(t, err, engine.ErrMemory)
	_, err = s2.next()
	wantErr(t, err, engine.ErrState, "failed earlier")
	// Other errors leave the operator usable.
	s3 := open(t, aggSpec, &recorder{})
	_, err = s3.process(0, batch(aggRows(0, 1), engine.Delete), 0)
	wantErr(t, err, engine.ErrData, "retraction")
	if _, err := s3.process(0, batch(aggRows(0, 1)), 0); err != nil {
		t.Fatalf("after a data error: %v", err)
	}
}

// TestOneCallAtATime: a call while another runs fails with ErrState, Close too; afterwards the
// session works. Run with -race.
func TestOneCallAtATime(t *testing.T) {
	s := open(t, `{"kind":"test_gate","inputs":[`+bigintInput+`],"max_parallelism":128}`, &recorder{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := s.process(0, batch(aggRows(0, 2)), 0); err != nil {
			t.Error(err)
		}
	}()
	<-gate.Entered
	_, err := s.process(0, batch(nil), 0)
	wantErr(t, err, engine.ErrState, "in use by another thread")
	wantErr(t, s.Close(), engine.ErrState, "in use by another thread")
	_, err = s.Stats()
	wantErr(t, err, engine.ErrState, "in use by another thread")
	gate.Release <- struct{}{}
	wg.Wait()
	go func() { <-gate.Entered; gate.Release <- struct{}{} }()
	if _, err := s.process(0, batch(aggRows(0, 1)), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.Close(), engine.ErrInvalid, "closed")
}

// TestSessionsInParallel runs independent sessions concurrently (-race: no shared state).
func TestSessionsInParallel(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &recorder{}
			o, err := Open(parse(t, aggSpec), nil, nil, r.host())
			if err != nil {
				t.Error(err)
				return
			}
			defer o.Close()
			s := testSession{o, r}
			for i := range 50 {
				if _, err := s.process(0, batch(aggRows(g*1000+i, 20)), 0); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.snapshot(i % 128); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// joinSpec is an interval join of two bigintInput inputs, k and v (the row time, BIGINT).
const joinSpec = `{"kind":"interval_join","name":"join","inputs":[` + bigintInput + `,` + bigintInput + `],"max_parallelism":128,` +
	`"params":{"join_type":"INNER","time_mode":"rowtime","left_lower_bound":-5,"left_upper_bound":5,"allowed_lateness":0,` +
	`"min_clean_up_interval_ms":0,"left_time_index":1,"right_time_index":1,"filter_nulls":[true]}}`

// TestProcessRuns: both inputs' rows in one call, in the order of the runs; the run list and
// the batch count checked; one call at a time.
func TestProcessRuns(t *testing.T) {
	var r recorder
	s := open(t, joinSpec, &r)
	left, right := batch([][]any{{int64(1), int64(10)}, {int64(1), int64(30)}}), batch([][]any{{int64(1), int64(12)}})
	// The right row arrives after the first left row only: it joins it.
	if _, err := s.Process([]*engine.CArray{left, right}, []int32{0, 1, 1, 1, 0, 1}, 0, s.r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.rows, "; "); got != "+I[1, 10, 1, 12]" {
		t.Errorf("output %q, want the one joined row", got)
	}
	_, err := s.Process([]*engine.CArray{left, right}, []int32{0, 2}, 0, s.r)
	wantErr(t, err, engine.ErrInvalid, "the runs use 0 of input 1's 1 rows")
	_, err = s.Process([]*engine.CArray{left, right, nil}, nil, 0, s.r)
	wantErr(t, err, engine.ErrInvalid, "3 batches for 2 inputs")
	_, err = s.Process([]*engine.CArray{left}, []int32{0, 2, 1, 1}, 0, s.r)
	wantErr(t, err, engine.ErrInvalid, "run 1: 1 rows of input 1, but only 0 of its 0 rows are left")
	_, err = s.Process([]*engine.CArray{nil, right}, []int32{1, 1}, 0, s.r)
	if err != nil {
		t.Fatalf("a NULL batch for an input without rows: %v", err)
	}
	// without runs: input 0's rows, then input 1's
	r.rows = nil
	if _, err := s.Process([]*engine.CArray{batch([][]any{{int64(2), int64(100)}}), batch([][]any{{int64(2), int64(101)}})}, nil, 0, s.r); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.rows, "; "); got != "+I[2, 100, 2, 101]" {
		t.Errorf("output %q, want the right row joining the left one that came first", got)
	}

	g := open(t, `{"kind":"test_gate","inputs":[`+bigintInput+`],"max_parallelism":128}`, &recorder{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := g.process(0, batch(aggRows(0, 2)), 0); err != nil {
			t.Error(err)
		}
	}()
	<-gate.Entered
	_, err = g.Process([]*engine.CArray{left}, []int32{0, 2}, 0, g.r)
	wantErr(t, err, engine.ErrState, "in use by another thread")
	gate.Release <- struct{}{}
	wg.Wait()
}

// echo is a test function: each call emits its batch's rows, and it remembers the secrets it
// was opened with.
type echo struct {
	fanout  *enginetest.Fanout
	secrets *echoSecrets
}

type echoSecrets struct {
	Token string `json:"token"`
}

func (e *echo) Output() []engine.Field { return e.fanout.Output() }
func (e *echo) Call(in *engine.Batch, out *engine.OutBatch) (bool, error) {
	if e.secrets == nil {
		return false, fmt.Errorf("%w: opened without secrets", engine.ErrState)
	}
	return e.fanout.Process(engine.Of(0, 1, in), 0, out)
}
func (e *echo) Continue(out *engine.OutBatch) (bool, error) { return e.fanout.Continue(out) }
func (e *echo) Close()                                      {}

func init() {
	engine.RegisterFunction("test_echo", func(spec *engine.Spec, _ *struct{}, s *echoSecrets) (engine.Function, error) {
		k, err := enginetest.OpenFanout(spec, &enginetest.FanoutParams{Copies: 1})
		if err != nil {
			return nil, err
		}
		return &echo{fanout: k.Operator.(*enginetest.Fanout), secrets: s}, nil
	})
}

// TestFunction: a function kind's session: its secrets reach it, a call emits, time and flushes
// emit nothing, it has no state to snapshot, restore, import or export.
func TestFunction(t *testing.T) {
	var r recorder
	spec := `{"kind":"test_echo","inputs":[` + bigintInput + `],"max_parallelism":1}`
	s, err := Open(parse(t, spec), []byte(`{"token":"t0k"}`), nil, r.host())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := testSession{s, &r}
	if _, err := ts.process(0, batch(aggRows(0, 2)), 0); err != nil || len(r.rows) != 2 {
		t.Fatalf("call: %v, %v", r.rows, err)
	}
	for name, call := range map[string]func() (bool, error){
		"advance": func() (bool, error) { return ts.advance(10, 10) },
		"flush":   func() (bool, error) { return ts.flush(10) },
	} {
		if more, err := call(); more || err != nil || len(r.rows) != 2 {
			t.Errorf("%s: more %v, %v, rows %v", name, more, err, r.rows)
		}
	}
	if chunk, err := ts.snapshot(0); chunk != nil || err != nil {
		t.Errorf("snapshot: %v, %v", chunk, err)
	}
	wantErr(t, s.Restore(0, []byte{1}), engine.ErrData, "keeps no state")
	_, err = s.Export(&r)
	wantErr(t, err, engine.ErrUnsupported, "does not write the state of Flink's operator")
	if st, err := s.Stats(); err != nil || st.Keys != 0 || st.NextTimerMs != math.MaxInt64 {
		t.Errorf("stats: %+v, %v", st, err)
	}
	_, err = Open(parse(t, `{"kind":"test_echo","inputs":[`+bigintInput+`,`+bigintInput+`],"max_parallelism":1}`), nil, nil, r.host())
	wantErr(t, err, engine.ErrInvalid, "a function has one input, the spec declares 2")
	checked, err := Open(parse(t, spec), nil, nil, r.host())
	if err != nil {
		t.Fatal(err)
	}
	defer checked.Close()
	_, err = testSession{checked, &r}.process(0, batch(aggRows(0, 1)), 0)
	wantErr(t, err, engine.ErrState, "opened without secrets")
}
