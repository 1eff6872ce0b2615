package windowjoin

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
)

// specJSON is the spec of the tests' join: left and right (k0 .. k<keys-1> BIGINT, we
// TIMESTAMP(3) NOT NULL, h BIGINT NOT NULL) keyed by the k columns (we is the window end, h the
// handle), and input RowsInput (side INT, handle BIGINT, row BYTES, all NOT NULL).
func specJSON(p Params, keys, maxPar, chunk int) []byte {
	var fields []string
	var keyIdx []int
	for i := range keys {
		fields = append(fields, fmt.Sprintf(`{"name":"k%d","type":"BIGINT"}`, i))
		keyIdx = append(keyIdx, i)
	}
	fields = append(fields, `{"name":"we","type":"TIMESTAMP(3)","nullable":false}`, `{"name":"h","type":"BIGINT","nullable":false}`)
	ks, _ := json.Marshal(keyIdx)
	in := fmt.Sprintf(`{"fields":[%s],"keys":%s}`, strings.Join(fields, ","), ks)
	p.LeftWindowEndIndex, p.RightWindowEndIndex = keys, keys
	params, _ := json.Marshal(p)
	return []byte(fmt.Sprintf(`{"kind":"window_join","name":"test","inputs":[%s,%s,%s],"max_parallelism":%d,"chunk_rows":%d,"params":%s}`,
		in, in, rowsInputJSON, maxPar, chunk, params))
}

// rowsInputJSON is input RowsInput of the tests' specs.
const rowsInputJSON = `{"fields":[{"name":"side","type":"INT","nullable":false},{"name":"handle","type":"BIGINT","nullable":false},` +
	`{"name":"row","type":"BYTES","nullable":false}]}`

func openJoin(t testing.TB, p Params, keys, maxPar, chunk int) *WindowJoin {
	t.Helper()
	spec, err := engine.ParseSpec(specJSON(p, keys, maxPar, chunk))
	if err != nil {
		t.Fatal(err)
	}
	op, err := enginetest.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	return op.(*WindowJoin)
}

// inputTypes are the column types of input 0 or 1 of a spec with keys key columns.
func inputTypes(keys int) []engine.Type {
	ts := make([]engine.Type, keys, keys+2)
	for i := range ts {
		ts[i] = engine.Type{ID: engine.BigInt, Nullable: true}
	}
	return append(ts, engine.Type{ID: engine.Timestamp, Precision: 3}, engine.Type{ID: engine.BigInt})
}

// inputBatch builds a batch of input 0 or 1: per row its key values, window end and handle.
func inputBatch(keys int, rows [][]any) *engine.Batch {
	return enginetest.Batch(inputTypes(keys), rows, make([]engine.RowKind, len(rows)), enginetest.Options{Offset: 1})
}

// rowsBatch builds a batch of input RowsInput from (side, handle, bytes) rows.
func rowsBatch(rows [][]any) *engine.Batch {
	return enginetest.Batch(rowsTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{Offset: 2})
}

// joinable reports whether a key can match: no NULL at a filter_nulls=true position.
func joinable(p Params, key []any) bool {
	for i, v := range key {
		if v == nil && p.FilterNulls[i] {
			return false
		}
	}
	return true
}

// keeps reports whether the host keeps a row of side with key: the NoRow rule.
func keeps(p Params, side int, key []any) bool {
	preserved := map[string][2]bool{"LEFT": {true, false}, "RIGHT": {false, true}, "FULL": {true, true}, "ANTI": {true, false}}
	return joinable(p, key) || preserved[p.JoinType][side]
}

// host drives a WindowJoin as the JVM does: it gives every row it keeps a handle (NoRow for the
// others) and holds it until its window fires (a late row it sends all the same, for Go to drop
// and count, but does not hold), sends the bytes of every row it holds on RowsInput before a
// snapshot, and takes restored rows back under their new handles, -1, -2, ... Each call's output renders as "L<name>", "R<name>" (a window's rows), "E" (its end)
// and "+L<name>", "+R<name>" (restored rows, sorted per side: their order follows the order the
// key groups are restored in). The checks of the output contract are made here.
type host struct {
	t          testing.TB
	p          Params
	keys       int
	maxPar     int
	op         *WindowJoin
	out        *engine.OutBatch
	wm         int64
	rowSize    int                 // the bytes of a row are padded to this size
	next       int64               // the next handle
	held       map[[2]int64]string // (side, handle) -> name of the rows the host holds
	sent       map[string]sentRow  // bytes sent on RowsInput -> row
	rowBytesOf map[string]string   // name -> bytes
}

