//go:build ferrytest

package main

// Shared test infrastructure: arrow-go as the trusted producer and consumer of the ABI's
// batches, thin wrappers over the exports that check the ABI's conventions on every call
// (error structs, input consumption), and a row-at-a-time reference model of the group
// aggregate that computes expected changelogs.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// testMem allocates the buffers of every arrow-go batch the tests build. It is C memory: the
// arrays are exported through the C Data Interface, and under GOEXPERIMENT=cgocheck2 arrow-go's
// export of Go-allocated buffers (memory.NewGoAllocator) stores unpinned Go pointers into its C
// structs and aborts ("unpinned Go pointer stored into non-Go memory"). Mallocator also counts
// its bytes, so TestMain checks every input buffer was released.
var testMem = mallocator.NewMallocator()

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if n := outstanding(); n != 0 {
			fmt.Fprintf(os.Stderr, "FAIL: ferry_output_bytes_outstanding() = %d after all tests\n", n)
			code = 1
		}
		if n := testMem.AllocatedBytes(); n != 0 {
			fmt.Fprintf(os.Stderr, "FAIL: %d bytes of input batch memory never released\n", n)
			code = 1
		}
	}
	os.Exit(code)
}

// ---- values ----

// Go representations of SQL values in test rows (nil is NULL).
type (
	dec  string // DECIMAL(p,s) literal, e.g. "-12.50"
	tsMs int64  // TIMESTAMP(p<=3): epoch millis
	ts12 struct {
		ms int64
		ns int32 // nanos within the millisecond
	}
)

// arrowType is the Arrow type a Flink type crosses the boundary as (docs/abi.md).
func arrowType(t engine.Type) arrow.DataType {
	switch t.ID {
	case engine.Boolean:
		return arrow.FixedWidthTypes.Boolean
	case engine.TinyInt:
		return arrow.PrimitiveTypes.Int8
	case engine.SmallInt:
		return arrow.PrimitiveTypes.Int16
	case engine.Int:
		return arrow.PrimitiveTypes.Int32
	case engine.BigInt:
		return arrow.PrimitiveTypes.Int64
	case engine.Float:
		return arrow.PrimitiveTypes.Float32
	case engine.Double:
		return arrow.PrimitiveTypes.Float64
	case engine.Decimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case engine.Varchar:
		return arrow.BinaryTypes.String
	case engine.Date:
		return arrow.FixedWidthTypes.Date32
	case engine.Timestamp:
		if t.Precision <= 3 {
			return &arrow.TimestampType{Unit: arrow.Millisecond}
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: 12}
	}
	panic(fmt.Sprintf("no arrow type for %v", t))
}

func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(v.(int8))
	case *array.Int16Builder:
		b.Append(v.(int16))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Decimal128Builder:
		dt := b.Type().(*arrow.Decimal128Type)
		n, err := decimal128.FromString(string(v.(dec)), dt.Precision, dt.Scale)
		if err != nil {
			panic(err)
		}
		b.Append(n)
	case *array.TimestampBuilder:
		if ms, ok := v.(int64); ok { // a BIGINT value of the restore rows in a TIMESTAMP(3) column
			b.Append(arrow.Timestamp(ms))
			break
		}
		b.Append(arrow.Timestamp(v.(tsMs)))
	case *array.Date32Builder:
		b.Append(v.(arrow.Date32))
	case *array.FixedSizeBinaryBuilder:
		ts := v.(ts12)
		var buf [12]byte
		binary.LittleEndian.PutUint64(buf[:], uint64(ts.ms))
		binary.LittleEndian.PutUint32(buf[8:], uint32(ts.ns))
		b.Append(buf[:])
	default:
		panic(fmt.Sprintf("appendValue: builder %T", b))
	}
}

// fmtValue renders a Go test value; fmtArrow renders an Arrow value the same way.
func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64:
		return fmt.Sprint(x)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return strconv.Quote(x)
	case dec:
		// Normalise through decimal128 with the scale the literal carries.
		scale := int32(0)
		if i := strings.IndexByte(string(x), '.'); i >= 0 {
			scale = int32(len(x) - i - 1)
		}
		n, err := decimal128.FromString(string(x), 38, scale)
		if err != nil {
			panic(err)
		}
		return n.ToString(scale)
	case tsMs:
		return fmt.Sprintf("ts:%d", int64(x))
	case ts12:
		return fmt.Sprintf("ts:%d.%06d", x.ms, x.ns)
	case arrow.Date32:
		return fmt.Sprintf("d:%d", int32(x))
	}
	panic(fmt.Sprintf("fmtValue %T", v))
}

