package intervaljoin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// nullKeyState checks what the operator keeps of keys that can never match: their rows only on a
// padded side (none at all with emitNullKeys), their times everywhere they would be cached.
func nullKeyState(t *testing.T, op *IntervalJoin) {
	t.Helper()
	for id := range op.keys.k {
		ks := &op.keys.k[id]
		if ks.left == nil && ks.right == nil || op.joinable(op.state.Key(int32(id))) {
			continue
		}
		for side, m := range []*bucketMap{ks.left, ks.right} {
			if m == nil {
				continue
			}
			for _, b := range m.AppendOrder(nil) {
				if len(b.rows) > 0 && (!op.padded(side) || op.emitNullKeys) {
					t.Fatalf("key %x side %d: %d rows stored at time %d", op.state.Key(int32(id)), side, len(b.rows), b.time)
				}
			}
		}
	}
}

// TestNullKeysAgainstModel: streams with 30 % NULL keys on every join type, row and processing
// time, with snapshots, against the model of Flink's operator (which stores every row): call by
// call identical, while the operator never stores a row that cannot match on an unpadded side.
func TestNullKeysAgainstModel(t *testing.T) {
	bounds := [][2]int64{{-5, 10}, {0, 0}, {-3, -1}, {-40, 60}}
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL"} {
		for _, mode := range []string{"rowtime", "proctime"} {
			for bi, b := range bounds {
				p := Params{JoinType: jt, TimeMode: mode, LeftLowerBound: b[0], LeftUpperBound: b[1],
					LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{true}, MinCleanUpIntervalMs: int64(bi % 2 * 7)}
				t.Run(fmt.Sprintf("%s/%s/%d_%d", jt, mode, b[0], b[1]), func(t *testing.T) {
					for seed := range 6 {
						r := rand.New(rand.NewPCG(uint64(seed), uint64(bi)+100))
						spread := int64(20)
						if seed%3 == 2 {
							spread = 400
						}
						runScenarioWith(t, p, randomEventsNulls(r, 500, mode == "rowtime", spread, 30),
							scenarioOptions{state: nullKeyState})
					}
				})
			}
		}
	}
}

// TestNullKeysEmitImmediately: with NullKeyEmitImmediately the output is the model's as a
// multiset (row times > 0: see the quirk in docs/operators/interval-join.md#null-keys), a
// padded side's NULL-key rows are padded on arrival (so the order differs), and no NULL-key row
// is stored at all.
func TestNullKeysEmitImmediately(t *testing.T) {
	reordered := 0
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL"} {
		for _, mode := range []string{"rowtime", "proctime"} {
			p := Params{JoinType: jt, TimeMode: mode, LeftLowerBound: -5, LeftUpperBound: 10,
				LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{true}, NullKeyEmitImmediately: true}
			t.Run(jt+"/"+mode, func(t *testing.T) {
				for seed := range 6 {
					r := rand.New(rand.NewPCG(uint64(seed), 7))
					evs := randomEventsNulls(r, 500, mode == "rowtime", 20, 30)
					for i := range evs {
						if evs[i].time != math.MaxInt64 {
							evs[i].time += 1000
						}
					}
					got := runScenarioWith(t, p, evs, scenarioOptions{multiset: true, state: nullKeyState})
					p.NullKeyEmitImmediately = false
					flink := runScenarioWith(t, p, evs, scenarioOptions{})
					p.NullKeyEmitImmediately = true
					switch {
					case slices.Equal(got, flink):
					case jt == "INNER":
						t.Fatal("the option changed an inner join's output")
					default:
						reordered++
					}
				}
			})
		}
	}
	if reordered == 0 {
		t.Fatal("emitting on arrival never changed the order")
	}
}

// goldenRun runs events through a fresh operator and returns its output, each call's ended by
// "|" (consecutive rows of one side are one call).
func goldenRun(t *testing.T, p Params, events []event) []string {
	t.Helper()
	return runScenarioWith(t, p, events, scenarioOptions{multiset: p.NullKeyEmitImmediately, state: nullKeyState, calls: true})
}

func pad(left bool, k any, tm int64, v string) string {
	if left {
		return "+I[" + rowString(k, tm, v) + ", null, null, null]"
	}
	return "+I[null, null, null, " + rowString(k, tm, v) + "]"
}

