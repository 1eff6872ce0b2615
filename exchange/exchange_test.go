package exchange_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/exchange"
)

// keyShapes are partial rows' key types: each list is followed by a BIGINT NOT NULL row id.
var keyShapes = [][]string{
	{"BIGINT"},
	{"INT NOT NULL"},
	{"VARCHAR"},
	{"DECIMAL(10, 2)"},
	{"DECIMAL(30, 5)"},
	{"TIMESTAMP(3)"},
	{"TIMESTAMP(9)"},
	{"VARCHAR", "BIGINT", "DECIMAL(20, 2)"},
	{"BOOLEAN", "DOUBLE", "DATE", "SMALLINT", "TINYINT", "FLOAT", "BYTES", "VARCHAR NOT NULL"},
}

var strs = []string{"", "a", "abcdefg", "abcdefgh", "ä", "日本語テキスト", "🙂🙂", "a longer string of more than eight bytes"}

func randomValue(t engine.Type, r *rand.Rand) any {
	if t.Nullable && r.IntN(6) == 0 {
		return nil
	}
	switch t.ID {
	case engine.Boolean:
		return r.IntN(2) == 0
	case engine.TinyInt:
		return int64(int8(r.Uint32()))
	case engine.SmallInt:
		return int64(int16(r.Uint32()))
	case engine.Int, engine.Date:
		return int64(int32(r.Uint32() % 50))
	case engine.BigInt:
		return r.Int64N(1000) - 500
	case engine.Float:
		return float32(r.IntN(100)) / 4
	case engine.Double:
		return float64(r.IntN(100)) / 8
	case engine.Decimal:
		v := big.NewInt(r.Int64N(1 << 40))
		if t.Precision > 18 {
			v.Mul(v, big.NewInt(r.Int64N(1<<40)))
		}
		if r.IntN(2) == 0 {
			v.Neg(v)
		}
		return v
	case engine.Varchar, engine.Binary:
		return strs[r.IntN(len(strs))]
	case engine.Timestamp:
		return enginetest.Timestamp{Millis: r.Int64N(1 << 42), Nanos: int32(r.IntN(1000000))}
	}
	panic(t)
}

// randomRows returns the types of shape plus the row id column, and n random rows (row i has id i).
func randomRows(t testing.TB, shape []string, n int, r *rand.Rand) ([]engine.Type, *engine.Batch) {
	var types []engine.Type
	for _, s := range shape {
		typ, err := engine.ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, typ)
	}
	types = append(types, engine.Type{ID: engine.BigInt})
	rows := make([][]any, n)
	for i := range rows {
		for _, typ := range types[:len(shape)] {
			rows[i] = append(rows[i], randomValue(typ, r))
		}
		rows[i] = append(rows[i], int64(i))
	}
	return types, enginetest.Batch(types, rows, make([]engine.RowKind, n), enginetest.Options{Offset: r.IntN(3), Garbage: r})
}

// keyGroups are the key groups of the key columns keys of b: Flink's assignToKeyGroup over the
// BinaryRowData hashCode of the key fields (engine.KeyEncoder writes Flink's BinaryRowData,
// TestKeyEncodingMatchesFlink).
func keyGroups(t testing.TB, b *engine.Batch, types []engine.Type, keys []int, maxP int) []int32 {
	enc := engine.NewKeyEncoder(keys, types)
	if err := enc.Encode(b); err != nil {
		t.Fatal(err)
	}
	kgs := make([]int32, b.Len)
	for i := range kgs {
		if h := engine.HashRow(enc.Key(i)); h != enc.Hash(i) {
			t.Fatalf("row %d: hash %d, HashRow %d", i, enc.Hash(i), h)
		}
		kgs[i] = int32(engine.KeyGroup(engine.HashRow(enc.Key(i)), maxP))
	}
	return kgs
}

// cell is row i of c as bytes: nil for NULL, else the value's bytes (a bit for BOOLEAN).
func cell(c *engine.Column, i int) []byte {
	switch {
	case c.IsNull(i):
		return nil
	case c.Type.ID == engine.Boolean:
		if c.Bool(i) {
			return []byte{1}
		}
		return []byte{0}
	case c.Type.Variable():
		return append([]byte{'v'}, c.Bytes(i)...)
	}
	return c.Fixed(i)
}

