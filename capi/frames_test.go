//go:build ferrytest

package main

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/exchange"
)

// Tests of the columnar exchange through the C ABI: a local aggregate with params.exchange emits
// frames, a global aggregate with params.frames takes them (its input schema is the frame
// schema), refuses malformed or foreign frames with FERRY_EDATA and no state change, and refuses
// a snapshot while rows are queued.

var frameSchema = arrow.NewSchema([]arrow.Field{{Name: "frame", Type: arrow.BinaryTypes.Binary},
	{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8}}, nil)

// localSpec is SUM(v) GROUP BY k over (k BIGINT, v valueType) with frames for p channels.
func localSpec(maxP, p int, valueType string) spec {
	return spec{flatSpec{Kind: agg.LocalKind, Name: "local", MaxParallelism: maxP, Keys: []int{0},
		Input: fields("k", "BIGINT", "v", valueType),
		Params: &agg.LocalParams{Aggs: []agg.AggCall{{Func: "SUM", Args: []int{1}}},
			Exchange: &agg.ExchangeParams{Parallelism: p}}}}
}

// localFrames runs rows through a local aggregate of s and returns its frames.
func localFrames(t *testing.T, s spec, rows [][]any) [][]byte {
	t.Helper()
	o := openOp(t, s)
	if !o.out.Equal(frameSchema) {
		t.Fatalf("local output schema %s, want %s", o.out, frameSchema)
	}
	in := buildRecord(o.in, rows, make([]int8, len(rows)))
	defer in.Release()
	out, r := processRaw(t, o.h, exportInput(in), 0)
	if r.code != codeOK || out == nil {
		t.Fatalf("local: %v", r)
	}
	rec := o.importOutput(out)
	defer rec.Release()
	col := rec.Column(0).(*array.Binary)
	var frames [][]byte
	for i := range col.Len() {
		frames = append(frames, slices.Clone(col.Value(i)))
	}
	return frames
}

// processFrames hands frames to o as one batch; the output, if any, is the caller's to release.
func processFrames(o *testOp, frames [][]byte) (arrow.RecordBatch, result) {
	o.t.Helper()
	var rs [][]any
	for _, f := range frames {
		rs = append(rs, []any{f})
	}
	rec := buildRecord(frameSchema, rs, make([]int8, len(rs)))
	defer rec.Release()
	out, r := processRaw(o.t, o.h, exportInput(rec), 0)
	if out == nil {
		return nil, r
	}
	return o.importOutput(out), r
}

func TestFramesThroughABI(t *testing.T) {
	globalJSON := spec{flatSpec{Kind: agg.GlobalKind, Name: "global", MaxParallelism: 128, Keys: []int{0},
		Input: fields("k", "BIGINT", "s", "BIGINT"),
		Params: &agg.GlobalParams{LocalInput: fields("v", "BIGINT"), Aggs: []agg.AggCall{{Func: "SUM", Args: []int{0}}},
			Frames: &agg.FramesParams{BundleSize: 4}}}}.json()
	rows := [][]any{{int64(1), int64(10)}, {int64(2), int64(20)}, {int64(1), int64(5)}, {int64(3), int64(7)}, {int64(40), int64(1)}}
	frames := localFrames(t, localSpec(128, 2, "BIGINT"), rows)
	if len(frames) != 2 {
		t.Fatalf("%d frames for 4 keys over 2 channels", len(frames))
	}

	// The partial rows' schema is not the global's C-level input any more.
	_, r := open(t, globalJSON, inputSchema(&agg.Spec{Input: fields("k", "BIGINT", "s", "BIGINT"),
		InputTypes: []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.BigInt, Nullable: true}}}))
	wantCode(t, "open with the partial row schema", r, codeData, "input schema", "3 columns, want 2 (1 declared")

	h, r := open(t, globalJSON, frameSchema)
	wantCode(t, "open", r, codeOK)
	o := &testOp{t: t, h: h, in: frameSchema}
	o.out = o.outputSchema()
	defer o.close()
	send := func(frames ...[]byte) ([]string, result) {
		res, r := processFrames(o, frames)
		if res == nil {
			return nil, r
		}
		defer res.Release()
		return recordRows(res), r
	}
	keys := func() int64 {
		var st cStats
		var e cError
		if r := finish(t, "ferry_operator_stats", int32(ferry_operator_stats(h, &st, &e)), &e); r.code != codeOK {
			t.Fatal(r)
		}
		return int64(st.keys)
	}
	got, r := send(frames[0])
	wantCode(t, "first frame", r, codeOK)
	if len(got) != 0 || keys() != 0 {
		t.Fatalf("a partial bundle emitted %v, %d keys", got, keys())
	}
	_, r = snapshotKG(t, h, 0)
	wantCode(t, "snapshot with queued rows", r, codeState, "queued")

	corrupt := slices.Clone(frames[1])
	corrupt[len(corrupt)-8] = 2 // the first row's RowKind
	foreignMaxP := localFrames(t, localSpec(256, 2, "BIGINT"), rows)[0]
	foreignType := localFrames(t, localSpec(128, 1, "INT"), [][]any{{int64(1), int32(1)}})[0]
	for _, c := range []struct {
		name  string
		frame []byte
		msg   string
	}{
		{"corrupt", corrupt, "RowKind"},
		{"truncated", frames[1][:len(frames[1])-1], "frame: "},
		{"max parallelism", foreignMaxP, "max parallelism 256"},
		{"row type", foreignType, "fingerprint"},
		{"garbage", []byte("not a frame at all, just bytes"), "frame: "},
	} {
		_, r := send(frames[1], c.frame)
		wantCode(t, c.name, r, codeData, "frame 1", c.msg)
		if keys() != 0 {
			t.Fatalf("%s: %d keys after a refused call", c.name, keys())
		}
	}
	got, r = send(frames[1])
	wantCode(t, "second frame", r, codeOK)
	want := []string{"+I[1, 15]", "+I[2, 20]", "+I[3, 7]", "+I[40, 1]"}
	slices.Sort(got)
	if !slices.Equal(got, want) || keys() != 4 {
		t.Fatalf("bundle of 4 rows: %v, want %v (in some order); %d keys", got, want, keys())
	}
	var e cError
	out := newCArray()
	r = finish(t, "ferry_operator_flush", int32(flushCall(h, 0, out, &e)), &e)
	wantCode(t, "flush", r, codeOK)
	if out.release != nil {
		t.Fatal("flush with nothing queued emitted rows")
	}
	if _, r := snapshotKG(t, h, 0); r.code != codeOK {
		t.Fatalf("snapshot after the bundle: %v", r)
	}
}