func fmtArrow(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	switch a := a.(type) {
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.Int8:
		return fmt.Sprint(a.Value(i))
	case *array.Int16:
		return fmt.Sprint(a.Value(i))
	case *array.Int32:
		return fmt.Sprint(a.Value(i))
	case *array.Int64:
		return fmt.Sprint(a.Value(i))
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.String:
		return strconv.Quote(a.Value(i))
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Timestamp:
		return fmt.Sprintf("ts:%d", int64(a.Value(i)))
	case *array.Date32:
		return fmt.Sprintf("d:%d", int32(a.Value(i)))
	case *array.FixedSizeBinary:
		v := a.Value(i)
		return fmt.Sprintf("ts:%d.%06d", int64(binary.LittleEndian.Uint64(v)), int32(binary.LittleEndian.Uint32(v[8:])))
	}
	panic(fmt.Sprintf("fmtArrow %T", a))
}

var kindNames = [...]string{"+I", "-U", "+U", "-D"}

func fmtRow(kind int8, vals []string) string {
	k := fmt.Sprintf("kind(%d)", kind)
	if kind >= 0 && int(kind) < len(kindNames) {
		k = kindNames[kind]
	}
	return k + "[" + strings.Join(vals, ", ") + "]"
}

// recordRows renders an output record (columns, then the RowKind column) as changelog rows.
func recordRows(rec arrow.RecordBatch) []string {
	n := int(rec.NumCols())
	kinds := rec.Column(n - 1).(*array.Int8)
	rows := make([]string, rec.NumRows())
	for i := range rows {
		vals := make([]string, n-1)
		for c := 0; c < n-1; c++ {
			vals[c] = fmtArrow(rec.Column(c), i)
		}
		rows[i] = fmtRow(kinds.Value(i), vals)
	}
	return rows
}

// ---- specs ----

// spec is a group-aggregate test spec in a flat shape; json renders it as the spec JSON of
// ferry_operator_open (header, params, test hooks).
type spec struct {
	flatSpec
}

// flatSpec holds the fields of a group-aggregate spec side by side.
type flatSpec struct {
	Kind                 string
	Name                 string
	Input                []engine.FieldSpec
	Keys                 []int
	Aggs                 []agg.AggCall
	NeedRetraction       bool
	GenerateUpdateBefore bool
	StateTTLMs           int64
	MiniBatch            bool
	MaxParallelism       int
	KeyGroupStart        *int
	KeyGroupEnd          *int
	Test                 *testHook // test builds only
	// Params, when set, are the spec's params instead of the group aggregate's above (another
	// kind's).
	Params any
}

// testHook is the spec's "test" object: the call that panics.
type testHook struct {
	Panic string `json:"panic"`
}

func (s spec) json() string {
	h := engine.Spec{Kind: s.Kind, Name: s.Name, MaxParallelism: s.MaxParallelism, KeyGroupStart: s.KeyGroupStart,
		KeyGroupEnd: s.KeyGroupEnd, Inputs: []engine.Input{{Fields: s.Input, Keys: s.Keys}}}
	if h.Inputs[0].Fields == nil {
		h.Inputs[0].Fields = []engine.FieldSpec{}
	}
	h.Params = mustJSON(&agg.Params{Aggs: s.Aggs, NeedRetraction: s.NeedRetraction, GenerateUpdateBefore: s.GenerateUpdateBefore,
		StateTTLMs: s.StateTTLMs, MiniBatch: s.MiniBatch})
	if s.Params != nil {
		h.Params = mustJSON(s.Params)
	}
	if s.Test != nil {
		h.Test = mustJSON(s.Test)
	}
	return string(mustJSON(&h))
}

// testGate holds calls of operators of kind test_gate inside the operator.
var testGate = enginetest.NewGate()

func init() { engine.RegisterKeyed("test_gate", testGate.Open) }