// encodeAll plans and writes every frame of b into its own aligned buffer.
func encodeAll(t testing.TB, enc *exchange.Encoder, b *engine.Batch, kgs []int32) [][]byte {
	n, total := enc.Plan(b, kgs)
	var frames [][]byte
	sum := 0
	for f := range n {
		buf := make([]byte, enc.Size(f))
		enc.Write(f, b, buf)
		if len(buf)%8 != 0 {
			t.Fatalf("frame %d: %d bytes, not a multiple of 8", f, len(buf))
		}
		frames = append(frames, buf)
		sum += len(buf)
	}
	if sum != total {
		t.Fatalf("frames hold %d bytes, Plan said %d", sum, total)
	}
	return frames
}

// checkFrames decodes frames of b's rows (keys: key columns; the last column is the row id) and
// checks routing, order, splitting and byte-identical values. target < 0 skips split checks.
func checkFrames(t *testing.T, frames [][]byte, b *engine.Batch, types []engine.Type, keys []int, p, maxP, target int) {
	t.Helper()
	dec := exchange.NewDecoder(types)
	id := len(types) - 1
	seen := make([]bool, b.Len)
	lastChannel, lastID := -1, -1
	var prev struct {
		h  exchange.Header
		vb []int
	}
	for f, frame := range frames {
		var v engine.Batch
		h, err := dec.Decode(frame, &v)
		if err != nil {
			t.Fatalf("frame %d: %v", f, err)
		}
		if h.Parallelism != p || h.MaxParallelism != maxP || h.Rows != v.Len || v.Len == 0 {
			t.Fatalf("frame %d: header %+v", f, h)
		}
		if h.Channel < lastChannel {
			t.Fatalf("frame %d: channel %d after channel %d", f, h.Channel, lastChannel)
		}
		if h.Channel != lastChannel {
			lastID = -1
		}
		kgs := keyGroups(t, &v, types, keys, maxP)
		lo, hi := maxP, -1
		vb := make([]int, len(types))
		for j := range v.Len {
			kg := int(kgs[j])
			if got := exchange.Channel(kg, p, maxP); got != h.Channel || got != kg*p/maxP {
				t.Fatalf("frame %d row %d: key group %d goes to channel %d, the frame to %d", f, j, kg, got, h.Channel)
			}
			lo, hi = min(lo, kg), max(hi, kg)
			row := int(engine.Values[int64](&v.Cols[id], v.Len)[j])
			if row <= lastID || seen[row] {
				t.Fatalf("frame %d row %d: row id %d after %d (seen %v)", f, j, row, lastID, seen[row])
			}
			seen[row], lastID = true, row
			for c := range types {
				if got, want := cell(&v.Cols[c], j), cell(&b.Cols[c], row); !bytes.Equal(got, want) {
					t.Fatalf("frame %d row %d column %d (%s): %x, want %x", f, j, c, types[c], got, want)
				}
				if types[c].Variable() && !v.Cols[c].IsNull(j) {
					vb[c] += len(v.Cols[c].Bytes(j))
				}
			}
		}
		if lo != h.KGFirst || hi != h.KGLast {
			t.Fatalf("frame %d: key groups [%d, %d], header [%d, %d]", f, lo, hi, h.KGFirst, h.KGLast)
		}
		body := len(frame) - exchange.HeaderSize - exchange.DirSize(len(types))
		if body != engine.SlabSize(exchange.WireTypes(types), h.Rows, vb) {
			t.Fatalf("frame %d: body %d bytes", f, body)
		}
		if target >= 0 {
			if body > target && h.Rows > 1 {
				t.Fatalf("frame %d: %d rows in %d body bytes over the target %d", f, h.Rows, body, target)
			}
			if f > 0 && prev.h.Channel == h.Channel { // the previous frame could not take this row
				grown := slices.Clone(prev.vb)
				for c := range types {
					if types[c].Variable() && !v.Cols[c].IsNull(0) {
						grown[c] += len(v.Cols[c].Bytes(0))
					}
				}
				if engine.SlabSize(exchange.WireTypes(types), prev.h.Rows+1, grown) <= target {
					t.Fatalf("frame %d: its first row fitted frame %d (target %d)", f, f-1, target)
				}
			}
		}
		prev.h, prev.vb = h, vb
		lastChannel = h.Channel
	}
	for i, s := range seen {
		if !s {
			t.Fatalf("row %d is in no frame", i)
		}
	}
}

