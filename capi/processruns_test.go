//go:build ferrytest

package main

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/intervaljoin"
)

// ferry_operator_process_runs: the rows of both inputs of an interval join in one call, in
// arrival order, give the changelog of one ferry_operator_process per run; bad arguments fail
// with a precise error and still consume every batch.

// collect imports and frees a call's first chunk and every chunk after it.
func (o *multiOp) collect(out *cArray, more cInt32, r result) []string {
	o.t.Helper()
	if r.code != codeOK {
		o.t.Fatalf("call failed: %v", r)
	}
	var rows []string
	for {
		if out.release != nil {
			rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(out)), o.out)
			if err != nil {
				o.t.Fatalf("arrow-go cannot import a chunk: %v", err)
			}
			rows = append(rows, recordRows(rec)...)
			rec.Release()
		}
		cFree(unsafe.Pointer(out))
		if more == 0 {
			return rows
		}
		out = newCArray()
		var e cError
		r = finish(o.t, "ferry_operator_next", int32(ferry_operator_next(o.h, out, &more, &e)), &e)
		if r.code != codeOK {
			o.t.Fatalf("next: %v", r)
		}
	}
}

// batchOf exports rows [from, to) of input (nil when empty).
func (o *multiOp) batchOf(input, from, to int) *cInput {
	if from == to {
		return nil
	}
	var rows [][]any
	for i := from; i < to; i++ {
		rows = append(rows, o.s.rows(input, i))
	}
	rec := buildRecord(o.s.schemas[input], rows, make([]int8, len(rows)))
	defer rec.Release()
	in := exportInput(rec)
	return &in
}

// runs calls ferry_operator_process with the given batches and (input, rows) pairs; every batch
// given must be consumed.
func (o *multiOp) runs(batches []*cInput, pairs []int32) (*cArray, cInt32, result) {
	o.t.Helper()
	arrs := make([]*cArray, len(batches))
	for i, b := range batches {
		if b != nil {
			arrs[i] = b.arr
		}
	}
	list := arrayList(arrs...)
	defer cFree(unsafe.Pointer(list))
	rl := runList(pairs...)
	defer cFree(unsafe.Pointer(rl))
	out := newCArray()
	more := cInt32(7)
	var e cError
	r := finish(o.t, "ferry_operator_process", int32(ferry_operator_process(o.h, cInt32(len(batches)), list, cInt32(len(pairs)/2), rl, 0, out, &more, &e)), &e)
	for _, b := range batches {
		if b != nil {
			b.consumed(o.t, "ferry_operator_process")
		}
	}
	if r.code != codeOK && (more != 0 || out.release != nil) {
		o.t.Errorf("failed call: *more = %d, output filled %v", more, out.release != nil)
	}
	return out, more, r
}

func TestProcessRunsEqualsOneCallPerRun(t *testing.T) {
	s := &multiInputFuzzSpecs[intervaljoin.Kind][0]
	runs, single := openMulti(t, s), openMulti(t, s)
	// Interleavings of growing length; row i of each input is used once, in order.
	pattern := []int32{0, 3, 1, 1, 0, 1, 1, 7, 0, 2, 1, 2, 0, 5, 1, 1}
	var next [2]int
	joined := 0
	for step := range 12 {
		pairs := pattern[:2*(1+step%8)]
		start := next
		var want []string
		for k := 0; k < len(pairs); k += 2 {
			in, n := int(pairs[k]), int(pairs[k+1])
			b := single.batchOf(in, next[in], next[in]+n)
			out := newCArray()
			more := cInt32(0)
			var e cError
			r := finish(t, "ferry_operator_process", int32(processOn(single.h, in, 2, b.arr, 0, out, &more, &e)), &e)
			b.consumed(t, "ferry_operator_process")
			want = append(want, single.collect(out, more, r)...)
			next[in] += n
		}
		batches := []*cInput{runs.batchOf(0, start[0], next[0]), runs.batchOf(1, start[1], next[1])}
		out, more, r := runs.runs(batches, pairs)
		got := runs.collect(out, more, r)
		joined += len(got)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d, runs %v: got\n%s\nwant\n%s", step, pairs, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if step%4 == 3 {
			wm := int64(step * 6)
			for _, o := range []*multiOp{runs, single} {
				if r := o.advance(wm); r.code != codeOK {
					t.Fatalf("advance: %v", r)
				}
			}
		}
	}
	if next[0] < 20 || next[1] < 20 || joined < 20 {
		t.Fatalf("too little joined: rows per input %v, %d output rows", next, joined)
	}
}