func newHost(t testing.TB, p Params, keys, maxPar, chunk int) *host {
	return &host{t: t, p: p, keys: keys, maxPar: maxPar, op: openJoin(t, p, keys, maxPar, chunk),
		out: &engine.OutBatch{Alloc: engine.HeapAllocator{}}, wm: math.MinInt64, next: 1,
		held: map[[2]int64]string{}, sent: map[string]sentRow{}, rowBytesOf: map[string]string{}}
}

// sentRow is a row whose bytes the host sent: its side and name.
type sentRow struct {
	side int
	name string
}

// row is one input row of a test: its key values, window end and name.
type row struct {
	key  []any
	end  int64
	name string
}

// process sends rows of side in one call and returns its output.
func (h *host) process(side int, rows []row) []string {
	h.t.Helper()
	var vals [][]any
	for _, r := range rows {
		handle := int64(NoRow)
		if keeps(h.p, side, r.key) {
			handle = h.next
			h.next++
			if late := h.wm >= r.end-1; !late {
				h.held[[2]int64{int64(side), handle}] = r.name
				h.rowBytesOf[r.name] = fmt.Sprintf("%-*s", h.rowSize, fmt.Sprintf("%s %v %d", r.name, r.key, r.end))
			}
		}
		vals = append(vals, append(slices.Clone(r.key), enginetest.Timestamp{Millis: r.end}, handle))
	}
	more, err := h.op.Process(engine.Of(side, 3, inputBatch(h.keys, vals)), 0, h.out)
	return h.drain(more, err)
}

// advance moves the watermark and returns the call's output.
func (h *host) advance(wm int64) []string {
	h.t.Helper()
	h.wm = wm
	more, err := h.op.Advance(wm, 0, h.out)
	return h.drain(more, err)
}

// sendRows sends the bytes of every row the host holds, left and right rows in separate calls.
func (h *host) sendRows() {
	h.t.Helper()
	var rows [2][][]any
	for k, name := range h.held {
		b := h.rowBytesOf[name]
		rows[k[0]] = append(rows[k[0]], []any{int64(k[0]), k[1], []byte(b)})
		h.sent[b] = sentRow{int(k[0]), name}
	}
	for _, rs := range rows {
		if more, err := h.op.Process(engine.Of(RowsInput, 3, rowsBatch(rs)), 0, h.out); err != nil || more || h.out.Len != 0 {
			h.t.Fatalf("rows input: more %v, %d rows, %v", more, h.out.Len, err)
		}
	}
}

// snapshotRestore sends the rows, snapshots every key group (in small chunks) and restores
// them into a new operator; the host then holds no row until the restored ones come back.
func (h *host) snapshotRestore() {
	h.t.Helper()
	h.sendRows()
	if err := h.op.snapshottable(); err != nil {
		h.t.Fatal(err)
	}
	fresh := openJoin(h.t, h.p, h.keys, h.maxPar, 3)
	enginetest.Restore(h.t, fresh.State(), enginetest.Snapshot(h.t, h.op.State(), 16))
	if fresh.State().Len() != h.op.State().Len() {
		h.t.Fatalf("restored %d keys, had %d", fresh.State().Len(), h.op.State().Len())
	}
	h.op.Close()
	h.op, h.wm, h.held = fresh, math.MinInt64, map[[2]int64]string{}
}

// drain renders every chunk of a call's output.
func (h *host) drain(more bool, err error) []string {
	h.t.Helper()
	var got []string
	var handles []int64 // restored, negated
	restored := [2]int{}
	for {
		if err != nil {
			h.t.Fatal(err)
		}
		for _, r := range enginetest.Rows(h.out) {
			kind, handle, b := r.Values[0].(int64), r.Values[1].(int64), r.Values[2]
			if r.Kind != engine.Insert {
				h.t.Fatalf("row kind %v", r.Kind)
			}
			switch kind {
			case EmitLeft, EmitRight:
				k := [2]int64{kind, handle}
				name, ok := h.held[k]
				if !ok || b != nil {
					h.t.Fatalf("kind %d: handle %d, which the host does not hold (bytes %v)", kind, handle, b)
				}
				delete(h.held, k)
				got = append(got, "LR"[kind:kind+1]+name)
			case EmitEnd:
				if handle != 0 || b != nil {
					h.t.Fatalf("end of window: handle %d, bytes %v", handle, b)
				}
				got = append(got, "E")
			case RestoredLeft, RestoredRight:
				side := int(kind - RestoredLeft)
				s, _ := b.(string)
				from, ok := h.sent[s]
				if !ok || from.side != side || handle >= 0 || len(got) != restored[0]+restored[1] || (side == 0 && restored[1] > 0) {
					h.t.Fatalf("restored row %q (kind %d, handle %d) after %v: not a row sent, not of its side or out of place", s, kind, handle, got)
				}
				k := [2]int64{int64(side), handle}
				if _, dup := h.held[k]; dup {
					h.t.Fatalf("restored handle %d twice", handle)
				}
				h.held[k] = from.name
				got = append(got, "+"+"LR"[side:side+1]+from.name)
				restored[side]++
				handles = append(handles, -handle)
			default:
				h.t.Fatalf("output kind %d", kind)
			}
		}
		if !more {
			break
		}
		more, err = h.op.Continue(h.out)
	}
	slices.Sort(handles)
	for i, n := range handles {
		if n != int64(i+1) {
			h.t.Fatalf("restored handles %v, want -1 .. -%d", handles, len(handles))
		}
	}
	slices.Sort(got[:restored[0]])
	slices.Sort(got[restored[0] : restored[0]+restored[1]])
	return got
}

