//go:build ferrytest

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/ferrystream/ferry/engine/enginetest"
)

// Chunked output through the C ABI, driven by the test kind test_fanout (every input row
// emitted copies times, chunks of chunk_rows rows): *more, ferry_operator_next, FERRY_ESTATE
// for every other call while output is pending, close at any time, several inputs.

// fanoutJSON is a test_fanout spec with two inputs of the columns (k BIGINT, s VARCHAR).
func fanoutJSON(copies, chunkRows int) string {
	in := `{"fields":[{"name":"k","type":"BIGINT"},{"name":"s","type":"VARCHAR"}]}`
	return fmt.Sprintf(`{"kind":%q,"name":"Fanout","inputs":[%s,%s],"max_parallelism":128,"chunk_rows":%d,"params":{"copies":%d}}`,
		enginetest.FanoutKind, in, in, chunkRows, copies)
}

var fanoutSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
}, nil)

// chunkOp is an open test_fanout operator.
type chunkOp struct {
	t   *testing.T
	h   cHandle
	out *arrow.Schema
}

func openFanout(t *testing.T, copies, chunkRows int) *chunkOp {
	t.Helper()
	// Both schemas of the two inputs are checked and consumed.
	cs := cString(fanoutJSON(copies, chunkRows))
	defer cFree(unsafe.Pointer(cs))
	s0, s1 := exportSchema(fanoutSchema), exportSchema(fanoutSchema)
	list := schemaList(s0.s, s1.s)
	defer cFree(unsafe.Pointer(list))
	var h cHandle
	var e cError
	r := finish(t, "ferry_operator_open", int32(ferry_operator_open(cs, nil, 2, list, &h, &e)), &e)
	s0.consumed(t, "open schema 0")
	s1.consumed(t, "open schema 1")
	if r.code != codeOK {
		t.Fatalf("open: %v", r)
	}
	o := &chunkOp{t: t, h: h}
	o.out = (&testOp{t: t, h: h}).outputSchema()
	t.Cleanup(func() {
		var e cError
		ferry_operator_close(o.h, &e)
		takeError(&e)
	})
	return o
}

// rows imports one output chunk (nil when the call left out untouched) and frees the struct.
func (o *chunkOp) rows(out *cArray) []string {
	o.t.Helper()
	if out.release == nil {
		cFree(unsafe.Pointer(out))
		return nil
	}
	rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(out)), o.out)
	cFree(unsafe.Pointer(out))
	if err != nil {
		o.t.Fatalf("arrow-go cannot import a chunk: %v", err)
	}
	defer rec.Release()
	return recordRows(rec)
}

// process sends rows to input and returns the first chunk's rows and *more.
func (o *chunkOp) process(input int, rows [][]any) ([]string, bool, result) {
	o.t.Helper()
	rec := buildRecord(fanoutSchema, rows, make([]int8, len(rows)))
	defer rec.Release()
	in := exportInput(rec)
	out := newCArray()
	more := cInt32(7)
	var e cError
	r := finish(o.t, "ferry_operator_process", int32(processOn(o.h, input, 2, in.arr, 0, out, &more, &e)), &e)
	in.consumed(o.t, "process") // consumed also when more output follows
	if r.code != codeOK && more != 0 {
		o.t.Errorf("*more = %d on an error", more)
	}
	return o.rows(out), more == 1, r
}

// processRuns sends the rows of both inputs in one call, in the order of pairs, and returns
// every output row, all chunks drained.
func (o *chunkOp) processRuns(left, right [][]any, pairs []int32) ([]string, result) {
	o.t.Helper()
	var ins []*cInput
	for _, rows := range [][][]any{left, right} {
		rec := buildRecord(fanoutSchema, rows, make([]int8, len(rows)))
		defer rec.Release()
		in := exportInput(rec)
		ins = append(ins, &in)
	}
	out, more, r := (&multiOp{t: o.t, h: o.h, out: o.out}).runs(ins, pairs)
	got := o.rows(out)
	for m := more == 1; m && r.code == codeOK; {
		var chunk []string
		chunk, m, r = o.next()
		got = append(got, chunk...)
	}
	return got, r
}

// next calls ferry_operator_next.
func (o *chunkOp) next() ([]string, bool, result) {
	o.t.Helper()
	out := newCArray()
	more := cInt32(7)
	var e cError
	r := finish(o.t, "ferry_operator_next", int32(ferry_operator_next(o.h, out, &more, &e)), &e)
	if r.code != codeOK && more != 0 {
		o.t.Errorf("*more = %d on an error", more)
	}
	return o.rows(out), more == 1, r
}