// The golden scenarios of NULL keys: L.t BETWEEN R.t - 5 AND R.t + 9 (left cleanup at t + 6,
// right at t + 10), as Flink 2.3 runs them (the model checks every call as well).
func TestNullKeyGoldens(t *testing.T) {
	base := Params{TimeMode: "rowtime", LeftLowerBound: -5, LeftUpperBound: 9, LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{true}}
	with := func(jt string, emit bool) Params {
		p := base
		p.JoinType, p.NullKeyEmitImmediately = jt, emit
		return p
	}
	both := []event{{kind: 'L', time: 10, value: "l"}, {kind: 'R', time: 12, value: "r"}, {kind: 'W', time: 20}, {kind: 'W', time: 30}}
	cases := []struct {
		name   string
		p      Params
		events []event
		want   []string
	}{
		// LEFT, NULL on both sides: the left row is padded at its cleanup (WM 20), the right one is
		// never stored.
		{"left", with("LEFT", false), both, []string{"|", "|", pad(true, nil, 10, "l"), "|", "|"}},
		// emit immediately: the same pad, at arrival
		{"left/emit", with("LEFT", true), both, []string{pad(true, nil, 10, "l"), "|", "|", "|", "|"}},
		{"right", with("RIGHT", false), both, []string{"|", "|", "|", pad(false, nil, 12, "r"), "|"}},
		{"right/emit", with("RIGHT", true), both, []string{"|", pad(false, nil, 12, "r"), "|", "|", "|"}},
		{"inner", with("INNER", false), both, []string{"|", "|", "|", "|"}},
		// FULL: both padded on Flink's schedule, left at 16, right at 22
		{"full", with("FULL", false), both, []string{"|", "|", pad(true, nil, 10, "l"), "|", pad(false, nil, 12, "r"), "|"}},
		{"full/emit", with("FULL", true), both, []string{pad(true, nil, 10, "l"), "|", pad(false, nil, 12, "r"), "|", "|", "|"}},
		// a late NULL-key row (WM 20 >= 2 + 5) is padded at once, as Flink pads a late row
		{"left/late", with("LEFT", false), []event{{kind: 'W', time: 20}, {kind: 'L', time: 2, value: "a"}}, []string{"|", pad(true, nil, 2, "a"), "|"}},
		// the NULL key's right row moves the operator-wide right expiration bound when its cleanup
		// timer fires (WM 70: bound 60); key 1's late left row at 50 then skips the scan, as in
		// Flink, and is padded, though key 1's right row at 50 still lingers in the cache (its
		// cleanup timer is the row at 100's)
		{"left/bound", with("LEFT", false), []event{
			{kind: 'R', key: int64(1), time: 100, value: "r100"}, {kind: 'R', key: int64(1), time: 50, value: "r50"},
			{kind: 'R', time: 60, value: "rn"}, {kind: 'W', time: 70}, {kind: 'L', key: int64(1), time: 50, value: "l50"},
			{kind: 'W', time: math.MaxInt64},
		}, []string{"|", "|", pad(true, int64(1), 50, "l50"), "|", "|"}},
		// IS NOT DISTINCT FROM: NULL joins NULL
		{"null-safe", func() Params { p := with("INNER", false); p.FilterNulls = []bool{false}; return p }(), both,
			[]string{"|", "+I[" + rowString(nil, 10, "l") + ", " + rowString(nil, 12, "r") + "]", "|", "|", "|"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := goldenRun(t, c.p, c.events)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestNullKeySnapshots: a snapshot carries the times of rows not stored (a bucket of no rows); a
// snapshot holding rows of a NULL key on an unpadded side (as Ferry stored them before) restores
// their times only; and either setting of NullKeyEmitImmediately restores the other's
// snapshots, rows stored before the switch still padded when Flink pads them.
func TestNullKeySnapshots(t *testing.T) {
	p := Params{JoinType: "LEFT", TimeMode: "rowtime", LeftLowerBound: -5, LeftUpperBound: 9, LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{true}}
	op := openJoin(t, p, 8, 100)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	feed := func(input int, tm int64, v string) {
		types := leftTypes
		if input == 1 {
			types = rightTypes
		}
		b := enginetest.Batch(types, [][]any{{nil, enginetest.Timestamp{Millis: tm}, v}}, []engine.RowKind{0}, enginetest.Options{})
		more, err := op.Process(engine.Of(input, 2, b), 0, out)
		if got := drain(t, op, more, err, out); len(got) != 0 {
			t.Fatalf("row at %d: %v", tm, got)
		}
	}
	feed(0, 10, "l")
	feed(1, 12, "r")
	ks := &op.keys.k[0]
	if getBucket(ks.left, 10) == nil || len(getBucket(ks.left, 10).rows) != 1 || getBucket(ks.right, 12) == nil || len(getBucket(ks.right, 12).rows) != 0 {
		t.Fatal("want the left row stored, the right row's time only")
	}
	// a row where none is stored now, as in a snapshot of an earlier Ferry
	right := enginetest.Batch(rightTypes, [][]any{{nil, enginetest.Timestamp{Millis: 12}, "r"}}, []engine.RowKind{0}, enginetest.Options{})
	op.keys.addRow(getBucket(ks.right, 12), op.layouts[1].Encode(nil, right, 0), false, false)
	bytes := op.keys.bytes
	p.NullKeyEmitImmediately = true
	op = snapshotRestore(t, op, p, 8)
	ks = &op.keys.k[0]
	if len(getBucket(ks.right, 12).rows) != 0 || len(getBucket(ks.left, 10).rows) != 1 {
		t.Fatal("restore: want the right row dropped, its time and the left row kept")
	}
	if op.keys.bytes >= bytes {
		t.Fatalf("restore: %d bytes, before %d", op.keys.bytes, bytes)
	}
	more, err := op.Advance(20, 0, out)
	if got := drain(t, op, more, err, out); len(got) != 1 || got[0] != pad(true, nil, 10, "l") {
		t.Fatalf("WM 20 after restore: %v", got)
	}
	more, err = op.Advance(math.MaxInt64, 0, out)
	if got := drain(t, op, more, err, out); len(got) != 0 || op.State().Len() != 0 || op.keys.bytes != 0 {
		t.Fatalf("end: %v, %d keys, %d bytes", got, op.State().Len(), op.keys.bytes)
	}
}
