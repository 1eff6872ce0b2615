//go:build ferrytest

package main

import (
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/windowjoin"
)

// importRaw calls ferry_operator_import and checks that the library consumed schema and batch.
func importRaw(t *testing.T, h cHandle, sc *arrow.Schema, rows [][]any) result {
	t.Helper()
	rec := buildRecord(sc, rows, make([]int8, len(rows)))
	defer rec.Release()
	s, in := exportSchema(sc), exportInput(rec)
	var e cError
	r := finish(t, "ferry_operator_import", int32(ferry_operator_import(h, s.s, in.arr, &e)), &e)
	s.consumed(t, "ferry_operator_import")
	in.consumed(t, "ferry_operator_import")
	return r
}

// importSchema is the Arrow schema of the import rows of o's group aggregate.
func importSchema(t *testing.T, o *testOp) *arrow.Schema {
	t.Helper()
	op, err := agg.NewGroupAggregate(o.spec)
	if err != nil {
		t.Fatal(err)
	}
	types, err := op.ImportTypes()
	if err != nil {
		t.Fatal(err)
	}
	var fs []arrow.Field
	for i, ty := range types {
		fs = append(fs, arrow.Field{Name: fmt.Sprintf("i%d", i), Type: arrowType(ty), Nullable: ty.Nullable})
	}
	return arrow.NewSchema(append(fs, arrow.Field{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8}), nil)
}

// Flink's accumulators imported through the C ABI become the key's state: the next row of the
// key updates it, as it would have updated Flink's; the export writes the key back.
func TestImportThroughTheABI(t *testing.T) {
	o := openOp(t, bidSpec(true))
	sc := importSchema(t, o)
	// bidder 7: COUNT(*) 2, SUM(price) 30 over 2 values, record count 2
	if r := importRaw(t, o.h, sc, [][]any{{int64(7), int64(2), int32(30), int64(2), int64(2)}}); r.code != codeOK {
		t.Fatalf("import: %v", r)
	}
	rec := buildRecord(o.in, [][]any{{int64(7), int32(5)}}, []int8{0})
	defer rec.Release()
	got := o.process(rec, 0)
	if want := []string{"-U[7, 2, 30]", "+U[7, 3, 35]"}; !slices.Equal(got, want) {
		t.Fatalf("after the import: got %v, want %v", got, want)
	}
	wantCode(t, "importing a key with state", importRaw(t, o.h, sc, [][]any{{int64(7), int64(1), int32(1), int64(1), int64(1)}}),
		codeData, "row 0: the key holds state already")

	wrong := arrow.NewSchema(append([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int32}}, sc.Fields()[1:]...), nil)
	wantCode(t, "a schema of other types", importRaw(t, o.h, wrong, [][]any{{int32(8), int64(1), int32(1), int64(1), int64(1)}}),
		codeData, "import: malformed data: input schema 0: column 0 (import_0 BIGINT) has Arrow format")

	var e cError
	wantCode(t, "NULL batch", finish(t, "ferry_operator_import", int32(ferry_operator_import(o.h, nil, nil, &e)), &e),
		codeInval, "schema and batch must not be NULL")

	// The export: one chunk, the key's BinaryRowData bytes, the import row's fields, RowKind.
	out := newCArray()
	var more cInt32
	if r := finish(t, "ferry_operator_export", int32(ferry_operator_export(o.h, out, &more, &e)), &e); r.code != codeOK || more != 0 {
		t.Fatalf("export: %v, more %d", r, more)
	}
	if v := view(out); v.Length != 1 || v.NChildren != 6 {
		t.Fatalf("export: %d rows of %d columns, want 1 of 6", v.Length, v.NChildren)
	}
	releaseArray(out)
	cFree(unsafe.Pointer(out))

	join, r := open(t, multiInputFuzzSpecs[windowjoin.Kind][0].json, nil)
	if r.code != codeOK {
		t.Fatalf("open the window join: %v", r)
	}
	defer ferry_operator_close(join, &e)
	wantCode(t, "a kind that does not import", importRaw(t, join, sc, [][]any{{int64(7), int64(2), int32(30), int64(2), int64(2)}}),
		codeUnsupported, "does not import the state of Flink's operator")
	out = newCArray()
	defer cFree(unsafe.Pointer(out))
	wantCode(t, "a kind that does not export", finish(t, "ferry_operator_export", int32(ferry_operator_export(join, out, &more, &e)), &e),
		codeUnsupported, "does not write the state of Flink's operator")
}