// fingerprintOf is the state fingerprint of an operator of s, as its snapshot chunks carry it.
func fingerprintOf(t testing.TB, s spec) uint64 {
	t.Helper()
	op, err := enginetest.Open(s.header(t))
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	return op.State().Fingerprint()
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// parsed validates s, a group-aggregate spec, as the library does (tests only build valid
// specs through it).
func (s spec) parsed(t testing.TB) *agg.Spec {
	p, err := agg.ParseSpec(s.header(t))
	if err != nil {
		t.Fatalf("test spec invalid: %v", err)
	}
	return p
}

// header validates the header of s, a spec of any kind.
func (s spec) header(t testing.TB) *engine.Spec {
	h, err := engine.ParseSpec([]byte(s.json()))
	if err != nil {
		t.Fatalf("test spec invalid: %v", err)
	}
	return h
}

func fields(nameTypes ...string) []engine.FieldSpec {
	var fs []engine.FieldSpec
	for i := 0; i+1 < len(nameTypes); i += 2 {
		fs = append(fs, engine.FieldSpec{Name: nameTypes[i], Type: nameTypes[i+1]})
	}
	return fs
}

func notNull(fs []engine.FieldSpec, idx ...int) []engine.FieldSpec {
	f := false
	for _, i := range idx {
		fs[i].Nullable = &f
	}
	return fs
}

// inputSchema is the Arrow schema of a spec's input batches: its columns and the RowKind.
func inputSchema(p *agg.Spec) *arrow.Schema {
	var fs []arrow.Field
	for i, f := range p.Input {
		fs = append(fs, arrow.Field{Name: f.Name, Type: arrowType(p.InputTypes[i]), Nullable: p.InputTypes[i].Nullable})
	}
	fs = append(fs, arrow.Field{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8})
	return arrow.NewSchema(fs, nil)
}

// buildRecord builds one input record from rows of Go values and RowKind bytes.
func buildRecord(sc *arrow.Schema, rows [][]any, kinds []int8) arrow.RecordBatch {
	b := array.NewRecordBuilder(testMem, sc)
	defer b.Release()
	n := len(sc.Fields()) - 1
	for i, r := range rows {
		if len(r) != n {
			panic(fmt.Sprintf("row %d has %d values, want %d", i, len(r), n))
		}
		for c, v := range r {
			appendValue(b.Field(c), v)
		}
		b.Field(n).(*array.Int8Builder).Append(kinds[i])
	}
	return b.NewRecordBatch()
}

// ---- calling the exports ----

// result is the outcome of one export call: its status and the message of its FerryError.
type result struct {
	code int32
	msg  string
}

func (r result) String() string { return fmt.Sprintf("code %d (%s)", r.code, r.msg) }

// finish checks the error-struct convention of a call that returned code and converts it: on
// FERRY_OK the error is untouched, otherwise it holds the same code and a "fn: detail" message
// (FERRY_EQUERY: Flink's message alone); release resets it.
func finish(t testing.TB, fn string, code int32, e *cError) result {
	t.Helper()
	if code == codeOK {
		if !errorReleased(e) {
			t.Errorf("%s returned FERRY_OK but filled the error struct", fn)
		}
		return result{}
	}
	got, msg := takeError(e)
	if got != code {
		t.Errorf("%s returned %d but err.code = %d (%q)", fn, code, got, msg)
	}
	if code != codeQuery && !strings.HasPrefix(msg, fn+": ") {
		t.Errorf("%s: message %q does not start with %q", fn, msg, fn+": ")
	}
	if !errorReleased(e) {
		t.Errorf("%s: FerryError not reset by its release callback", fn)
	}
	return result{code, msg}
}

func wantCode(t testing.TB, what string, r result, code int32, contains ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: got %v, want code %d", what, r, code)
	}
	for _, c := range contains {
		if !strings.Contains(r.msg, c) {
			t.Errorf("%s: message %q does not mention %q", what, r.msg, c)
		}
	}
}

// cInput is an input batch exported by arrow-go into C memory, its release callback wrapped
// to count calls.
type cInput struct {
	arr *cArray
	w   *cWrap
}

func exportInput(rec arrow.RecordBatch) cInput {
	a := newCArray()
	cdata.ExportArrowRecordBatch(rec, (*cdata.CArrowArray)(unsafe.Pointer(a)), nil)
	w := (*cWrap)(cAlloc(int(unsafe.Sizeof(cWrap{}))))
	wrapArray(a, w)
	return cInput{a, w}
}

// consumed checks the input was released exactly once, then frees the structs.
func (in cInput) consumed(t testing.TB, what string) {
	t.Helper()
	if n := wrapReleases(in.w); n != 1 {
		t.Errorf("%s: input released %d times, want exactly once", what, n)
	}
	if view(in.arr).Release != nil {
		t.Errorf("%s: input release callback still set after the call", what)
	}
	if view(in.arr).Release != nil {
		releaseArray(in.arr) // keep the test's own memory accounting straight
	}
	cFree(unsafe.Pointer(in.arr))
	cFree(unsafe.Pointer(in.w))
}