// TestIncrementalFramesThroughABI: a split DISTINCT's incremental aggregate reading the local's
// frames (keyed by k and a bucket, 128 key groups) and writing frames routed by k for a global of
// 256 key groups over 2 channels: its C-level input and output are the frame schema, it refuses a
// snapshot while rows are queued, and the global reading its frames sums what the local read.
func TestIncrementalFramesThroughABI(t *testing.T) {
	local := spec{flatSpec{Kind: agg.LocalKind, Name: "local", MaxParallelism: 128, Keys: []int{0, 1},
		Input:  fields("k", "BIGINT", "b", "BIGINT", "v", "BIGINT"),
		Params: &agg.LocalParams{Aggs: []agg.AggCall{{Func: "SUM", Args: []int{2}}}, Exchange: &agg.ExchangeParams{Parallelism: 1}}}}
	var rows [][]any
	want := map[int64]int64{}
	for i := range int64(40) {
		rows = append(rows, []any{i % 7, i % 3, i})
		want[i%7] += i
	}
	frames := localFrames(t, local, rows)
	maxP := 256
	incremental := spec{flatSpec{Kind: agg.IncrementalKind, Name: "incremental", MaxParallelism: 128, Keys: []int{0, 1},
		Input: fields("k", "BIGINT", "b", "BIGINT", "s", "BIGINT"),
		Params: &agg.IncrementalParams{LocalInput: fields("v", "BIGINT"), Aggs: []agg.AggCall{{Func: "SUM", Args: []int{0}}},
			FinalKeys: []int{0}, Frames: &agg.FramesParams{BundleSize: 1000},
			Exchange: &agg.ExchangeParams{Parallelism: 2, MaxParallelism: &maxP}}}}.json()
	h, r := open(t, incremental, frameSchema)
	wantCode(t, "open the incremental", r, codeOK)
	o := &testOp{t: t, h: h, in: frameSchema}
	o.out = o.outputSchema()
	defer o.close()
	if !o.out.Equal(frameSchema) {
		t.Fatalf("incremental output schema %s, want %s", o.out, frameSchema)
	}
	if res, r := processFrames(o, frames); r.code != codeOK || res != nil {
		t.Fatalf("a partial bundle: %v, output %v", r, res)
	}
	_, r = snapshotKG(t, h, 0)
	wantCode(t, "snapshot with queued rows", r, codeState, "queued")
	var e cError
	out := newCArray()
	r = finish(t, "ferry_operator_flush", int32(flushCall(h, 0, out, &e)), &e)
	wantCode(t, "flush", r, codeOK)
	res := o.importOutput(out)
	col := res.Column(0).(*array.Binary)
	var outFrames [][]byte
	for i := range col.Len() {
		f := slices.Clone(col.Value(i))
		var v engine.Batch
		hd, err := exchange.NewDecoder([]engine.Type{{ID: engine.BigInt}, {ID: engine.BigInt}}).Decode(f, &v)
		if err != nil || hd.MaxParallelism != maxP || hd.Parallelism != 2 || hd.Channel != i {
			t.Fatalf("frame %d: %+v, %v", i, hd, err)
		}
		outFrames = append(outFrames, f)
	}
	res.Release()
	if len(outFrames) != 2 {
		t.Fatalf("%d frames for 7 keys over 2 channels", len(outFrames))
	}
	if _, r := snapshotKG(t, h, 0); r.code != codeOK {
		t.Fatalf("snapshot after the bundle: %v", r)
	}

	global := spec{flatSpec{Kind: agg.GlobalKind, Name: "global", MaxParallelism: maxP, Keys: []int{0},
		Input: fields("k", "BIGINT", "s", "BIGINT"),
		Params: &agg.GlobalParams{LocalInput: fields("v", "BIGINT"), Aggs: []agg.AggCall{{Func: "SUM", Args: []int{0}}},
			Frames: &agg.FramesParams{BundleSize: 1000}}}}.json()
	gh, r := open(t, global, frameSchema)
	wantCode(t, "open the global", r, codeOK)
	g := &testOp{t: t, h: gh, in: frameSchema}
	g.out = g.outputSchema()
	defer g.close()
	if res, r := processFrames(g, outFrames); r.code != codeOK || res != nil {
		t.Fatalf("global: %v, output %v", r, res)
	}
	out = newCArray()
	r = finish(t, "ferry_operator_flush", int32(flushCall(gh, 0, out, &e)), &e)
	wantCode(t, "flush the global", r, codeOK)
	res = g.importOutput(out)
	got := recordRows(res)
	res.Release()
	var wantRows []string
	for k, s := range want {
		wantRows = append(wantRows, fmt.Sprintf("+I[%d, %d]", k, s))
	}
	slices.Sort(got)
	slices.Sort(wantRows)
	if !slices.Equal(got, wantRows) {
		t.Fatalf("global over the incremental's frames: %v, want %v", got, wantRows)
	}
}