// TestRouting routes random rows of many key types for many max parallelisms and channel counts:
// every row reaches the channel of its Flink key group, in one frame, in order, byte-identical.
func TestRouting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range keyShapes {
		types, b := randomRows(t, shape, 300, r)
		keys := make([]int, len(shape))
		for i := range keys {
			keys[i] = i
		}
		for _, maxP := range []int{1, 2, 127, 128, 129, 4096, 32768} {
			for _, p := range []int{1, 2, 3, 7} {
				if p > maxP {
					continue
				}
				t.Run(fmt.Sprintf("%v/%d/%d", shape, maxP, p), func(t *testing.T) {
					enc, err := exchange.NewEncoder(types, p, maxP, exchange.DefaultTargetBytes)
					if err != nil {
						t.Fatal(err)
					}
					kgs := keyGroups(t, b, types, keys, maxP)
					frames := encodeAll(t, enc, b, kgs)
					channels := map[int]bool{}
					for _, kg := range kgs {
						channels[int(kg)*p/maxP] = true
					}
					if len(frames) != len(channels) { // 300 small rows: one frame per channel
						t.Fatalf("%d frames for %d channels", len(frames), len(channels))
					}
					checkFrames(t, frames, b, types, keys, p, maxP, exchange.DefaultTargetBytes)
				})
			}
		}
	}
}

// TestSplit cuts channels into frames at small targets, including targets below one row.
func TestSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, shape := range keyShapes {
		types, b := randomRows(t, shape, 500, r)
		keys := make([]int, len(shape))
		for i := range keys {
			keys[i] = i
		}
		for _, target := range []int{1, 64, 200, 1000, 5000} {
			p, maxP := 1+r.IntN(5), 128
			enc, err := exchange.NewEncoder(types, p, maxP, target)
			if err != nil {
				t.Fatal(err)
			}
			kgs := keyGroups(t, b, types, keys, maxP)
			frames := encodeAll(t, enc, b, kgs)
			if target == 1 && len(frames) != b.Len {
				t.Fatalf("%v target 1: %d frames for %d rows", shape, len(frames), b.Len)
			}
			if target == 5000 && len(frames) <= p && len(frames) == b.Len {
				t.Fatalf("%v: %d frames", shape, len(frames))
			}
			checkFrames(t, frames, b, types, keys, p, maxP, target)
		}
	}
}

// TestDecodeUnaligned decodes a frame whose body is not 8-byte aligned in memory.
func TestDecodeUnaligned(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	shape := keyShapes[len(keyShapes)-1]
	types, b := randomRows(t, shape, 50, r)
	enc, _ := exchange.NewEncoder(types, 1, 128, exchange.DefaultTargetBytes)
	kgs := keyGroups(t, b, types, []int{0}, 128)
	frames := encodeAll(t, enc, b, kgs)
	buf := make([]byte, len(frames[0])+3)
	copy(buf[3:], frames[0])
	checkFrames(t, [][]byte{buf[3:]}, b, types, []int{0}, 1, 128, -1)
}

// TestNullabilityIsNotTheWireType: a sender and a reader that disagree on which columns are
// NOT NULL exchange frames (Flink's partial type and the local's may), and the rows come back
// whole; a reader refuses nulls only in a column it declares NOT NULL.
func TestNullabilityIsNotTheWireType(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	types, b := randomRows(t, []string{"BIGINT NOT NULL", "VARCHAR NOT NULL", "INT"}, 40, r)
	enc, _ := exchange.NewEncoder(types, 1, 128, exchange.DefaultTargetBytes)
	frame := encodeAll(t, enc, b, keyGroups(t, b, types, []int{0}, 128))[0]
	reader := []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Varchar, Nullable: true}, {ID: engine.Int}, {ID: engine.BigInt}}
	var got engine.Batch
	_, err := exchange.NewDecoder(reader).Decode(frame, &got)
	hasNulls := false
	for i := range b.Len {
		hasNulls = hasNulls || b.Cols[2].IsNull(i)
	}
	if !hasNulls {
		t.Fatal("the INT column drew no NULL")
	}
	if err == nil || !strings.Contains(err.Error(), "column 2 (INT NOT NULL) has nulls") {
		t.Fatalf("nulls in a NOT NULL column: %v", err)
	}
	reader[2].Nullable = true
	if _, err := exchange.NewDecoder(reader).Decode(frame, &got); err != nil {
		t.Fatal(err)
	}
	for c := range types {
		for i := range b.Len {
			if got.Cols[c].IsNull(i) != b.Cols[c].IsNull(i) || !bytes.Equal(cell(&got.Cols[c], i), cell(&b.Cols[c], i)) {
				t.Fatalf("column %d row %d differs", c, i)
			}
		}
	}
}