// cSchemaIn is a schema exported by arrow-go, its release wrapped to count calls.
type cSchemaIn struct {
	s *cSchema
	w *cWrap
}

func exportSchema(sc *arrow.Schema) cSchemaIn {
	s := newCSchema()
	cdata.ExportArrowSchema(sc, (*cdata.CArrowSchema)(unsafe.Pointer(s)))
	w := (*cWrap)(cAlloc(int(unsafe.Sizeof(cWrap{}))))
	wrapSchema(s, w)
	return cSchemaIn{s, w}
}

func (in cSchemaIn) consumed(t testing.TB, what string) {
	t.Helper()
	if n := wrapReleases(in.w); n != 1 {
		t.Errorf("%s: input schema released %d times, want exactly once", what, n)
	}
	if in.s.release != nil {
		t.Errorf("%s: schema release callback still set", what)
		releaseSchema(in.s)
	}
	cFree(unsafe.Pointer(in.s))
	cFree(unsafe.Pointer(in.w))
}

// openCall calls ferry_operator_open with at most one input schema (nil: none).
func openCall(spec *cChar, schema *cSchema, out *cHandle, e *cError) cInt32 {
	if schema == nil {
		return ferry_operator_open(spec, nil, 0, nil, out, e)
	}
	list := schemaList(schema)
	defer cFree(unsafe.Pointer(list))
	return ferry_operator_open(spec, nil, 1, list, out, e)
}

// processCall, advanceCall and flushCall make the call on input 0 and drop *more (the group
// aggregate always emits one chunk; chunked output has its own tests).
func processCall(h cHandle, in *cArray, now cInt64, out *cArray, e *cError) cInt32 {
	var more cInt32
	return processOn(h, 0, 1, in, now, out, &more, e)
}

func advanceCall(h cHandle, wm, now cInt64, out *cArray, e *cError) cInt32 {
	var more cInt32
	return ferry_operator_advance(h, wm, now, out, &more, e)
}

func flushCall(h cHandle, now cInt64, out *cArray, e *cError) cInt32 {
	var more cInt32
	return ferry_operator_flush(h, now, out, &more, e)
}

// open calls ferry_operator_open with an optional schema of its one input (consumed-checked).
func open(t testing.TB, specJSON string, schema *arrow.Schema) (cHandle, result) {
	t.Helper()
	cs := cString(specJSON)
	defer cFree(unsafe.Pointer(cs))
	var h cHandle
	var e cError
	var sc *cSchemaIn
	var n cInt32
	var list *cSchemaPtr
	if schema != nil {
		s := exportSchema(schema)
		sc, n, list = &s, 1, schemaList(s.s)
		defer cFree(unsafe.Pointer(list))
	}
	r := finish(t, "ferry_operator_open", int32(ferry_operator_open(cs, nil, n, list, &h, &e)), &e)
	if sc != nil {
		sc.consumed(t, "ferry_operator_open")
	}
	if r.code == codeOK && h == 0 {
		t.Errorf("ferry_operator_open: FERRY_OK with handle 0")
	}
	return h, r
}

// testOp is an open operator with its spec, input schema and (imported) output schema.
type testOp struct {
	t      testing.TB
	h      cHandle
	spec   *agg.Spec
	in     *arrow.Schema
	out    *arrow.Schema
	closed bool
}

// openOp opens s (passing its input schema) and imports its output schema; the operator is
// closed at the end of the test.
func openOp(t testing.TB, s spec) *testOp {
	t.Helper()
	var p *agg.Spec
	if s.Kind == agg.Kind {
		p = s.parsed(t)
	} else { // another kind: its input, for the schema (the library validates the rest at open)
		h := s.header(t)
		p = &agg.Spec{Spec: h, Keys: h.Inputs[0].Keys, Input: h.Inputs[0].Fields, InputTypes: h.Inputs[0].Types}
	}
	in := inputSchema(p)
	h, r := open(t, s.json(), in)
	if r.code != codeOK {
		t.Fatalf("open %s: %v", s.json(), r)
	}
	o := &testOp{t: t, h: h, spec: p, in: in}
	o.out = o.outputSchema()
	t.Cleanup(func() {
		if !o.closed {
			o.close()
		}
	})
	return o
}

