package agg

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/exchange"
)

// Tests of the columnar exchange's operators: the local aggregate's frames against its rows,
// the framed global aggregate against the row global fed bundles of exactly bundle_size rows.

// withExchange is c's local spec with params.exchange for p channels of maxP key groups.
func withExchange(t *testing.T, c twoPhaseCase, p, maxP, target int) *Spec {
	t.Helper()
	h := *c.local.Spec
	h.MaxParallelism = maxP
	h.Params = jsonMarshal(&LocalParams{Aggs: c.local.Aggs, NeedRetraction: c.local.NeedRetraction,
		Exchange: &ExchangeParams{Parallelism: p, TargetFrameBytes: &target}})
	spec, err := ParseLocalSpec(&h)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// batchRows decodes the rows of a batch view (copying them through Gather).
func batchRows(b *engine.Batch) []enginetest.Row {
	types := make([]engine.Type, len(b.Cols))
	vb := make([]int, len(b.Cols))
	src := make([]int32, b.Len)
	for i := range src {
		src[i] = int32(i)
	}
	for c := range b.Cols {
		types[c] = b.Cols[c].Type
		if types[c].Variable() {
			vb[c] = engine.GatherBytes(&b.Cols[c], src)
		}
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if err := out.Init(types, b.Len, vb); err != nil {
		panic(err)
	}
	for c := range b.Cols {
		engine.Gather(&out.Cols[c], &b.Cols[c], src)
	}
	copy(out.Kinds(), b.Kinds)
	out.Finish()
	return enginetest.Rows(out)
}

// frameRows decodes a batch of frames: per frame its header and rows.
func frameRows(t *testing.T, out *engine.OutBatch, types []engine.Type) ([]exchange.Header, [][]enginetest.Row) {
	t.Helper()
	dec := exchange.NewDecoder(types)
	var hs []exchange.Header
	var rows [][]enginetest.Row
	col := &out.Cols[0]
	for j := range out.Len {
		var v engine.Batch
		h, err := dec.Decode(col.Data[col.Offs[j]:col.Offs[j+1]], &v)
		if err != nil {
			t.Fatalf("frame %d: %v", j, err)
		}
		hs, rows = append(hs, h), append(rows, batchRows(&v))
	}
	return hs, rows
}

// TestLocalFramesMatchRows runs random workloads through the local aggregate with and without
// params.exchange: the frames hold exactly the row-mode output, each row on its key group's
// channel, channels ascending, every channel's rows in the row-mode (HashMap) order.
func TestLocalFramesMatchRows(t *testing.T) {
	for seed := range uint64(30) {
		c := randomTwoPhase(seed)
		r := rand.New(rand.NewPCG(seed, 21))
		maxP := []int{1, 2, 128, 129, 4096}[r.IntN(5)]
		p := min(maxP, 1+r.IntN(7))
		target := []int{1, 100, 2000, exchange.DefaultTargetBytes}[r.IntN(4)]
		rowsSpec := *c.local
		rowsSpec.Spec = &engine.Spec{}
		*rowsSpec.Spec = *c.local.Spec
		rowsSpec.MaxParallelism = maxP
		plain, err := NewLocalGroupAggregate(&rowsSpec)
		if err != nil {
			t.Fatal(err)
		}
		framed, err := NewLocalGroupAggregate(withExchange(t, c, p, maxP, target))
		if err != nil {
			t.Fatal(err)
		}
		if got := framed.Output(); len(got) != 1 || got[0].Type.String() != "BYTES NOT NULL" {
			t.Fatalf("framed output %v", got)
		}
		types := plain.types
		keys := make([]int, len(c.local.Keys))
		for i := range keys {
			keys[i] = i
		}
		outRows := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		outFrames := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		for n, bd := range bundles(r, len(c.rows), nil, []int{1, 50, 2000}[r.IntN(3)]) {
			rows, kinds := c.rows[bd[0]:bd[1]], c.kinds[bd[0]:bd[1]]
			b := enginetest.Batch(c.local.InputTypes, rows, kinds, enginetest.Options{Offset: n % 3, Garbage: r})
			if _, err := plain.Process(engine.Of(0, 1, b), 0, outRows); err != nil {
				t.Fatal(err)
			}
			if _, err := framed.Process(engine.Of(0, 1, b), 0, outFrames); err != nil {
				t.Fatal(err)
			}
			want := enginetest.Rows(outRows)
			var wantVals [][]any
			for _, w := range want {
				wantVals = append(wantVals, w.Values)
			}
			hashes := keyHashes(types, keys, wantVals)
			byChannel := make([][]string, p)
			for j, w := range want {
				ch := exchange.Channel(engine.KeyGroup(hashes[j], maxP), p, maxP)
				byChannel[ch] = append(byChannel[ch], w.String())
			}
			hs, got := frameRows(t, outFrames, types)
			gotChannel := make([][]string, p)
			last := -1
			for f, h := range hs {
				if h.Channel < last || h.Parallelism != p || h.MaxParallelism != maxP {
					t.Fatalf("seed %d bundle %d frame %d: header %+v after channel %d", seed, n, f, h, last)
				}
				last = h.Channel
				for _, row := range got[f] {
					gotChannel[h.Channel] = append(gotChannel[h.Channel], row.String())
				}
			}
			for ch := range p {
				if d := diffStrings(gotChannel[ch], byChannel[ch]); d != "" {
					t.Fatalf("seed %d bundle %d channel %d (p %d, maxP %d, target %d): %s", seed, n, ch, p, maxP, target, d)
				}
			}
		}
	}
}

// framedGlobalSpec is gs with params.frames.
func framedGlobalSpec(t *testing.T, gs *GlobalSpec, bundleSize int) *GlobalSpec {
	t.Helper()
	h := *gs.Spec.Spec
	var p GlobalParams
	if err := engine.StrictDecode(h.Params, &p); err != nil {
		t.Fatal(err)
	}
	p.Frames = &FramesParams{BundleSize: bundleSize}
	h.Params = jsonMarshal(&p)
	fs, err := ParseGlobalSpec(&h)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// framesOf encodes rows (input rows of gs, keyed by its keys) into frames for one channel, as a
// batch of frames.
func framesOf(t *testing.T, gs *Spec, rows [][]any, target int, maxP int) *engine.Batch {
	t.Helper()
	b := enginetest.Batch(gs.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
	kgs := make([]int32, len(rows))
	for i, h := range keyHashes(gs.InputTypes, gs.Keys, rows) {
		kgs[i] = int32(engine.KeyGroup(h, maxP))
	}
	enc, err := exchange.NewEncoder(gs.InputTypes, 1, maxP, target)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := enc.Plan(b, kgs)
	frames := make([][]any, n)
	for f := range n {
		buf := make([]byte, enc.Size(f))
		enc.Write(f, b, buf)
		frames[f] = []any{buf}
	}
	return enginetest.Batch([]engine.Type{frameField.Type}, frames, make([]engine.RowKind, n), enginetest.Options{})
}

// TestFramedGlobalMatchesRows feeds random partial streams (retracting input, TTL, DISTINCT,
// NULLs) to the global aggregate as frames, in random calls and frame sizes with random bundle
// sizes, Advance and Flush: its changelog equals the row global's fed bundles of exactly
// bundle_size rows, the remainder at each Advance or Flush, at the time of the call that
// completed each bundle.
func TestFramedGlobalMatchesRows(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		c := randomTwoPhase(seed)
		r := rand.New(rand.NewPCG(seed, 31))
		gs := globalSpecOf(t, c, r.IntN(2) == 0)
		size := []int{1, 2, 7, 64, 1000}[r.IntN(5)]
		fs := framedGlobalSpec(t, gs, size)
		inner, err := NewGlobalGroupAggregate(fs)
		if err != nil {
			t.Fatal(err)
		}
		framed := NewFramed(inner, inner, fs.Spec, fs.Frames)
		plain, err := NewGlobalGroupAggregate(gs)
		if err != nil {
			t.Fatal(err)
		}
		rows, times := partialStream(c, r)
		var tt []int64
		if c.times != nil {
			tt = times
		}
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		var got, want []string
		var queued [][]any
		runPlain := func(rows [][]any, now int64) {
			b := enginetest.Batch(gs.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
			if _, err := plain.Process(engine.Of(0, 1, b), now, out); err != nil {
				t.Fatal(err)
			}
			want = append(want, rowStrings(enginetest.Rows(out))...)
		}
		for _, call := range bundles(r, len(rows), tt, []int{1, 5, 40, 3000}[r.IntN(4)]) {
			part, now := rows[call[0]:call[1]], times[call[0]]
			b := framesOf(t, gs.Spec, part, []int{1, 300, 1 << 20}[r.IntN(3)], gs.MaxParallelism)
			more, err := framed.Process(engine.Of(0, 1, b), now, out)
			for {
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				got = append(got, rowStrings(enginetest.Rows(out))...)
				if !more {
					break
				}
				more, err = framed.Continue(out)
			}
			queued = append(queued, part...)
			for len(queued) >= size {
				runPlain(queued[:size], now)
				queued = queued[size:]
			}
			if framed.Buffered() != len(queued) {
				t.Fatalf("seed %d: %d rows buffered, want %d", seed, framed.Buffered(), len(queued))
			}
			if r.IntN(6) == 0 || call[1] == len(rows) {
				var err error
				if r.IntN(2) == 0 {
					_, err = framed.Advance(now, now, out)
				} else {
					_, err = framed.Flush(now, out)
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, rowStrings(enginetest.Rows(out))...)
				if len(queued) > 0 {
					runPlain(queued, now)
					queued = nil
				}
			}
			if d := diffStrings(got, want); d != "" {
				t.Fatalf("seed %d (bundle %d, spec %s): %s", seed, size, jsonMarshal(gs.Params), d)
			}
		}
		if inner.Groups() != plain.Groups() || len(got) == 0 {
			t.Fatalf("seed %d: %d keys, the row global has %d; %d rows", seed, inner.Groups(), plain.Groups(), len(got))
		}
	}
}

// incrementalWith is sc's incremental spec with params.frames (bundleSize > 0) and params.exchange
// (p > 0, for maxP key groups).
func incrementalWith(t *testing.T, sc splitCase, bundleSize, p, maxP, target int) *IncrementalSpec {
	t.Helper()
	h := *sc.incr.Spec.Spec
	var params IncrementalParams
	if err := engine.StrictDecode(h.Params, &params); err != nil {
		t.Fatal(err)
	}
	if bundleSize > 0 {
		params.Frames = &FramesParams{BundleSize: bundleSize}
	}
	if p > 0 {
		params.Exchange = &ExchangeParams{Parallelism: p, MaxParallelism: &maxP, TargetFrameBytes: &target}
	}
	h.Params = jsonMarshal(&params)
	spec, err := ParseIncrementalSpec(&h)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestIncrementalFramesMatchRows feeds a split DISTINCT's partial rows to the incremental
// aggregate as rows, in bundles of exactly bundle_size rows (the remainder at each Flush), and to
// one opened from a spec with params.frames, params.exchange or both, fed frames in random calls
// and frame sizes: with rows out the changelogs are equal; with frames out every channel gets
// exactly the row output's rows whose final key routes to it (Flink's KeyGroupStreamPartitioner
// for the consumer's max parallelism), in order, each frame's header naming its channel and
// key-group range.
func TestIncrementalFramesMatchRows(t *testing.T) {
	seeds := uint64(40)
	if testing.Short() {
		seeds = 12
	}
	for seed := range seeds {
		retract := seed%2 == 0
		sc := newSplitCase(t, retract)
		r := rand.New(rand.NewPCG(seed, 51))
		partials := splitPartials(t, sc, splitStreams(r, retract), r)
		size := []int{1, 2, 7, 64, 1000}[r.IntN(5)]
		framesIn, framesOut := seed%3 != 1, seed%3 != 2
		maxP := []int{1, 2, 128, 129, 4096}[r.IntN(5)]
		p := min(maxP, 1+r.IntN(7))
		target := []int{1, 100, 2000, exchange.DefaultTargetBytes}[r.IntN(4)]
		inSize, outP := 0, 0
		if framesIn {
			inSize = size
		}
		if framesOut {
			outP = p
		}
		fs := incrementalWith(t, sc, inSize, outP, maxP, target)
		op, err := enginetest.Open(fs.Spec.Spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := op.(*Framed); ok != framesIn {
			t.Fatalf("seed %d: %T opened for frames in %v", seed, op, framesIn)
		}
		plain, err := NewIncrementalGroupAggregate(sc.incr)
		if err != nil {
			t.Fatal(err)
		}
		if got := op.Output(); framesOut != (len(got) == 1 && got[0].Type.String() == "BYTES NOT NULL") {
			t.Fatalf("seed %d: output %v with frames out %v", seed, got, framesOut)
		}
		types := plain.types
		finalKeys := make([]int, len(sc.incr.FinalKeys))
		for i := range finalKeys {
			finalKeys[i] = i
		}
		out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
		var got, want []string // rows out: the changelog; frames out: "channel: row"
		var queued [][]any
		collect := func() {
			if out.Len == 0 {
				return
			}
			if !framesOut {
				got = append(got, rowStrings(enginetest.Rows(out))...)
				return
			}
			hs, rows := frameRows(t, out, types)
			last := -1
			for f, h := range hs {
				if h.Channel < last || h.Parallelism != p || h.MaxParallelism != maxP {
					t.Fatalf("seed %d frame %d: header %+v after channel %d", seed, f, h, last)
				}
				last = h.Channel
				var vals [][]any
				for _, row := range rows[f] {
					vals = append(vals, row.Values)
					got = append(got, fmt.Sprintf("%d: %s", h.Channel, row))
				}
				for i, hash := range keyHashes(types, finalKeys, vals) {
					if kg := engine.KeyGroup(hash, maxP); kg < h.KGFirst || kg > h.KGLast {
						t.Fatalf("seed %d frame %d row %d: key group %d outside [%d, %d]", seed, f, i, kg, h.KGFirst, h.KGLast)
					}
				}
			}
		}
		runPlain := func(rows [][]any, now int64) {
			b := enginetest.Batch(sc.incr.InputTypes, rows, make([]engine.RowKind, len(rows)), enginetest.Options{})
			if _, err := plain.Process(engine.Of(0, 1, b), now, out); err != nil {
				t.Fatal(err)
			}
			rs := enginetest.Rows(out)
			if !framesOut {
				want = append(want, rowStrings(rs)...)
				return
			}
			var vals [][]any
			for _, row := range rs {
				vals = append(vals, row.Values)
			}
			byChannel := make([][]string, p)
			for j, hash := range keyHashes(types, finalKeys, vals) {
				ch := exchange.Channel(engine.KeyGroup(hash, maxP), p, maxP)
				byChannel[ch] = append(byChannel[ch], fmt.Sprintf("%d: %s", ch, rs[j]))
			}
			for _, rows := range byChannel {
				want = append(want, rows...)
			}
		}
		now := int64(0)
		for _, call := range bundles(r, len(partials), nil, []int{1, 5, 40, 3000}[r.IntN(4)]) {
			part := partials[call[0]:call[1]]
			now++
			if !framesIn { // each call is one bundle
				b := enginetest.Batch(sc.incr.InputTypes, part, make([]engine.RowKind, len(part)), enginetest.Options{Offset: int(now % 3)})
				if _, err := op.Process(engine.Of(0, 1, b), now, out); err != nil {
					t.Fatal(err)
				}
				collect()
				runPlain(part, now)
			} else {
				b := framesOf(t, fs.Spec, part, []int{1, 300, 1 << 20}[r.IntN(3)], sc.incr.MaxParallelism)
				more, err := op.Process(engine.Of(0, 1, b), now, out)
				for {
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					collect()
					if !more {
						break
					}
					more, err = op.Continue(out)
				}
				queued = append(queued, part...)
				for len(queued) >= size {
					runPlain(queued[:size], now)
					queued = queued[size:]
				}
				if n := op.(*Framed).Buffered(); n != len(queued) {
					t.Fatalf("seed %d: %d rows buffered, want %d", seed, n, len(queued))
				}
				if r.IntN(6) == 0 || call[1] == len(partials) {
					if _, err := op.Flush(now, out); err != nil {
						t.Fatal(err)
					}
					collect()
					if len(queued) > 0 {
						runPlain(queued, now)
						queued = nil
					}
				}
			}
			if d := diffStrings(got, want); d != "" {
				t.Fatalf("seed %d (frames in %v size %d, frames out %v p %d maxP %d target %d): %s", seed, framesIn, size, framesOut, p, maxP, target, d)
			}
		}
		if len(got) == 0 || op.State().Len() != plain.State().Len() {
			t.Fatalf("seed %d: %d rows; %d keys, the row incremental has %d", seed, len(got), op.State().Len(), plain.State().Len())
		}
		op.Close()
	}
}

// TestGlobalHonoursColumnOffset feeds the row global the same partial rows laid out at offset 0
// and at a large offset with garbage before them: the changelogs are equal.
func TestGlobalHonoursColumnOffset(t *testing.T) {
	for seed := range uint64(10) {
		c := randomTwoPhase(seed)
		r := rand.New(rand.NewPCG(seed, 41))
		gs := globalSpecOf(t, c, true)
		rows, times := partialStream(c, r)
		var outs [2][]string
		for k, off := range []int{0, 1001} {
			op, err := NewGlobalGroupAggregate(gs)
			if err != nil {
				t.Fatal(err)
			}
			out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
			for at := 0; at < len(rows); at += 97 {
				part := rows[at:min(at+97, len(rows))]
				b := enginetest.Batch(gs.InputTypes, part, make([]engine.RowKind, len(part)), enginetest.Options{Offset: off, Garbage: rand.New(rand.NewPCG(seed, uint64(at)))})
				if _, err := op.Process(engine.Of(0, 1, b), times[at], out); err != nil {
					t.Fatal(err)
				}
				outs[k] = append(outs[k], rowStrings(enginetest.Rows(out))...)
			}
		}
		if d := diffStrings(outs[1], outs[0]); d != "" || len(outs[0]) == 0 {
			t.Fatalf("seed %d: %s", seed, d)
		}
	}
}

// TestFramedGlobalRefuses: a malformed frame and a frame of another max parallelism or row type
// fail the call with ErrData before anything is queued or merged, even after good frames of the
// same call; a row outside the operator's key groups fails its bundle with ErrData before the
// bundle changes any state, and the operator refuses every later call.
func TestFramedGlobalRefuses(t *testing.T) {
	input := bigintInput("k", "v")
	aggs := []AggCall{{Func: "SUM", Args: []int{1}, Name: "s"}}
	c := twoPhaseCaseOf(t, input, []int{0}, aggs, false, 0)
	gs := globalSpecOf(t, c, true)
	start, end := 0, 63
	h := *gs.Spec.Spec
	h.KeyGroupStart, h.KeyGroupEnd = &start, &end
	var p GlobalParams
	if err := engine.StrictDecode(h.Params, &p); err != nil {
		t.Fatal(err)
	}
	p.Frames = &FramesParams{BundleSize: 3}
	h.Params = jsonMarshal(&p)
	fs, err := ParseGlobalSpec(&h)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGlobalGroupAggregate(fs)
	if err != nil {
		t.Fatal(err)
	}
	op := NewFramed(g, g, fs.Spec, fs.Frames)
	// keys of key groups inside and outside [0, 63]
	var in, outside [][]any
	for k := int64(0); len(in) < 4 || len(outside) < 1; k++ {
		row := []any{k, k, k}
		if engine.KeyGroup(keyHashes(gs.InputTypes, gs.Keys, [][]any{row})[0], 128) <= end {
			in = append(in, row)
		} else {
			outside = append(outside, row)
		}
	}
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	good := framesOf(t, gs.Spec, in[:2], 1<<20, 128)
	if _, err := op.Process(engine.Of(0, 1, good), 0, out); err != nil || op.Buffered() != 2 {
		t.Fatalf("%v, %d buffered", err, op.Buffered())
	}
	frame := func(b *engine.Batch) []byte { return b.Cols[0].Bytes(0) }
	goodFrame := frame(framesOf(t, gs.Spec, in[2:4], 1<<20, 128))
	corrupt := slices.Clone(goodFrame)
	corrupt[len(corrupt)-8] = 1 // RowKind of the first row (the RowKind column is the last, 8 bytes padded)
	otherTypes := bigintInput("k", "v", "w")
	c2 := twoPhaseCaseOf(t, otherTypes, []int{0}, []AggCall{{Func: "SUM", Args: []int{1}, Name: "s"}, {Func: "SUM", Args: []int{2}, Name: "t"}}, false, 0)
	gs2 := globalSpecOf(t, c2, true)
	cases := []struct {
		name, want string
		frame      []byte
	}{
		{"corrupt", "RowKind", corrupt},
		{"max parallelism", "max parallelism 256", frame(framesOf(t, gs.Spec, in[2:4], 1<<20, 256))},
		{"row type", "fingerprint", frame(framesOf(t, gs2.Spec, [][]any{{int64(1), int64(1), int64(1), int64(1)}}, 1<<20, 128))},
		{"truncated", "bytes", goodFrame[:len(goodFrame)-8]},
	}
	for _, tc := range cases {
		b := enginetest.Batch([]engine.Type{frameField.Type}, [][]any{{goodFrame}, {tc.frame}}, make([]engine.RowKind, 2), enginetest.Options{})
		_, err := op.Process(engine.Of(0, 1, b), 0, out)
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "frame 1") {
			t.Errorf("%s: %v, want an ErrData on frame 1 naming %q", tc.name, err, tc.want)
		}
		if op.Buffered() != 2 || g.Groups() != 0 {
			t.Fatalf("%s: %d rows buffered, %d keys after a refused call", tc.name, op.Buffered(), g.Groups())
		}
	}
	if _, err := op.Flush(0, out); err != nil || out.Len != 2 || g.Groups() != 2 || op.Buffered() != 0 {
		t.Fatalf("flush: %v, %d rows, %d keys, %d buffered", err, out.Len, g.Groups(), op.Buffered())
	}
	// a misrouted row: two good rows, then the row of a foreign key group completes the bundle
	b := enginetest.Batch([]engine.Type{frameField.Type}, [][]any{{goodFrame}, {frame(framesOf(t, gs.Spec, outside[:1], 1<<20, 128))}},
		make([]engine.RowKind, 2), enginetest.Options{})
	if _, err := op.Process(engine.Of(0, 1, b), 0, out); !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), "outside this operator's range") {
		t.Fatalf("a row of a foreign key group: %v", err)
	}
	if g.Groups() != 2 {
		t.Fatalf("%d keys after the refused bundle, want the 2 before it", g.Groups())
	}
	if _, err := op.Flush(0, out); !errors.Is(err, engine.ErrState) {
		t.Fatalf("a call after the failed bundle: %v, want ErrState", err)
	}
}

// TestFramesParams refuses bad exchange and frames params.
func TestFramesParams(t *testing.T) {
	local := func(params string) error {
		_, err := enginetest.Open(mustSpec(t, `{"kind":"local_group_aggregate","max_parallelism":128,"inputs":[{"fields":[{"name":"k","type":"BIGINT"}],"keys":[0]}],"params":`+params+`}`))
		return err
	}
	global := func(params string) error {
		_, err := enginetest.Open(mustSpec(t, `{"kind":"global_group_aggregate","max_parallelism":128,"inputs":[{"fields":[{"name":"k","type":"BIGINT"}],"keys":[0]}],"params":`+params+`}`))
		return err
	}
	incremental := func(params string) error {
		_, err := enginetest.Open(mustSpec(t, `{"kind":"incremental_group_aggregate","max_parallelism":128,"inputs":[{"fields":[{"name":"k","type":"BIGINT"}],"keys":[0]}],"params":{"local_input":[],"aggs":[],"final_keys":[0],`+params+`}}`))
		return err
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{local(`{"aggs":[],"exchange":{"parallelism":0}}`), "params.exchange.parallelism: 0 outside [1, max_parallelism 128]"},
		{local(`{"aggs":[],"exchange":{"parallelism":129}}`), "params.exchange.parallelism: 129"},
		{local(`{"aggs":[],"exchange":{"parallelism":2,"target_frame_bytes":0}}`), "params.exchange.target_frame_bytes: 0"},
		{local(`{"aggs":[],"exchange":{"parallelism":2,"bogus":1}}`), "bogus"},
		{global(`{"local_input":[],"aggs":[],"frames":{"bundle_size":0}}`), "params.frames.bundle_size: 0"},
		{local(`{"aggs":[],"exchange":{"parallelism":2,"max_parallelism":128}}`), "params.exchange.max_parallelism: set"},
		{incremental(`"frames":{"bundle_size":0}`), "params.frames.bundle_size: 0"},
		{incremental(`"exchange":{"parallelism":2}`), "params.exchange.max_parallelism: required"},
		{incremental(`"exchange":{"parallelism":2,"max_parallelism":32769}`), "params.exchange.max_parallelism: 32769 outside"},
		{incremental(`"exchange":{"parallelism":5,"max_parallelism":4}`), "params.exchange.parallelism: 5 outside [1, max_parallelism 4]"},
		{incremental(`"exchange":{"parallelism":2,"max_parallelism":4,"target_frame_bytes":0}`), "params.exchange.target_frame_bytes: 0"},
	} {
		if !errors.Is(c.err, engine.ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%v, want ErrInvalid naming %q", c.err, c.want)
		}
	}
	if err := local(`{"aggs":[],"exchange":{"parallelism":128}}`); err != nil {
		t.Error(err)
	}
	if err := global(`{"local_input":[],"aggs":[],"frames":{"bundle_size":1}}`); err != nil {
		t.Error(err)
	}
	// the incremental's own max parallelism (128) does not bound the consumer's channels
	if err := incremental(`"frames":{"bundle_size":1},"exchange":{"parallelism":200,"max_parallelism":4096}`); err != nil {
		t.Error(err)
	}
}

func mustSpec(t *testing.T, s string) *engine.Spec {
	t.Helper()
	h, err := engine.ParseSpec([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return h
}