// event is one step of a scenario.
type event struct {
	kind byte // 'L', 'R' rows; 'W' watermark; 'S' snapshot and restore
	key  any  // int64 or nil
	end  int64
	name string
}

// calls cuts events into the calls the host makes: runs of rows of one side, watermarks and
// snapshots.
func calls(events []event) [][]event {
	var cs [][]event
	for i, e := range events {
		if i > 0 && e.kind == events[i-1].kind && (e.kind == 'L' || e.kind == 'R') {
			cs[len(cs)-1] = append(cs[len(cs)-1], e)
			continue
		}
		cs = append(cs, []event{e})
	}
	return cs
}

// run feeds events to the operator and returns its output per call, each call's rows followed
// by "|" (none for a snapshot), then the late rows counted per side. After the final watermark
// no state, timer or held row is left.
func run(t testing.TB, p Params, events []event) []string {
	t.Helper()
	h := newHost(t, p, 1, 8, 3)
	var all []string
	for _, c := range calls(events) {
		switch c[0].kind {
		case 'L', 'R':
			rows := make([]row, len(c))
			for i, e := range c {
				rows[i] = row{[]any{e.key}, e.end, e.name}
			}
			all = append(append(all, h.process(strings.IndexByte("LR", c[0].kind), rows)...), "|")
		case 'W':
			all = append(append(all, h.advance(c[0].end)...), "|")
		case 'S':
			h.snapshotRestore()
		}
	}
	if last := events[len(events)-1]; last.kind == 'W' && last.end == math.MaxInt64 {
		if h.op.State().Len() != 0 || h.op.timers.Len() != 0 || h.op.keys.liveWins != 0 || h.op.keys.liveLinks != 0 || len(h.held) != 0 {
			t.Fatalf("after the final watermark: %d keys, %d timers, %d windows, %d handles, %d rows held", h.op.State().Len(), h.op.timers.Len(), h.op.keys.liveWins, h.op.keys.liveLinks, len(h.held))
		}
	}
	return append(all, fmt.Sprintf("late %d %d", h.op.LateDropped[0], h.op.LateDropped[1]))
}

// TestWindowJoinOperatorScript runs the script of Flink's WindowJoinOperatorTest (one key, rows
// (window_end, key), watermarks 1, 10, 13, 18), with rows of a NULL key (window end 7) added, for
// every join type and both filter_nulls settings: nothing before a window's timer; at the
// watermark that passes a window's end - 1, its left rows, its right rows and its end, windows
// in timer order; late rows dropped (and counted: the counts start over with the restored
// operator). The NULL key's rows are kept on a preserved side only, unless the key is compared
// with IS NOT DISTINCT FROM. A snapshot after watermark 10 brings the open windows' rows back
// first.
func TestWindowJoinOperatorScript(t *testing.T) {
	script := []event{
		{'W', nil, 1, ""},
		{'L', int64(1), 1, "a"}, // late: its window fired at watermark 1 (timer at 0)
		{'L', int64(1), 3, "b"}, {'L', int64(1), 3, "c"}, {'L', nil, 7, "n"}, {'R', int64(1), 3, "d"}, {'R', nil, 7, "m"},
		{'L', int64(1), 6, "e"}, {'R', int64(1), 9, "f"},
		{'W', nil, 10, ""},
		{'L', int64(1), 12, "g"}, {'L', int64(1), 15, "h"}, {'R', int64(1), 15, "i"},
		{'S', nil, 0, ""},
		{'R', int64(1), 15, "j"},
		{'W', nil, 13, ""},
		{'R', int64(1), 12, "k"}, // late
		{'W', nil, 18, ""},
	}
	// Per join type with filter_nulls=true: the NULL key's window at watermark 10.
	nullWindow := map[string]string{"INNER": "E", "LEFT": "Ln E", "RIGHT": "Rm E", "FULL": "Ln Rm E", "SEMI": "E", "ANTI": "Ln E"}
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"} {
		for _, filter := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/filterNulls=%v", jt, filter), func(t *testing.T) {
				got := run(t, Params{JoinType: jt, FilterNulls: []bool{filter}}, script)
				nw := nullWindow[jt]
				if !filter {
					nw = "Ln Rm E"
				}
				want := "| | | | | Lb Lc Rd E Le E " + nw + " Rf E | | | +Lg +Lh +Ri | Lg E | | Lh Ri Rj E | late 0 1"
				if g := strings.Join(got, " "); g != want {
					t.Fatalf("got\n%s\nwant\n%s", g, want)
				}
			})
		}
	}
}

