//go:build ferrytest

package main

import (
	"testing"

	"github.com/ferrystream/ferry/agg"
)

// viewKG returns the next chunk of a view's key group kg (nil at the end of its sequence).
func viewKG(t *testing.T, h cHandle, view int64, kg int) ([]byte, result) {
	t.Helper()
	var b cBlob
	var e cError
	r := finish(t, "ferry_operator_snapshot_view", int32(ferry_operator_snapshot_view(h, cInt64(view), cInt32(kg), &b, &e)), &e)
	if r.code != codeOK || b.release == nil {
		return nil, r
	}
	data := blobBytes(&b)
	releaseBlob(&b)
	return data, r
}

// A frozen view hands out the chunks the snapshot had at the freeze, though the state changed
// since; released, it is gone.
func TestSnapshotView(t *testing.T) {
	s := spec{flatSpec{
		Kind: "group_aggregate", Input: fields("k", "BIGINT", "v", "BIGINT"), Keys: []int{0},
		Aggs:           []agg.AggCall{{Func: "COUNT"}, {Func: "SUM", Args: []int{1}}},
		MaxParallelism: 1,
	}}
	a := openOp(t, s)
	defer a.close()
	batch := func(from, v int64) {
		var rows [][]any
		for k := from; k < from+4096; k++ {
			rows = append(rows, []any{k * 7919, v})
		}
		rec := buildRecord(a.in, rows, make([]int8, len(rows)))
		a.process(rec, 0)
		rec.Release()
	}
	for start := int64(0); start < 20_000; start += 4096 {
		batch(start, 1)
	}
	var want [][]byte
	for {
		b, res := snapshotKG(t, a.h, 0)
		wantCode(t, "snapshot", res, codeOK)
		if b == nil {
			break
		}
		want = append(want, b)
	}
	var view cInt64
	var e cError
	wantCode(t, "freeze", finish(t, "ferry_operator_freeze", int32(ferry_operator_freeze(a.h, &view, &e)), &e), codeOK)
	batch(0, 5)      // changes keys the view holds
	batch(50_000, 1) // and adds others
	for i := 0; ; i++ {
		b, res := viewKG(t, a.h, int64(view), 0)
		wantCode(t, "snapshot_view", res, codeOK)
		if b == nil {
			if i != len(want) {
				t.Fatalf("%d chunks in the view, %d in the snapshot at the freeze", i, len(want))
			}
			break
		}
		if i >= len(want) || string(b) != string(want[i]) {
			t.Fatalf("chunk %d of the view differs from the snapshot at the freeze", i)
		}
	}
	now, _ := snapshotKG(t, a.h, 0)
	if string(now) == string(want[0]) {
		t.Fatal("the changes did not reach the state")
	}
	wantCode(t, "release", finish(t, "ferry_operator_release_view", int32(ferry_operator_release_view(a.h, view, &e)), &e), codeOK)
	_, res := viewKG(t, a.h, int64(view), 0)
	wantCode(t, "snapshot_view of a released view", res, codeInval, "no open state view")
}