func (o *testOp) outputSchema() *arrow.Schema {
	t := o.t
	t.Helper()
	s := newCSchema()
	defer cFree(unsafe.Pointer(s))
	var e cError
	if r := finish(t, "ferry_operator_output_schema", int32(ferry_operator_output_schema(o.h, s, &e)), &e); r.code != codeOK {
		t.Fatalf("output schema: %v", r)
	}
	sc, err := cdata.ImportCArrowSchema((*cdata.CArrowSchema)(unsafe.Pointer(s)))
	if err != nil {
		t.Fatalf("arrow-go cannot import the output schema: %v", err)
	}
	if s.release != nil {
		t.Fatalf("ImportCArrowSchema did not release the schema")
	}
	return sc
}

func (o *testOp) close() {
	o.t.Helper()
	var e cError
	if r := finish(o.t, "ferry_operator_close", int32(ferry_operator_close(o.h, &e)), &e); r.code != codeOK {
		o.t.Errorf("close: %v", r)
	}
	o.closed = true
}

// processRaw runs ferry_operator_process on an exported input of input 0, checks the input was
// consumed and that the group aggregate's output is one chunk, and returns the raw output struct
// (nil when the call produced no rows or failed).
func processRaw(t testing.TB, h cHandle, in cInput, now int64) (*cArray, result) {
	t.Helper()
	out := newCArray()
	var e cError
	more := cInt32(7)
	r := finish(t, "ferry_operator_process", int32(processOn(h, 0, 1, in.arr, cInt64(now), out, &more, &e)), &e)
	in.consumed(t, "ferry_operator_process")
	if more != 0 {
		t.Errorf("ferry_operator_process: *more = %d, want 0 (one chunk per call, 0 on errors)", more)
	}
	if r.code != codeOK || out.release == nil {
		if v := view(out); *v != (engine.CArray{}) {
			t.Errorf("ferry_operator_process: output touched without rows (code %d): %+v", r.code, *v)
		}
		cFree(unsafe.Pointer(out))
		return nil, r
	}
	return out, r
}

// importOutput moves a Ferry output batch into an arrow-go record (validated against the output
// schema) and frees the struct; releasing the record releases Ferry's memory.
func (o *testOp) importOutput(out *cArray) arrow.RecordBatch {
	t := o.t
	t.Helper()
	v := view(out)
	if v.Length <= 0 || v.NChildren != int64(len(o.out.Fields())) || v.NBuffers != 1 {
		t.Fatalf("malformed output header %+v", *v)
	}
	rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(out)), o.out)
	cFree(unsafe.Pointer(out))
	if err != nil {
		t.Fatalf("arrow-go cannot import the output batch: %v", err)
	}
	return rec
}

// process sends rec through the ABI and returns the changelog rows it produced.
func (o *testOp) process(rec arrow.RecordBatch, now int64) []string {
	o.t.Helper()
	out, r := processRaw(o.t, o.h, exportInput(rec), now)
	if r.code != codeOK {
		o.t.Fatalf("process: %v", r)
	}
	if out == nil {
		return nil
	}
	res := o.importOutput(out)
	defer res.Release()
	return recordRows(res)
}

// tryProcess is process for calls that may fail.
func (o *testOp) tryProcess(rec arrow.RecordBatch) ([]string, result) {
	o.t.Helper()
	out, r := processRaw(o.t, o.h, exportInput(rec), 0)
	if out == nil {
		return nil, r
	}
	res := o.importOutput(out)
	defer res.Release()
	return recordRows(res), r
}

// snapshotKG returns the blob of one key group (nil when empty), copied to Go memory, and checks
// that releasing the blob frees exactly its bytes from ferry_output_bytes_outstanding (which
// holds while no other operator changes the count: see snapshotKGShared).
func snapshotKG(t testing.TB, h cHandle, kg int) ([]byte, result) {
	t.Helper()
	return takeBlob(t, h, kg, true)
}

// snapshotKGShared is snapshotKG while other operators run: their output moves the process-wide
// outstanding count, so the release's share of it is not checked.
func snapshotKGShared(t testing.TB, h cHandle, kg int) ([]byte, result) {
	t.Helper()
	return takeBlob(t, h, kg, false)
}

func takeBlob(t testing.TB, h cHandle, kg int, exact bool) ([]byte, result) {
	t.Helper()
	var b cBlob
	var e cError
	r := finish(t, "ferry_operator_snapshot", int32(ferry_operator_snapshot(h, cInt32(kg), &b, &e)), &e)
	if r.code != codeOK || b.release == nil {
		if b.data != nil || b.length != 0 || b.release != nil {
			t.Errorf("snapshot kg %d: blob set without content (code %d)", kg, r.code)
		}
		return nil, r
	}
	data := blobBytes(&b)
	before := outstanding()
	releaseBlob(&b)
	if after := outstanding(); exact && before-after != int64(len(data)) {
		t.Errorf("releasing a %d-byte blob freed %d outstanding bytes", len(data), before-after)
	}
	if b.data != nil || b.length != 0 || b.release != nil {
		t.Errorf("blob not reset by its release callback")
	}
	return data, r
}