// TestNoRowRule checks the handle rule of inputs 0 and 1 on a two-column key with filter_nulls
// [true, false], for every join type and side: a row whose key has a NULL at the first position
// carries NoRow exactly when its side is not preserved; every other row carries a handle. The
// other choice fails with ErrData and changes nothing.
func TestNoRowRule(t *testing.T) {
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"} {
		p := Params{JoinType: jt, FilterNulls: []bool{true, false}}
		op := openJoin(t, p, 2, 8, 3)
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		for side := range 2 {
			for _, key := range [][]any{{int64(1), int64(2)}, {int64(1), nil}, {nil, int64(2)}, {nil, nil}} {
				kept := keeps(p, side, key)
				call := func(handle int64) error {
					_, err := op.Process(engine.Of(side, 3, inputBatch(2, [][]any{append(slices.Clone(key), enginetest.Timestamp{Millis: 10}, handle)})), 0, out)
					return err
				}
				right, wrong := int64(7), int64(NoRow)
				if !kept {
					right, wrong = wrong, right
				}
				keysBefore := op.State().Len()
				if err := call(wrong); !errors.Is(err, engine.ErrData) || op.State().Len() != keysBefore {
					t.Fatalf("%s side %d key %v handle %d: %v, want ErrData", jt, side, key, wrong, err)
				}
				if err := call(right); err != nil {
					t.Fatalf("%s side %d key %v handle %d: %v", jt, side, key, right, err)
				}
			}
		}
		op.Close()
	}
}

