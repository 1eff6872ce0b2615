package intervaljoin

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// exportFlink exports op's state in Flink's form, chunk by chunk, as rows of values.
func exportFlink(t *testing.T, op *IntervalJoin) [][]any {
	t.Helper()
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	var rows [][]any
	for first := true; ; first = false {
		more, err := op.ExportState(out, first)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range enginetest.Rows(out) {
			rows = append(rows, r.Values)
		}
		if !more {
			return rows
		}
	}
}

// keyValues maps the test keys' encoded bytes back to their values.
var keyValues = func() map[string]any {
	m := map[string]any{string(encodeKey(nil)): nil}
	for k := range int64(8) {
		m[string(encodeKey(k))] = k
	}
	return m
}()

// importRows turns export rows into import rows: the key bytes of each part-0 row become the key
// field, which the key's other rows repeat.
func importRows(t *testing.T, exported [][]any) [][]any {
	t.Helper()
	var rows [][]any
	var key any
	for _, r := range exported {
		if r[1+colPart].(int64) == partKey {
			k, ok := keyValues[r[0].(string)]
			if !ok {
				t.Fatalf("unknown key bytes %x", r[0])
			}
			key = k
		}
		rows = append(rows, append([]any{key}, r[1:]...))
	}
	return rows
}

func importTypes(t *testing.T, op *IntervalJoin) []engine.Type {
	types, err := op.ImportTypes()
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// importFlink hands rows to op in batches of about batch rows, never splitting a key.
func importFlink(op *IntervalJoin, types []engine.Type, rows [][]any, batch int) error {
	for len(rows) > 0 {
		n := min(batch, len(rows))
		for n < len(rows) && rows[n][1+colPart].(int64) != partKey {
			n++
		}
		if err := op.ImportState(enginetest.Batch(types, rows[:n], make([]engine.RowKind, n), enginetest.Options{Offset: 2})); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

func rowsString(rows [][]any) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(enginetest.Row{Values: r}.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// asOwnRestore rewrites import rows so that the import rebuilds what Ferry's own restore
// rebuilds: caches created for their size (no capacity) and timers ordered by key group, then
// heap position.
func asOwnRestore(rows [][]any, maxPar int) [][]any {
	out := make([][]any, len(rows))
	var kg int64
	for i, r := range rows {
		r = append([]any(nil), r...)
		switch r[1+colPart].(int64) {
		case partKey:
			kg = int64(engine.KeyGroup(engine.HashRow(encodeKey(r[0])), maxPar))
			for side := range 2 {
				// A present, empty map restores as one created for size 0: capacity 1.
				x := 1 + colLeftCapacity + side
				if r[x] != nil {
					r[x] = int64(1)
				}
				for _, o := range rows[i+1:] {
					if part := o[1+colPart].(int64); part == partKey {
						break
					} else if part == partLeft+int64(side) {
						r[x] = nil
						break
					}
				}
			}
		case partTimer:
			r[1+colPosition] = kg<<32 | r[1+colPosition].(int64)
		}
		out[i] = r
	}
	return out
}

// step feeds one event to op and returns its output.
func step(t *testing.T, op *IntervalJoin, p Params, e event, now *int64) []string {
	t.Helper()
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	switch e.kind {
	case 'L', 'R':
		s, types := 0, leftTypes
		if e.kind == 'R' {
			s, types = 1, rightTypes
		}
		b := enginetest.Batch(types, [][]any{{e.key, enginetest.Timestamp{Millis: e.time}, e.value}}, []engine.RowKind{0}, enginetest.Options{})
		more, err := op.Process(engine.Of(s, 2, b), *now, out)
		return drain(t, op, more, err, out)
	case 'W':
		if p.rowtimeMode() {
			more, err := op.Advance(e.time, *now, out)
			return drain(t, op, more, err, out)
		}
		*now = e.time
		more, err := op.Advance(math.MinInt64, *now, out)
		return drain(t, op, more, err, out)
	}
	return nil
}

// TestFlinkStateRoundTrip exports the state in Flink's form at every snapshot point of random
// streams and imports it into a new operator: exporting that one gives the same rows (caches,
// their capacities and orders, cleanup times, timers and their positions). An import rebuilt as
// Ferry's own restore rebuilds (no capacities, positions by key group) then continues exactly as
// the operator restored from its own snapshot: the same output, call for call, to the end.
func TestFlinkStateRoundTrip(t *testing.T) {
	const maxPar = 8
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL"} {
		for _, mode := range []string{"rowtime", "proctime"} {
			p := Params{JoinType: jt, TimeMode: mode, LeftLowerBound: -5, LeftUpperBound: 10,
				LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{false}, MinCleanUpIntervalMs: 3}
			t.Run(jt+"/"+mode, func(t *testing.T) {
				keys, checked := 0, 0
				for seed := range 6 {
					r := rand.New(rand.NewPCG(uint64(seed), 7))
					spread := int64(20)
					if seed%3 == 2 {
						spread = 400 // many buckets per key: map resizes
					}
					evs := randomEventsNulls(r, 400, mode == "rowtime", spread, 10)
					op := openJoin(t, p, maxPar, 3)
					var shadow *IntervalJoin // imported at the last snapshot point
					now := int64(0)
					for i, e := range evs {
						if e.kind == 'S' {
							exported := exportFlink(t, op)
							rows := importRows(t, exported)
							back := openJoin(t, p, maxPar, 3)
							if err := importFlink(back, importTypes(t, back), rows, 7); err != nil {
								t.Fatalf("event %d: %v", i, err)
							}
							if got, want := rowsString(exportFlink(t, back)), rowsString(exported); got != want {
								t.Fatalf("event %d: export after import differs\ngot:\n%s\nwant:\n%s", i, got, want)
							}
							back.Close()
							own := snapshotRestore(t, op, p, maxPar)
							shadow = openJoin(t, p, maxPar, 3)
							if err := importFlink(shadow, importTypes(t, shadow), asOwnRestore(rows, maxPar), 5); err != nil {
								t.Fatalf("event %d: %v", i, err)
							}
							if shadow.State().Len() != own.State().Len() {
								t.Fatalf("event %d: imported %d keys, restored %d", i, shadow.State().Len(), own.State().Len())
							}
							op = own
							keys += own.State().Len()
							continue
						}
						n := now
						got := step(t, op, p, e, &now)
						if shadow != nil {
							want := step(t, shadow, p, e, &n)
							if strings.Join(got, "\n") != strings.Join(want, "\n") {
								t.Fatalf("event %d: after the import the output differs\nimported:\n%s\nrestored:\n%s", i, strings.Join(want, "\n"), strings.Join(got, "\n"))
							}
							checked++
						}
					}
				}
				if keys == 0 || checked == 0 {
					t.Fatalf("nothing checked: %d keys, %d events", keys, checked)
				}
			})
		}
	}
}

// TestFlinkStateImportChecks refuses rows Flink's operator would never have written, and keeps
// nothing of a refused batch.
func TestFlinkStateImportChecks(t *testing.T) {
	p := Params{JoinType: "LEFT", TimeMode: "rowtime", LeftLowerBound: -5, LeftUpperBound: 10,
		LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{false}}
	ts := func(ms int64) any { return enginetest.Timestamp{Millis: ms} }
	// key, part, time, joined, position, left timer, right timer, left capacity, right capacity,
	// left k, t, v, right k, t, w
	key := func(k any, lt, rt any) []any {
		return []any{k, int64(partKey), nil, nil, nil, lt, rt, nil, nil, nil, nil, nil, nil, nil, nil}
	}
	left := func(k any, tm int64, joined bool) []any {
		return []any{k, int64(partLeft), tm, joined, nil, nil, nil, nil, nil, k, ts(tm), "l", nil, nil, nil}
	}
	right := func(k any, tm int64) []any {
		return []any{k, int64(partRight), tm, false, nil, nil, nil, nil, nil, nil, nil, nil, k, ts(tm), "r"}
	}
	timer := func(k any, tm, pos int64) []any {
		return []any{k, int64(partTimer), tm, nil, pos, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}
	}
	good := [][]any{key(int64(1), nil, int64(20)), left(int64(1), 4, false), left(int64(1), 4, true), left(int64(1), 6, false), timer(int64(1), 20, 1),
		key(int64(2), int64(30), nil), right(int64(2), 15), timer(int64(2), 30, 2)}
	op := openJoin(t, p, 8, 3)
	types := importTypes(t, op)
	if err := importFlink(op, types, good, 100); err != nil {
		t.Fatal(err)
	}
	if op.State().Len() != 2 {
		t.Fatalf("%d keys imported, want 2", op.State().Len())
	}
	// the left row at 4 that never joined and the one at 6 are padded when the cleanup timer
	// at 20 fires (watermark 20: expiration 20 - 5 - 0 - 1 = 14)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	more, err := op.Advance(20, 0, out)
	got := drain(t, op, more, err, out)
	if want := "+I[1, ts(4,0), \"l\", null, null, null]\n+I[1, ts(6,0), \"l\", null, null, null]"; strings.Join(got, "\n") != want {
		t.Fatalf("after the import:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}

	with := func(rows [][]any, i int, f func(r []any)) [][]any {
		c := make([][]any, len(rows))
		for j, r := range rows {
			c[j] = append([]any(nil), r...)
		}
		f(c[i])
		return c
	}
	bad := map[string][][]any{
		"timer at 21, not a cleanup time":        with(good, 4, func(r []any) { r[2] = int64(21) }),
		"the key has 0 timers":                   append(append([][]any{}, good[:4]...), good[5:]...),
		"not consecutive":                        {key(int64(1), nil, int64(20)), left(int64(1), 4, false), left(int64(1), 6, false), left(int64(1), 4, false), timer(int64(1), 20, 1)},
		"a row of time 5 in the entry of time 4": with(good, 1, func(r []any) { r[10] = ts(5) }),
		"not a HashMap table length":             with(good, 0, func(r []any) { r[7] = int64(12) }),
		"without its part 0 row":                 good[1:],
		"part 1 after part 3":                    append(append([][]any{}, good[:5]...), left(int64(1), 7, false)),
		"timer positions of a key must grow":     {key(int64(1), int64(20), int64(25)), timer(int64(1), 20, 4), timer(int64(1), 25, 3)},
		"part 4":                                 with(good, 3, func(r []any) { r[1] = int64(4) }),
		"without its joined flag":                with(good, 1, func(r []any) { r[3] = nil }),
		"field 2 is NULL":                        with(good, 6, func(r []any) { r[14] = nil }),
		"order Ferry cannot rebuild": {
			// capacity 16: time 16 lies in bin 0 before time 1 in bin 1; given the other way
			key(int64(1), nil, int64(30)), left(int64(1), 1, false), left(int64(1), 16, false), timer(int64(1), 30, 1)},
	}
	bad["order Ferry cannot rebuild"][0][7] = int64(16)
	for want, rows := range bad {
		t.Run(want, func(t *testing.T) {
			op := openJoin(t, p, 8, 3)
			// a good key first, in the same batch: it is not kept either
			rows := append([][]any{key(int64(3), nil, int64(40)), left(int64(3), 9, false), timer(int64(3), 40, 9)}, rows...)
			err := op.ImportState(enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{}))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want one saying %q", err, want)
			}
			if !errors.Is(err, engine.ErrData) && !errors.Is(err, engine.ErrUnsupported) {
				t.Fatalf("error %v wraps neither ErrData nor ErrUnsupported", err)
			}
			if op.State().Len() != 0 || op.keys.bytes != 0 || op.timers.Len() != 0 || op.State().Stats().NextTimerMs != math.MaxInt64 {
				t.Fatalf("after a refused import: %d keys, %d bytes, %d timers", op.State().Len(), op.keys.bytes, op.timers.Len())
			}
		})
	}

	t.Run("imported twice", func(t *testing.T) {
		op := openJoin(t, p, 8, 3)
		if err := importFlink(op, types, good, 100); err != nil {
			t.Fatal(err)
		}
		if err := importFlink(op, types, good[5:], 100); err == nil || !strings.Contains(err.Error(), "holds state already") {
			t.Fatalf("error %v", err)
		}
		if op.State().Len() != 2 {
			t.Fatalf("%d keys", op.State().Len())
		}
	})
}

// TestFlinkStateRefused: early fire and rows Ferry did not keep have no Flink form.
func TestFlinkStateRefused(t *testing.T) {
	ef := efParams("LEFT", "rowtime", 5, "")
	op := openJoin(t, ef, 8, 3)
	if _, err := op.ImportTypes(); !errors.Is(err, engine.ErrUnsupported) {
		t.Fatalf("early fire: import types error %v", err)
	}
	if _, err := op.ExportTypes(); !errors.Is(err, engine.ErrUnsupported) {
		t.Fatalf("early fire: export types error %v", err)
	}
	// a NULL key never joins: Ferry keeps only the times of its inner side's rows
	p := Params{JoinType: "LEFT", TimeMode: "rowtime", LeftLowerBound: -5, LeftUpperBound: 10,
		LeftTimeIndex: 1, RightTimeIndex: 1, FilterNulls: []bool{true}}
	op = openJoin(t, p, 8, 3)
	var now int64
	step(t, op, p, event{kind: 'R', key: nil, time: 5, value: "r"}, &now)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if _, err := op.ExportState(out, true); !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), "never joins") {
		t.Fatalf("export error %v", err)
	}
	_ = fmt.Sprint
}
