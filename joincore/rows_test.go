package joincore

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// TestEncodeRowsMatchesEncode: the column-at-a-time encoder writes the bytes of the row-at-a-time
// one (the form of snapshots), for every type a join row carries, NULLs, offset buffers, garbage
// under NULL slots and any selection of rows.
func TestEncodeRowsMatchesEncode(t *testing.T) {
	types := []engine.Type{
		{ID: engine.BigInt, Nullable: true}, {ID: engine.Varchar, Nullable: true}, {ID: engine.Boolean, Nullable: true},
		{ID: engine.Int, Nullable: true}, {ID: engine.TinyInt, Nullable: true}, {ID: engine.SmallInt, Nullable: true},
		{ID: engine.Double, Nullable: true}, {ID: engine.Float, Nullable: true}, {ID: engine.Date, Nullable: true},
		{ID: engine.Decimal, Precision: 20, Scale: 2, Nullable: true}, {ID: engine.Timestamp, Precision: 3, Nullable: true},
		{ID: engine.Timestamp, Precision: 6, Nullable: true}, {ID: engine.Varchar, Nullable: true}, {ID: engine.BigInt},
	}
	l := NewRowLayout(types)
	r := rand.New(rand.NewPCG(7, 7))
	value := func(c int) any {
		if types[c].Nullable && r.IntN(4) == 0 {
			return nil
		}
		switch types[c].ID {
		case engine.Varchar:
			return randString(r)
		case engine.Boolean:
			return r.IntN(2) == 0
		case engine.Float:
			return r.Float32()
		case engine.Double:
			return r.Float64()
		case engine.Decimal:
			return big.NewInt(r.Int64N(1 << 40))
		case engine.Timestamp:
			return enginetest.Timestamp{Millis: r.Int64N(1 << 40), Nanos: int32(r.IntN(1000)) * 1000 * int32(types[c].Precision/6)}
		case engine.TinyInt:
			return int64(r.IntN(256) - 128)
		case engine.SmallInt:
			return int64(r.IntN(1<<16) - 1<<15)
		case engine.Int, engine.Date:
			return int64(r.Int32())
		}
		return r.Int64()
	}
	var arena RowArena
	for round := range 50 {
		rows := make([][]any, 1+r.IntN(300))
		for i := range rows {
			rows[i] = make([]any, len(types))
			for c := range types {
				rows[i][c] = value(c)
			}
		}
		in := enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{Offset: r.IntN(9), Garbage: r})
		var sel []int32
		for i := range rows {
			if r.IntN(3) > 0 {
				sel = append(sel, int32(i))
			}
		}
		got := arena.EncodeRows(l, in, sel, [][]byte{[]byte("kept")})
		if len(got) != len(sel)+1 || string(got[0]) != "kept" {
			t.Fatalf("round %d: %d rows back for %d selected, or dst's first row changed", round, len(got), len(sel))
		}
		for k, i := range sel {
			want := l.Encode(nil, in, int(i))
			if !bytes.Equal(got[k+1], want) || cap(got[k+1]) != len(want) {
				t.Fatalf("round %d, row %d: got %x (cap %d), want %x", round, i, got[k+1], cap(got[k+1]), want)
			}
			if err := l.Check(got[k+1]); err != nil {
				t.Fatalf("round %d, row %d: %v", round, i, err)
			}
		}
	}
}

func randString(r *rand.Rand) string {
	b := make([]byte, r.IntN(40))
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}