// TestRowsForSnapshot checks the rows the host sends before a snapshot: BeforeSnapshot fails
// with ErrState while a stored handle has no bytes (none sent, some sent, or sent before a later
// call, which drops them); after a restore, rows not yet handed back need none; a side other
// than 0 and 1 and an input other than 0, 1 and RowsInput are refused.
func TestRowsForSnapshot(t *testing.T) {
	p := Params{JoinType: "INNER", FilterNulls: []bool{true}}
	op := openJoin(t, p, 1, 8, 100)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	must := func(more bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for more {
			more, err = op.Continue(out)
		}
	}
	wantErr := func(err, want error, what string) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	}
	if err := op.snapshottable(); err != nil {
		t.Fatalf("empty state: %v", err)
	}
	must(op.Process(engine.Of(0, 3, inputBatch(1, [][]any{{int64(1), enginetest.Timestamp{Millis: 10}, int64(5)}, {nil, enginetest.Timestamp{Millis: 30}, int64(NoRow)}})), 0, out))
	must(op.Process(engine.Of(1, 3, inputBatch(1, [][]any{{int64(1), enginetest.Timestamp{Millis: 20}, int64(6)}})), 0, out))
	wantErr(op.snapshottable(), engine.ErrState, "no rows sent")
	must(op.Process(engine.Of(RowsInput, 3, rowsBatch([][]any{{int64(0), int64(5), []byte("five")}})), 0, out))
	wantErr(op.snapshottable(), engine.ErrState, "the right row missing")
	must(op.Process(engine.Of(RowsInput, 3, rowsBatch([][]any{{int64(0), int64(6), []byte("six")}})), 0, out))
	wantErr(op.snapshottable(), engine.ErrState, "the right row sent as a left row")
	must(op.Process(engine.Of(RowsInput, 3, rowsBatch([][]any{{int64(1), int64(6), []byte("six")}, {int64(1), int64(99), []byte("unknown")}})), 0, out))
	if err := op.snapshottable(); err != nil {
		t.Fatalf("every row sent: %v", err)
	}
	snap := enginetest.Snapshot(t, op.State(), 1<<20)
	must(op.Advance(0, 0, out))
	wantErr(op.snapshottable(), engine.ErrState, "rows sent before a later call")

	fresh := openJoin(t, p, 1, 8, 100)
	enginetest.Restore(t, fresh.State(), snap)
	if err := fresh.snapshottable(); err != nil {
		t.Fatalf("restored rows not handed back: %v", err)
	}
	snap2 := enginetest.Snapshot(t, fresh.State(), 1<<20)
	if len(snap2) != len(snap) {
		t.Fatalf("snapshot of the restored state: %d key groups, want %d", len(snap2), len(snap))
	}
	more, err := fresh.Advance(15, 0, out)
	var got []string
	for _, r := range enginetest.Rows(out) {
		got = append(got, fmt.Sprint(r.Values))
	}
	if want := []string{"[3 -1 five]", "[4 -2 six]", "[0 -1 <nil>]", "[2 0 <nil>]"}; err != nil || more || !slices.Equal(got, want) {
		t.Fatalf("after the restore: %v (more %v, %v), want %v", got, more, err, want)
	}
	wantErr(fresh.snapshottable(), engine.ErrState, "restored rows handed back")

	for _, side := range []int64{-1, 2} {
		_, err := op.Process(engine.Of(RowsInput, 3, rowsBatch([][]any{{int64(0), int64(5), []byte("x")}, {side, int64(6), []byte("y")}})), 0, out)
		wantErr(err, engine.ErrData, fmt.Sprintf("side %d", side))
	}
	mixed := engine.Of(0, 3, inputBatch(1, [][]any{{int64(1), enginetest.Timestamp{Millis: 10}, int64(7)}}))
	mixed.Batches[RowsInput] = rowsBatch([][]any{{int64(0), int64(7), []byte("x")}})
	mixed.Runs = append(mixed.Runs, engine.Run{Input: RowsInput, Rows: 1})
	_, err = op.Process(mixed, 0, out)
	wantErr(err, engine.ErrInvalid, "the rows for a snapshot (input 2) come in a call of their own")
	op.Close()
	fresh.Close()
}

// TestSpecErrors checks the spec's shape: three inputs, the handle last and BIGINT NOT NULL and
// no key, the rows input's columns.
func TestSpecErrors(t *testing.T) {
	good := string(specJSON(Params{JoinType: "LEFT", FilterNulls: []bool{true}}, 1, 8, 3))
	handle := `{"name":"h","type":"BIGINT","nullable":false}`
	for _, c := range []struct{ name, from, to, want string }{
		{"two inputs", "," + rowsInputJSON, "", "three inputs"},
		{"nullable handle", handle, `{"name":"h","type":"BIGINT"}`, "row handle"},
		{"INT handle", handle, `{"name":"h","type":"INT","nullable":false}`, "row handle"},
		{"handle as key", `"keys":[0]`, `"keys":[2]`, "not a key"},
		{"rows column types", `{"name":"row","type":"BYTES","nullable":false}`, `{"name":"row","type":"VARCHAR","nullable":false}`, "inputs[2]"},
		{"window end on the handle", `"left_window_end_index":1`, `"left_window_end_index":2`, "out of range"},
	} {
		js := strings.Replace(good, c.from, c.to, 1)
		if js == good {
			t.Fatalf("%s: the spec is unchanged", c.name)
		}
		spec, err := engine.ParseSpec([]byte(js))
		if err == nil {
			_, err = enginetest.Open(spec)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestFailedRestoreHandsNothingBack: a key group whose payload fails to load part way drops the
// rows it had read with its keys, so no restored row without a window reaches the host.
func TestFailedRestoreHandsNothingBack(t *testing.T) {
	p := Params{JoinType: "INNER", FilterNulls: []bool{true}}
	h := newHost(t, p, 1, 1, 100)
	h.process(0, []row{{key: []any{int64(1)}, end: 10, name: "a"}, {key: []any{int64(1)}, end: 20, name: "b"}})
	h.sendRows()
	snap := enginetest.Snapshot(t, h.op.State(), 1<<20)
	chunk := snap[0][0]
	fresh := openJoin(t, p, 1, 1, 100)
	if err := fresh.State().RestoreKeyGroup(0, chunk[:len(chunk)-1]); !errors.Is(err, engine.ErrData) {
		t.Fatalf("truncated payload: %v, want ErrData", err)
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if more, err := fresh.Advance(100, 0, out); err != nil || more || out.Len != 0 {
		t.Fatalf("after the failed restore: %d rows (more %v, %v), want none", out.Len, more, err)
	}
}