// restoreKG restores a blob from C memory, as a host would pass it.
func restoreKG(t testing.TB, h cHandle, kg int, blob []byte) result {
	t.Helper()
	var p *cUint8
	if len(blob) > 0 {
		c := cAlloc(len(blob))
		defer cFree(c)
		copy(unsafe.Slice((*byte)(c), len(blob)), blob)
		p = (*cUint8)(c)
	}
	var e cError
	return finish(t, "ferry_operator_restore", int32(ferry_operator_restore(h, cInt32(kg), p, cInt64(len(blob)), &e)), &e)
}

// ---- reference model ----

// model is a row-at-a-time model of Flink's GroupAggFunction for the aggregates and argument
// types the tests use (COUNT, SUM, AVG, MIN, MAX over BIGINT, INT, DOUBLE), for valid
// changelogs (every retraction retracts a row accumulated before).
type model struct {
	spec   *agg.Spec
	groups map[string]*mgroup
}

type mgroup struct {
	records int64
	accs    []macc
}

type macc interface {
	add(v any)
	retract(v any)
	value() any
}

func newModel(p *agg.Spec) *model { return &model{spec: p, groups: map[string]*mgroup{}} }

func (m *model) newGroup() *mgroup {
	g := &mgroup{}
	for _, a := range m.spec.Aggs {
		col := -1
		if len(a.Args) > 0 {
			col = a.Args[0]
		}
		var acc macc
		switch strings.ToUpper(a.Func) {
		case "COUNT":
			acc = &mcount{col: col}
		case "SUM":
			acc = &msum{retracting: a.Retract}
		case "AVG":
			acc = &mavg{}
		case "MIN", "MAX":
			if a.Retract {
				acc = &mminmaxRetract{max: strings.EqualFold(a.Func, "MAX"), counts: map[any]int64{}}
			} else {
				acc = &mminmax{max: strings.EqualFold(a.Func, "MAX")}
			}
		default:
			panic(a.Func)
		}
		g.accs = append(g.accs, acc)
	}
	return g
}

