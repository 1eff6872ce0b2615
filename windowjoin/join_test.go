package windowjoin

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// The inputs of the tests: left (k BIGINT, we TIMESTAMP(3) NOT NULL, v VARCHAR), right
// (k BIGINT, we TIMESTAMP(3) NOT NULL, w VARCHAR), keyed by k; we is the window end.
var (
	leftTypes  = []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Timestamp, Precision: 3}, {ID: engine.Varchar, Nullable: true}}
	rightTypes = leftTypes
)

func specJSON(p Params, maxPar, chunk int) []byte {
	in := func(third string) string {
		return fmt.Sprintf(`{"fields":[{"name":"k","type":"BIGINT"},{"name":"we","type":"TIMESTAMP(3)","nullable":false},{"name":%q,"type":"VARCHAR"}],"keys":[0]}`, third)
	}
	params, _ := json.Marshal(p)
	return []byte(fmt.Sprintf(`{"kind":"window_join","name":"test","inputs":[%s,%s],"max_parallelism":%d,"chunk_rows":%d,"params":%s}`,
		in("v"), in("w"), maxPar, chunk, params))
}

func openJoin(t testing.TB, p Params, maxPar, chunk int) *WindowJoin {
	t.Helper()
	spec, err := engine.ParseSpec(specJSON(p, maxPar, chunk))
	if err != nil {
		t.Fatal(err)
	}
	op, err := engine.Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	return op.(*WindowJoin)
}

// drain collects every chunk of a call's output as strings.
func drain(t testing.TB, op *WindowJoin, more bool, err error, out *engine.OutBatch) []string {
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

// event is one step of a scenario.
type event struct {
	kind  byte // 'L', 'R' rows; 'W' watermark; 'S' snapshot and restore
	key   any  // int64 or nil
	end   int64
	value any // string or nil
}

// snapshotRestore snapshots every key group of op (in small pieces) and restores them into a
// new operator.
func snapshotRestore(t *testing.T, op *WindowJoin, p Params, maxPar int) *WindowJoin {
	t.Helper()
	fresh := openJoin(t, p, maxPar, 3)
	enginetest.Restore(t, fresh.State(), enginetest.Snapshot(t, op.State(), 16))
	if fresh.State().Len() != op.State().Len() {
		t.Fatalf("restored %d keys, had %d", fresh.State().Len(), op.State().Len())
	}
	op.Close()
	return fresh
}

// run feeds events to the operator (same-side runs as batches) and returns its output per call,
// each call's rows followed by "|".
func run(t *testing.T, p Params, events []event) []string {
	t.Helper()
	const maxPar = 8
	op := openJoin(t, p, maxPar, 3)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	var all []string
	var batch [][]any
	side := -1
	flush := func() {
		if len(batch) == 0 {
			return
		}
		b := enginetest.Batch(leftTypes, batch, make([]engine.RowKind, len(batch)), enginetest.Options{Offset: 1})
		more, err := op.Process(side, b, 0, out)
		all = append(append(all, drain(t, op, more, err, out)...), "|")
		batch = batch[:0]
	}
	for _, e := range events {
		switch e.kind {
		case 'L', 'R':
			s := 0
			if e.kind == 'R' {
				s = 1
			}
			if s != side {
				flush()
				side = s
			}
			batch = append(batch, []any{e.key, enginetest.Timestamp{Millis: e.end}, e.value})
		case 'W':
			flush()
			more, err := op.Advance(e.end, 0, out)
			all = append(append(all, drain(t, op, more, err, out)...), "|")
		case 'S':
			flush()
			op = snapshotRestore(t, op, p, maxPar)
		}
	}
	flush()
	if last := events[len(events)-1]; last.kind == 'W' && last.end == math.MaxInt64 {
		if op.State().Len() != 0 || op.timers.Len() != 0 || op.keys.bytes != 0 {
			t.Fatalf("after the final watermark: %d keys, %d timers, %d bytes", op.State().Len(), op.timers.Len(), op.keys.bytes)
		}
	}
	all = append(all, fmt.Sprintf("late %d %d", op.LateDropped[0], op.LateDropped[1]))
	return all
}

func rowString(k any, end int64, v any) string {
	return strings.Join([]string{enginetest.Format(k), enginetest.Format(enginetest.Timestamp{Millis: end}), enginetest.Format(v)}, ", ")
}

const nullRow = "null, null, null"

// TestWindowJoinOperatorScript runs the script of Flink's WindowJoinOperatorTest (one key, rows
// (window_end, key), watermarks 1, 10, 13, 18) for every join type, with the output Flink's
// operator gives it: nothing before a window's timer, a block per window at the watermark that
// passes its end - 1, late rows dropped and counted.
func TestWindowJoinOperatorScript(t *testing.T) {
	script := []event{
		{'W', nil, 1, nil},
		{'L', int64(1), 1, "a"}, // late: its window fired at watermark 1 (timer at 0)
		{'L', int64(1), 3, "b"}, {'L', int64(1), 3, "c"}, {'R', int64(1), 3, "d"},
		{'L', int64(1), 6, "e"}, {'R', int64(1), 9, "f"},
		{'W', nil, 10, nil},
		{'L', int64(1), 12, "g"}, {'L', int64(1), 15, "h"}, {'R', int64(1), 15, "i"}, {'R', int64(1), 15, "j"},
		{'W', nil, 13, nil},
		{'W', nil, 18, nil},
	}
	l := func(end int64, v string) string { return rowString(int64(1), end, v) }
	j := func(a, b string) string { return a + ", " + b }
	lb, lc, rd, le, rf := l(3, "b"), l(3, "c"), l(3, "d"), l(6, "e"), l(9, "f")
	lg, lh, ri, rj := l(12, "g"), l(15, "h"), l(15, "i"), l(15, "j")
	// Per join type: the blocks at watermarks 10, 13 and 18.
	cases := map[string][3][]string{
		"INNER": {{j(lb, rd), j(lc, rd)}, nil, {j(lh, ri), j(lh, rj)}},
		"LEFT":  {{j(lb, rd), j(lc, rd), j(le, nullRow)}, {j(lg, nullRow)}, {j(lh, ri), j(lh, rj)}},
		"RIGHT": {{j(lb, rd), j(lc, rd), j(nullRow, rf)}, nil, {j(lh, ri), j(lh, rj)}},
		"FULL":  {{j(lb, rd), j(lc, rd), j(le, nullRow), j(nullRow, rf)}, {j(lg, nullRow)}, {j(lh, ri), j(lh, rj)}},
		"SEMI":  {{lb, lc}, nil, {lh}},
		"ANTI":  {{le}, {lg}, nil},
	}
	for jt, blocks := range cases {
		t.Run(jt, func(t *testing.T) {
			got := run(t, Params{JoinType: jt, LeftWindowEndIndex: 1, RightWindowEndIndex: 1, FilterNulls: []bool{true}}, script)
			for i := range blocks {
				for r := range blocks[i] {
					blocks[i][r] = "+I[" + blocks[i][r] + "]"
				}
			}
			want := []string{"|", "|", "|", "|", "|"} // watermark 1, then four batches
			want = append(append(want, blocks[0]...), "|", "|", "|")
			want = append(append(want, blocks[1]...), "|")
			want = append(append(want, blocks[2]...), "|", "late 1 0")
			if !slices.Equal(got, want) {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