func TestProcessRunsErrors(t *testing.T) {
	s := &multiInputFuzzSpecs[intervaljoin.Kind][0]
	o := openMulti(t, s)
	two := func() []*cInput { return []*cInput{o.batchOf(0, 0, 3), o.batchOf(1, 0, 2)} }
	for _, c := range []struct {
		name    string
		batches []*cInput
		pairs   []int32
		code    int32
		msg     []string
	}{
		{"rows left over", two(), []int32{0, 3, 1, 1}, codeInval, []string{"the runs use 1 of input 1's 2 rows"}},
		{"too many rows", two(), []int32{0, 2, 1, 2, 0, 2}, codeInval, []string{"run 2: 2 rows of input 0", "only 1 of its 3 rows are left"}},
		{"input out of range", two(), []int32{0, 3, 2, 2}, codeInval, []string{"run 1: input 2 out of range"}},
		{"empty run", two(), []int32{0, 3, 1, 0, 1, 2}, codeInval, []string{"run 1: 0 rows"}},
		{"negative rows", two(), []int32{0, -1, 0, 4, 1, 2}, codeInval, []string{"run 0: -1 rows"}},
		{"runs of a missing batch", []*cInput{o.batchOf(0, 0, 3), nil}, []int32{0, 3, 1, 1}, codeInval, []string{"only 0 of its 0 rows"}},
		{"three batches for two inputs", []*cInput{o.batchOf(0, 0, 3), nil, nil}, []int32{0, 3}, codeInval, []string{"3 batches for 2 inputs"}},
		{"malformed batch", []*cInput{o.batchOf(0, 0, 3), o.batchOf(0, 0, 2)}, []int32{0, 3, 1, 2}, codeData, []string{"input 1:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o.t = t
			_, _, r := o.runs(c.batches, c.pairs)
			wantCode(t, c.name, r, c.code, c.msg...)
		})
	}
	o.t = t

	// Nothing changed: the operator still joins (every error leaves the state as it was).
	out, more, r := o.runs([]*cInput{o.batchOf(0, 0, 3), o.batchOf(1, 0, 2)}, []int32{1, 2, 0, 3})
	o.collect(out, more, r)

	// Arguments checked before anything is read.
	var e cError
	out = newCArray()
	defer cFree(unsafe.Pointer(out))
	more = 7
	r = finish(t, "ferry_operator_process", int32(ferry_operator_process(o.h, 0, nil, 0, nil, 0, out, &more, &e)), &e)
	wantCode(t, "no batches", r, codeInval, "n_batches 0")
	if more != 0 {
		t.Errorf("*more = %d after an error", more)
	}
	b := o.batchOf(0, 0, 1)
	list := arrayList(b.arr, nil)
	defer cFree(unsafe.Pointer(list))
	r = finish(t, "ferry_operator_process", int32(ferry_operator_process(o.h, 2, list, 1, nil, 0, out, &more, &e)), &e)
	b.consumed(t, "runs NULL")
	wantCode(t, "runs NULL", r, codeInval, "n_runs 1")
	b = o.batchOf(0, 0, 1)
	list2 := arrayList(b.arr, nil)
	defer cFree(unsafe.Pointer(list2))
	r = finish(t, "ferry_operator_process", int32(ferry_operator_process(0, 2, list2, 0, nil, 0, out, &more, &e)), &e)
	b.consumed(t, "stale handle")
	wantCode(t, "stale handle", r, codeInval, "handle")

	// No batch at all.
	out2, _, r := o.runs([]*cInput{nil, nil}, nil)
	cFree(unsafe.Pointer(out2))
	wantCode(t, "no batch", r, codeInval, "no batch: a call carries at least one")

	// Any keyed kind takes several inputs' rows in one call, in the order of the runs.
	f := openFanout(t, 1, 4)
	rows, r := f.processRuns([][]any{{int64(1), "a"}, {int64(2), "b"}}, [][]any{{int64(3), "c"}}, []int32{0, 1, 1, 1, 0, 1})
	wantCode(t, "fanout over runs", r, codeOK)
	if want := []string{`+I[1, "a"]`, `+I[3, "c"]`, `+I[2, "b"]`}; !slices.Equal(rows, want) {
		t.Errorf("fanout over runs: %v, want %v", rows, want)
	}
}