// apply feeds one input row and returns the changelog rows Flink emits for it.
func (m *model) apply(kind int8, row []any) []string {
	var key []string
	for _, k := range m.spec.Keys {
		key = append(key, fmtValue(row[k]))
	}
	ks := strings.Join(key, "\x00")
	acc := kind == 0 || kind == 2
	g := m.groups[ks]
	first := false
	if g == nil {
		if !acc {
			return nil // retraction of a key without state: dropped
		}
		g = m.newGroup()
		m.groups[ks] = g
		first = true
	}
	prev := g.values()
	for i, a := range m.spec.Aggs {
		var v any = int64(1) // COUNT(*) counts every row
		if len(a.Args) > 0 {
			v = row[a.Args[0]]
		}
		if acc {
			g.accs[i].add(v)
		} else {
			g.accs[i].retract(v)
		}
	}
	next := g.values()
	out := func(k int8, vals []any) string {
		s := slices.Clone(key)
		for _, v := range vals {
			s = append(s, fmtValue(v))
		}
		return fmtRow(k, s)
	}
	if m.spec.NeedRetraction {
		if acc {
			g.records++
		} else {
			g.records--
		}
		if g.records == 0 {
			delete(m.groups, ks)
			if first {
				return nil
			}
			return []string{out(3, prev)}
		}
	}
	if first {
		return []string{out(0, next)}
	}
	changed := false
	for i := range prev {
		if prev[i] != next[i] {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if m.spec.GenerateUpdateBefore {
		return []string{out(1, prev), out(2, next)}
	}
	return []string{out(2, next)}
}

func (g *mgroup) values() []any {
	vs := make([]any, len(g.accs))
	for i, a := range g.accs {
		vs[i] = a.value()
	}
	return vs
}

type mcount struct {
	col int
	n   int64
}

func (a *mcount) add(v any) {
	if a.col < 0 || v != nil {
		a.n++
	}
}
func (a *mcount) retract(v any) {
	if a.col < 0 || v != nil {
		a.n--
	}
}
func (a *mcount) value() any { return a.n }

func plus(a, b any, sign int) any {
	switch x := a.(type) {
	case int64:
		if sign < 0 {
			return x - b.(int64)
		}
		return x + b.(int64)
	case int32:
		if sign < 0 {
			return x - b.(int32)
		}
		return x + b.(int32)
	case float64:
		if sign < 0 {
			return x - b.(float64)
		}
		return x + b.(float64)
	}
	panic(fmt.Sprintf("plus %T", a))
}

func zeroOf(v any) any {
	switch v.(type) {
	case int64:
		return int64(0)
	case int32:
		return int32(0)
	case float64:
		return float64(0)
	}
	panic(fmt.Sprintf("zeroOf %T", v))
}

type msum struct {
	retracting bool
	sum        any
	has        bool
	cnt        int64
}

func (a *msum) add(v any) {
	if v == nil {
		return
	}
	if a.has {
		a.sum = plus(a.sum, v, 1)
	} else {
		a.sum, a.has = v, true
	}
	a.cnt++
}

func (a *msum) retract(v any) {
	if v == nil {
		return
	}
	if a.has {
		a.sum = plus(a.sum, v, -1)
	} else {
		a.sum, a.has = plus(zeroOf(v), v, -1), true
	}
	a.cnt--
}

func (a *msum) value() any {
	if a.retracting {
		if a.cnt == 0 {
			return nil
		}
		return a.sum
	}
	if !a.has {
		return nil
	}
	return a.sum
}

// mavg is AVG: a BIGINT sum for integer arguments, DOUBLE for DOUBLE; Java long division.
type mavg struct {
	isum  int64
	fsum  float64
	float bool
	int32 bool
	cnt   int64
}

func (a *mavg) fold(v any, sign int64) {
	switch x := v.(type) {
	case nil:
		return
	case int64:
		a.isum += sign * x
	case int32:
		a.isum += sign * int64(x)
		a.int32 = true
	case float64:
		a.fsum += float64(sign) * x
		a.float = true
	}
	a.cnt += sign
}

func (a *mavg) add(v any)     { a.fold(v, 1) }
func (a *mavg) retract(v any) { a.fold(v, -1) }
func (a *mavg) value() any {
	switch {
	case a.cnt == 0:
		return nil
	case a.float:
		return a.fsum / float64(a.cnt)
	case a.int32:
		return int32(a.isum / a.cnt)
	}
	return a.isum / a.cnt
}

func less(a, b any) bool {
	switch x := a.(type) {
	case int64:
		return x < b.(int64)
	case int32:
		return x < b.(int32)
	case float64:
		return x < b.(float64)
	}
	panic(fmt.Sprintf("less %T", a))
}

type mminmax struct {
	max bool
	val any
}

func (a *mminmax) add(v any) {
	if v == nil {
		return
	}
	if a.val == nil || (a.max && less(a.val, v)) || (!a.max && less(v, a.val)) {
		a.val = v
	}
}
func (a *mminmax) retract(any) {}
func (a *mminmax) value() any  { return a.val }

type mminmaxRetract struct {
	max    bool
	counts map[any]int64
}

func (a *mminmaxRetract) add(v any) {
	if v != nil {
		a.counts[v]++
	}
}
func (a *mminmaxRetract) retract(v any) {
	if v == nil {
		return
	}
	if a.counts[v]--; a.counts[v] == 0 {
		delete(a.counts, v)
	}
}
func (a *mminmaxRetract) value() any {
	var best any
	for v, c := range a.counts {
		if c <= 0 {
			panic("model: retraction of a value never accumulated")
		}
		if best == nil || (a.max && less(best, v)) || (!a.max && less(v, best)) {
			best = v
		}
	}
	return best
}

// expected runs rows through a fresh model.
func expected(p *agg.Spec, rows [][]any, kinds []int8) []string {
	m := newModel(p)
	var out []string
	for i, r := range rows {
		out = append(out, m.apply(kinds[i], r)...)
	}
	return out
}

// ---- random workloads ----

// genValue draws a value of type t; key values come from a small pool so groups repeat.
func genValue(r *rand.Rand, t engine.Type, key bool, pool int) any {
	if t.Nullable && r.IntN(9) == 0 {
		return nil
	}
	p := r.IntN(pool)
	switch t.ID {
	case engine.BigInt:
		if key {
			return int64(p*7919 - pool*3000)
		}
		switch r.IntN(20) {
		case 0:
			return int64(math.MaxInt64 - p)
		case 1:
			return int64(math.MinInt64 + p)
		}
		return int64(r.IntN(2001) - 1000)
	case engine.Int:
		if !key && r.IntN(20) == 0 {
			return int32(math.MaxInt32 - p) // SUM wraps like Java's int
		}
		return int32(r.IntN(2001) - 1000)
	case engine.Double:
		return float64(r.IntN(4001)-2000) * 0.25 // exact binary fractions
	case engine.Varchar:
		words := []string{"", "a", "bidder", "abcdefg", "abcdefgh", "日本語", "é", "😀 emoji", strings.Repeat("long", 9)}
		return words[p%len(words)] + strconv.Itoa(p/len(words))
	case engine.Decimal:
		units := []string{"0.00", "1.00", "-1.00", "12.34", "-0.05", "99999999999999999999999999999999999.99", "-99999999999999999999999999999999999.99", "12345678901234567890.12"}
		if p < len(units) {
			return dec(units[p])
		}
		return dec(fmt.Sprintf("%d.%02d", p*1000003-pool*400000, p%100))
	case engine.Timestamp:
		ms := int64(p)*86_400_123 - 5_000_000_000_000
		if p%7 == 0 {
			ms = 253402300799999 // 9999-12-31 23:59:59.999
		}
		if t.Precision <= 3 {
			return tsMs(ms)
		}
		return ts12{ms, int32(p * 1237 % 1_000_000)}
	}
	panic(fmt.Sprintf("genValue %v", t))
}

// workload generates a valid changelog for p: inserts, -U/+U pairs and deletes of rows
// inserted before, and (rarely) retractions of keys that never held state.
func workload(r *rand.Rand, p *agg.Spec, n, keyPool int) ([][]any, []int8) {
	isKey := map[int]bool{}
	for _, k := range p.Keys {
		isKey[k] = true
	}
	newRow := func(pool int) []any {
		row := make([]any, len(p.InputTypes))
		for c, t := range p.InputTypes {
			row[c] = genValue(r, t, isKey[c], pool)
		}
		return row
	}
	keyOf := func(row []any) string {
		var s []string
		for _, k := range p.Keys {
			s = append(s, fmtValue(row[k]))
		}
		return strings.Join(s, "\x00")
	}
	live := map[string][][]any{}
	var liveKeys []string
	var rows [][]any
	var kinds []int8
	emit := func(k int8, row []any) {
		rows = append(rows, row)
		kinds = append(kinds, k)
	}
	pickLive := func() (string, int) {
		for {
			k := liveKeys[r.IntN(len(liveKeys))]
			if len(live[k]) > 0 {
				return k, r.IntN(len(live[k]))
			}
		}
	}
	count := func() int {
		c := 0
		for _, rs := range live {
			c += len(rs)
		}
		return c
	}
	for len(rows) < n {
		x := r.IntN(100)
		switch {
		case !p.NeedRetraction || x < 55 || count() == 0:
			row := newRow(keyPool)
			k := keyOf(row)
			if _, ok := live[k]; !ok {
				liveKeys = append(liveKeys, k)
			}
			live[k] = append(live[k], row)
			emit(0, row)
		case x < 80: // update: -U old, +U new with the same key
			k, i := pickLive()
			old := live[k][i]
			row := newRow(keyPool)
			for _, c := range p.Keys {
				row[c] = old[c]
			}
			live[k][i] = row
			emit(1, old)
			emit(2, row)
		case x < 96: // delete
			k, i := pickLive()
			old := live[k][i]
			live[k] = slices.Delete(live[k], i, i+1)
			emit(3, old)
		default: // retraction of a key that never held state (dropped)
			if len(p.Keys) == 0 {
				continue // a global aggregate always has state once a row arrived
			}
			row := newRow(keyPool)
			c := p.Keys[0] // a first key value no insert uses makes the whole key new
			switch p.InputTypes[c].ID {
			case engine.BigInt:
				row[c] = int64(1)<<50 + int64(r.IntN(1000))
			case engine.Varchar:
				row[c] = "ghost-" + strconv.Itoa(r.IntN(1000))
			case engine.Decimal:
				row[c] = dec(fmt.Sprintf("77777777777777777.%02d", r.IntN(100)))
			case engine.Timestamp:
				if p.InputTypes[c].Precision <= 3 {
					row[c] = tsMs(-1 - int64(r.IntN(1000)))
				} else {
					row[c] = ts12{-1, int32(r.IntN(1000))}
				}
			default:
				continue // no ghost value for this key type
			}
			emit(int8(1+2*r.IntN(2)), row)
		}
	}
	return rows, kinds
}