// TestDecodeRefuses corrupts valid frames field by field: each is refused with a frame error.
func TestDecodeRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	types, b := randomRows(t, []string{"VARCHAR", "BIGINT NOT NULL"}, 20, r)
	enc, _ := exchange.NewEncoder(types, 2, 128, exchange.DefaultTargetBytes)
	frame := encodeAll(t, enc, b, keyGroups(t, b, types, []int{0}, 128))[0]
	dir := exchange.HeaderSize + exchange.DirSize(len(types))
	cases := []struct {
		name string
		off  int
		val  byte
		want string
	}{
		{"magic", 0, 'X', "magic"},
		{"version", 4, 2, "version"},
		{"flags", 6, 1, "flags"},
		{"kgFirst", 11, 0x80, "key groups"},
		{"maxP", 18, 1, "max parallelism"},
		{"parallelism", 20, 0, "parallelism"},
		{"channel", 24, 9, "channel"},
		{"rows", 28, 0, "rows"},
		{"fingerprint", 33, 0, "fingerprint"},
		{"var bytes of a fixed column", exchange.HeaderSize + 4, 1, "variable bytes"},
		{"has-nulls of NOT NULL", exchange.HeaderSize + 4*len(types) + 2, 1, "has nulls"},
		{"has-nulls byte", exchange.HeaderSize + 4*len(types), 2, "has-nulls"},
		{"padding", exchange.HeaderSize + 4*len(types) + len(types), 1, "padding"},
		{"first offset", dir + 8, 1, "first offset"},
		{"RowKind", len(frame) - 8, 1, "RowKind"},
	}
	dec := exchange.NewDecoder(types)
	for _, c := range cases {
		bad := slices.Clone(frame)
		if bad[c.off] == c.val {
			bad[c.off]++
		} else {
			bad[c.off] = c.val
		}
		var v engine.Batch
		_, err := dec.Decode(bad, &v)
		if err == nil || !errors.Is(err, engine.ErrData) || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: %v, want an ErrData naming %q", c.name, err, c.want)
		}
	}
	for _, n := range []int{0, 7, dir, len(frame) - 8, len(frame) - 1} {
		var v engine.Batch
		if _, err := dec.Decode(frame[:n], &v); !errors.Is(err, engine.ErrData) {
			t.Errorf("truncated to %d bytes: %v", n, err)
		}
	}
	var v engine.Batch
	if _, err := dec.Decode(append(slices.Clone(frame), make([]byte, 8)...), &v); !errors.Is(err, engine.ErrData) {
		t.Errorf("8 trailing bytes: %v", err)
	}
	if _, err := exchange.NewDecoder(types[1:]).Decode(frame, &v); err == nil || !bytes.Contains([]byte(err.Error()), []byte("fingerprint")) {
		t.Errorf("another row type: %v", err)
	}
}

// FuzzDecode feeds the decoder arbitrary bytes: it never panics, every error wraps ErrData, and a
// frame it accepts can be read in full.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	types, b := randomRows(f, keyShapes[len(keyShapes)-1], 12, r)
	for _, target := range []int{1, 300, 1 << 20} {
		enc, _ := exchange.NewEncoder(types, 3, 128, target)
		for _, fr := range encodeAll(f, enc, b, keyGroups(f, b, types, []int{0, 1}, 128)) {
			f.Add(fr)
		}
	}
	dec := exchange.NewDecoder(types)
	f.Fuzz(func(t *testing.T, frame []byte) {
		var v engine.Batch
		h, err := dec.Decode(frame, &v)
		if err != nil {
			if !errors.Is(err, engine.ErrData) {
				t.Fatalf("error %v does not wrap ErrData", err)
			}
			return
		}
		if v.Len != h.Rows || len(v.Kinds) != h.Rows {
			t.Fatalf("view of %d rows for %d", v.Len, h.Rows)
		}
		for c := range v.Cols {
			for j := range v.Len {
				cell(&v.Cols[c], j)
			}
		}
	})
}