// FuzzProcessRuns turns fuzz bytes into batch sizes, a batch count and a run list for
// ferry_operator_process on an interval join: data[0] and data[1] are the rows of the left
// and right batch (mod 12; 0 passes NULL), data[2] picks the batch count (1, 2 or 3), then each
// byte pair is a run, (int8 % 3, int8 % 8), so inputs and row counts out of range and negative
// occur; no byte pair passes no runs, which means the batches in input order. Assertions: FERRY_OK
// exactly when the runs are valid (engine.CheckRuns, and a batch is given), FERRY_EINVAL
// otherwise, never a panic; every batch is consumed; a valid call emits what one
// ferry_operator_process per run emits.
func FuzzProcessRuns(f *testing.F) {
	for _, seed := range [][]byte{
		{3, 2, 1, 0, 2, 1, 2, 0, 1}, // valid: left 2, right 2, left 1
		{0, 0, 1},                   // no batch at all
		{5, 0, 1, 0, 5},             // valid: one input only
		{3, 2, 1, 0, 3, 1, 1},       // a row of the right input left over
		{3, 2, 1, 0, 3, 1, 3},       // more rows than the right batch has
		{3, 2, 1, 0, 0xfd, 0, 6},    // negative row count
		{3, 2, 1, 2, 3, 1, 2},       // input 2 out of range
		{3, 2, 0, 0, 3},             // valid: the batch of input 0 alone
		{3, 2, 0, 0, 3, 1, 2},       // runs of input 1 with the batch of input 0 alone
		{3, 2, 2, 0, 3, 1, 2},       // three batches for two inputs
		{11, 11, 1, 0, 7, 1, 7, 0, 4, 1, 4},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defer engine.Unpoison()
		if len(data) < 3 {
			return
		}
		s := &multiInputFuzzSpecs[intervaljoin.Kind][0]
		o, single := openMulti(t, s), openMulti(t, s)
		rows := []int{int(data[0]) % 12, int(data[1]) % 12}
		nBatches := 1 + int(data[2])%3
		var pairs []int32
		var runs []engine.Run
		for k := 3; k+1 < len(data) && len(runs) < 64; k += 2 {
			in, n := int32(int8(data[k]))%3, int32(int8(data[k+1]))%8
			pairs = append(pairs, in, n)
			runs = append(runs, engine.Run{Input: int(in), Rows: int(n)})
		}
		given := []int{rows[0], 0} // the rows of the batches the call carries
		if nBatches > 1 {
			given[1] = rows[1]
		}
		if len(runs) == 0 { // no runs: the batches in input order
			for i, n := range given {
				if n > 0 {
					runs = append(runs, engine.Run{Input: i, Rows: n})
				}
			}
		}
		valid := nBatches <= 2 && engine.CheckRuns(runs, given) == nil && given[0]+given[1] > 0
		batches := make([]*cInput, nBatches)
		for i := range min(nBatches, 2) {
			batches[i] = o.batchOf(i, 0, rows[i])
		}
		out, more, r := o.runs(batches, pairs)
		if !valid {
			wantCode(t, "invalid runs", r, codeInval)
			cFree(unsafe.Pointer(out))
			return
		}
		got := o.collect(out, more, r)
		var want []string
		var next [2]int
		for _, run := range runs {
			b := single.batchOf(run.Input, next[run.Input], next[run.Input]+run.Rows)
			sout := newCArray()
			smore := cInt32(0)
			var e cError
			sr := finish(t, "ferry_operator_process", int32(processOn(single.h, run.Input, 2, b.arr, 0, sout, &smore, &e)), &e)
			b.consumed(t, "ferry_operator_process")
			want = append(want, single.collect(sout, smore, sr)...)
			next[run.Input] += run.Rows
		}
		if !slices.Equal(got, want) {
			t.Fatalf("runs %v: got\n%s\nwant\n%s", runs, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if n := outstanding(); n != 0 {
			t.Errorf("outstanding output bytes %d after release", n)
		}
	})
}