func TestChunkedOutput(t *testing.T) {
	o := openFanout(t, 3, 4)
	in := [][]any{{int64(1), "a"}, {nil, "long string value"}, {int64(3), nil}}
	got, more, r := o.process(1, in)
	wantCode(t, "process", r, codeOK)
	if !more || len(got) != 4 {
		t.Fatalf("first chunk: %d rows, more %v", len(got), more)
	}
	// While output is pending only next (and close) are valid.
	_, _, r = o.process(0, in[:1])
	wantCode(t, "process while pending", r, codeState, "output is pending", "ferry_operator_next")
	var e cError
	out := newCArray()
	var m cInt32
	wantCode(t, "advance while pending", finish(t, "ferry_operator_advance", int32(ferry_operator_advance(o.h, 0, 0, out, &m, &e)), &e), codeState, "pending")
	wantCode(t, "flush while pending", finish(t, "ferry_operator_flush", int32(ferry_operator_flush(o.h, 0, out, &m, &e)), &e), codeState, "pending")
	cFree(unsafe.Pointer(out))
	_, r = snapshotKG(t, o.h, 0)
	wantCode(t, "snapshot while pending", r, codeState, "pending")
	var st cStats
	wantCode(t, "stats while pending", finish(t, "ferry_operator_stats", int32(ferry_operator_stats(o.h, &st, &e)), &e), codeState, "pending")
	chunks := 1
	for more {
		var rows []string
		rows, more, r = o.next()
		wantCode(t, "next", r, codeOK)
		if len(rows) == 0 || len(rows) > 4 {
			t.Fatalf("chunk of %d rows", len(rows))
		}
		got = append(got, rows...)
		chunks++
	}
	want := []string{`+I[1, "a"]`, `+I[1, "a"]`, `+I[1, "a"]`, `+I[null, "long string value"]`, `+I[null, "long string value"]`,
		`+I[null, "long string value"]`, `+I[3, null]`, `+I[3, null]`, `+I[3, null]`}
	if chunks != 3 || !slices.Equal(got, want) {
		t.Fatalf("%d chunks:\n%s", chunks, strings.Join(got, "\n"))
	}
	_, _, r = o.next()
	wantCode(t, "next without pending output", r, codeState, "no output is pending")
	// The operator goes on: a batch that fits one chunk sets more to 0 at once.
	got, more, r = o.process(0, in[:1])
	wantCode(t, "process", r, codeOK)
	if more || len(got) != 3 {
		t.Fatalf("one chunk: %v, more %v", got, more)
	}
	// Bad arguments: input out of range, NULL more.
	_, _, r = o.process(2, in[:1])
	wantCode(t, "process input 2", r, codeInval, "run 0: input 2 out of range (the operator has 2 inputs)")
	_, _, r = o.process(-1, in[:1])
	wantCode(t, "process input -1", r, codeInval, "run 0: input -1 out of range")
	rec := buildRecord(fanoutSchema, in, make([]int8, len(in)))
	defer rec.Release()
	cin := exportInput(rec)
	out = newCArray()
	r = finish(t, "ferry_operator_process", int32(processOn(o.h, 0, 2, cin.arr, 0, out, nil, &e)), &e)
	cin.consumed(t, "process(more NULL)")
	wantCode(t, "process(more NULL)", r, codeInval, "more must not be NULL")
	r = finish(t, "ferry_operator_next", int32(ferry_operator_next(o.h, out, nil, &e)), &e)
	wantCode(t, "next(more NULL)", r, codeInval, "more must not be NULL")
	r = finish(t, "ferry_operator_next", int32(ferry_operator_next(o.h, nil, &m, &e)), &e)
	wantCode(t, "next(out NULL)", r, codeInval)
	if out.release != nil {
		t.Fatal("output filled by a failed call")
	}
	cFree(unsafe.Pointer(out))
	// Close with output pending drops the rest; every chunk handed out stays valid.
	got, more, _ = o.process(0, in)
	if !more {
		t.Fatal("expected pending output")
	}
	r = finish(t, "ferry_operator_close", int32(ferry_operator_close(o.h, &e)), &e)
	wantCode(t, "close while pending", r, codeOK)
	_, _, r = o.next()
	wantCode(t, "next after close", r, codeInval, "stale")
}

// TestChunkedOutputSchemas: n_schemas must be 0 or the number of inputs, and each schema is
// checked against its own input.
func TestChunkedOutputSchemas(t *testing.T) {
	cs := cString(fanoutJSON(1, 10))
	defer cFree(unsafe.Pointer(cs))
	bad := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32}, {Name: "s", Type: arrow.BinaryTypes.String},
		{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8}}, nil)
	for _, c := range []struct {
		name    string
		schemas []*arrow.Schema
		n       int32
		code    int32
		msg     string
	}{
		{"second input mismatch", []*arrow.Schema{fanoutSchema, bad}, 2, codeData, `input schema 1: column 0 (k BIGINT) has Arrow format "i", want "l"`},
		{"one schema for two inputs", []*arrow.Schema{fanoutSchema}, 1, codeInval, "1 input schemas for 2 inputs"},
		{"too many", []*arrow.Schema{fanoutSchema}, 65, codeInval, "n_schemas 65"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ins []cSchemaIn
			var ptrs []*cSchema
			for _, s := range c.schemas {
				in := exportSchema(s)
				ins = append(ins, in)
				ptrs = append(ptrs, in.s)
			}
			list := schemaList(ptrs...)
			defer cFree(unsafe.Pointer(list))
			var h cHandle
			var e cError
			r := finish(t, "ferry_operator_open", int32(ferry_operator_open(cs, nil, cInt32(c.n), list, &h, &e)), &e)
			wantCode(t, "open", r, c.code, c.msg)
			if c.n > maxSchemas {
				for _, in := range ins { // refused before any pointer was read: still the caller's
					releaseSchema(in.s)
				}
			}
			for i, in := range ins {
				in.consumed(t, fmt.Sprintf("schema %d", i))
			}
		})
	}
	// One NULL entry: that input is not checked; the other is.
	in := exportSchema(fanoutSchema)
	list := schemaList(nil, in.s)
	defer cFree(unsafe.Pointer(list))
	var h cHandle
	var e cError
	r := finish(t, "ferry_operator_open", int32(ferry_operator_open(cs, nil, 2, list, &h, &e)), &e)
	in.consumed(t, "schema 1")
	wantCode(t, "open with a NULL schema", r, codeOK)
	finish(t, "ferry_operator_close", int32(ferry_operator_close(h, &e)), &e)
}
