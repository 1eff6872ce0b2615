package engine_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// WriteKeyColumns reads back what KeyEncoder wrote, for every type it reads: the key columns of
// rows with NULLs, inline and out-of-line strings, negative compact decimals.
func TestWriteKeyColumnsReadsEncodedKeys(t *testing.T) {
	var types []engine.Type
	for _, s := range []string{"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIMESTAMP(3)",
		"DECIMAL(10, 2)", "VARCHAR", "BYTES"} {
		typ, err := engine.ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, typ)
	}
	rows := [][]any{
		{true, int64(-3), int64(300), int64(-70000), int64(1 << 40), float32(-1.5), -0.0, int64(19000),
			enginetest.Timestamp{Millis: -5}, big.NewInt(-12345), "short", "bytes"},
		{nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
		{false, int64(127), int64(-1), int64(0), int64(-1), float32(2), 3.25, int64(-1),
			enginetest.Timestamp{Millis: 1 << 41}, big.NewInt(99999999), strings.Repeat("long string ", 3), "eight by"},
	}
	b := enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{Offset: 1})
	cols := make([]int, len(types))
	for i := range cols {
		cols[i] = i
	}
	enc := engine.NewKeyEncoder(cols, types)
	if err := enc.Encode(b); err != nil {
		t.Fatal(err)
	}
	if err := engine.KeyColumnsDecodable(types); err != nil {
		t.Fatal(err)
	}
	keys := make([][]byte, len(rows))
	for i := range rows {
		keys[i] = enc.Key(i)
	}
	vb := make([]int, len(types))
	engine.KeyVarBytes(types, keys, vb)
	out := engine.OutBatch{Alloc: engine.HeapAllocator{}}
	if err := out.Init(types, len(rows), vb); err != nil {
		t.Fatal(err)
	}
	engine.WriteKeyColumns(out.Cols, types, keys, 0)
	out.Finish()
	got := enginetest.Rows(&out)
	for i, r := range rows {
		want := enginetest.Row{Values: r}.String()
		if g := got[i].String(); g != want {
			t.Errorf("row %d: %s, want %s", i, g, want)
		}
	}
	nonCompact, _ := engine.ParseType("DECIMAL(20, 2)")
	if err := engine.KeyColumnsDecodable([]engine.Type{nonCompact}); err == nil {
		t.Error("a non-compact DECIMAL key reads back")
	}
}
