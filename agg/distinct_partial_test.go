package agg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/distinct"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// The reference model of the distinct maps in partial rows (docs/group-aggregate.md#data-views-in-the-partial-row),
// written from DistinctAggCodeGen, with its own encoder and decoder of Ferry's layout
// (docs/abi.md#data-views).

// refView is a distinct map: value id (refDistinctID) → entry.
type refView map[string]*refViewEntry

type refViewEntry struct {
	v    any     // the value (nil: NULL)
	vals []int64 // per call: its bit or count
	at   int64   // its last write, when its map has a clock (idle-state TTL)
}

// refViewShape is what a distinct map's encoding depends on: the key type, the number of calls
// sharing it and whether they count (retracting input) or set bits.
type refViewShape struct {
	typ     engine.Type
	calls   int
	retract bool
}

func (s refViewShape) words() int {
	switch {
	case !s.retract && s.calls <= 64, s.retract && s.calls == 1:
		return 1
	case s.retract:
		return s.calls
	}
	return s.calls/64 + 1
}

// viewShapes are the shapes of spec's distinct maps, in partial-row order.
func viewShapes(spec *Spec) []refViewShape {
	order, byArg := distinctArgs(spec)
	var shapes []refViewShape
	for _, arg := range order {
		shapes = append(shapes, refViewShape{spec.ArgTypes[arg], len(byArg[arg]), spec.NeedRetraction})
	}
	return shapes
}

// encodeKey is v's key bytes: the Arrow value bytes (BOOLEAN one byte, a float's NaN canonical),
// or a VARCHAR's length and UTF-8 bytes.
func encodeKey(t engine.Type, v any) []byte {
	switch x := v.(type) {
	case string:
		return append(binary.LittleEndian.AppendUint32(nil, uint32(len(x))), x...)
	case bool:
		if x {
			return []byte{1}
		}
		return []byte{0}
	case float32:
		return binary.LittleEndian.AppendUint32(nil, uint32(jBits(x)))
	case float64:
		return binary.LittleEndian.AppendUint64(nil, uint64(jBits(x)))
	}
	col := enginetest.Batch([]engine.Type{t}, [][]any{{v}}, []engine.RowKind{0}, enginetest.Options{}).Cols[0]
	return slices.Clone(col.Fixed(0))
}

// decodeKey is the value of key bytes b of type t.
func decodeKey(t engine.Type, b []byte) any {
	switch t.ID {
	case engine.Varchar:
		return string(b)
	case engine.Boolean:
		return b[0] == 1
	case engine.TinyInt:
		return int64(int8(b[0]))
	case engine.SmallInt:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case engine.Int, engine.Date:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	case engine.BigInt:
		return int64(binary.LittleEndian.Uint64(b))
	case engine.Float:
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	case engine.Double:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case engine.Decimal:
		be := make([]byte, 16)
		for i := range be {
			be[i] = b[15-i]
		}
		v := new(big.Int).SetBytes(be)
		if b[15]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return v
	case engine.Timestamp:
		ts := enginetest.Timestamp{Millis: int64(binary.LittleEndian.Uint64(b))}
		if len(b) == 12 {
			ts.Nanos = int32(binary.LittleEndian.Uint32(b[8:]))
		}
		return ts
	}
	panic(fmt.Sprintf("key type %v", t))
}

// encode is the map in Ferry's layout, entries ordered by id.
func (m refView) encode(s refViewShape) string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := binary.LittleEndian.AppendUint32(nil, uint32(s.words()))
	for _, id := range ids {
		e := m[id]
		if e.v == nil {
			b = append(b, 1)
		} else {
			b = append(append(b, 0), encodeKey(s.typ, e.v)...)
		}
		words := make([]uint64, s.words())
		for c, x := range e.vals {
			if s.retract {
				words[c] = uint64(x)
			} else if x != 0 {
				words[c/64] |= 1 << (c % 64)
			}
		}
		for _, w := range words {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	return string(b)
}

// decodeView decodes a map in Ferry's layout, entries in their order.
func decodeView(s refViewShape, enc string) ([]refViewEntry, error) {
	b := []byte(enc)
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != uint32(s.words()) {
		return nil, errors.New("bad header")
	}
	b = b[4:]
	var out []refViewEntry
	for len(b) > 0 {
		var e refViewEntry
		if b[0] > 1 {
			return nil, fmt.Errorf("NULL flag %d", b[0])
		}
		null := b[0] == 1
		b = b[1:]
		if !null {
			n := s.typ.Width()
			switch s.typ.ID {
			case engine.Varchar:
				if len(b) < 4 {
					return nil, errors.New("truncated length")
				}
				n, b = int(binary.LittleEndian.Uint32(b)), b[4:]
			case engine.Boolean:
				n = 1
			}
			if len(b) < n {
				return nil, errors.New("truncated key")
			}
			e.v, b = decodeKey(s.typ, b[:n]), b[n:]
		}
		if len(b) < 8*s.words() {
			return nil, errors.New("truncated value")
		}
		e.vals = make([]int64, s.calls)
		for w := range s.words() {
			x := binary.LittleEndian.Uint64(b[8*w:])
			if s.retract {
				e.vals[w] = int64(x)
				continue
			}
			for c := 64 * w; c < s.calls && c < 64*w+64; c++ {
				e.vals[c] = int64(x >> (c % 64) & 1)
			}
		}
		out = append(out, e)
		b = b[8*s.words():]
	}
	return out, nil
}

// canonicalView renders an encoded map as its sorted entries, for comparing maps as sets.
func canonicalView(s refViewShape, enc string) string {
	ents, err := decodeView(s, enc)
	if err != nil {
		return "malformed: " + err.Error()
	}
	var parts []string
	for _, e := range ents {
		parts = append(parts, fmt.Sprintf("%s=%v", refDistinctID(e.v), e.vals))
	}
	slices.Sort(parts)
	return "{" + strings.Join(parts, " ") + "}"
}

// canonicalViews replaces the distinct maps of partial rows (columns from first on) by their
// canonical form.
func canonicalViews(rows []enginetest.Row, first int, shapes []refViewShape) []enginetest.Row {
	for _, r := range rows {
		for s, sh := range shapes {
			if v, ok := r.Values[first+s].(string); ok {
				r.Values[first+s] = canonicalView(sh, v)
			}
		}
	}
	return rows
}

// refMergeView merges the entries of another map into m as DistinctAggCodeGen.merge does,
// literally (a count map of one call removes an entry that merges to 0, a long[] map keeps it,
// a bitmask map stores an entry only when a bit was newly set); apply(j, add, v) accumulates
// (add) or retracts value v in the set's j-th call. With a clock (idle-state TTL) an expired
// entry of m reads as absent and every put stamps its entry.
func refMergeView(m refView, other []refViewEntry, s refViewShape, apply func(j int, add bool, v any), clock *refClock) {
	for _, o := range other {
		id := refDistinctID(o.v)
		e := m[id]
		if e != nil && clock != nil && clock.ttl > 0 && e.at+clock.ttl <= clock.now {
			delete(m, id)
			e = nil
		}
		if e == nil {
			e = &refViewEntry{v: o.v, vals: make([]int64, s.calls)}
		}
		changed := false
		for j, ov := range o.vals {
			this := e.vals[j]
			if !s.retract {
				if this == 0 && ov != 0 {
					changed = true
					apply(j, true, o.v)
				}
				e.vals[j] |= ov
				continue
			}
			merged := this + ov
			switch {
			case merged <= 0 && this > 0:
				apply(j, false, o.v)
			case merged > 0 && this <= 0:
				apply(j, true, o.v)
			}
			e.vals[j], changed = merged, true
		}
		switch {
		case s.retract && s.calls == 1 && e.vals[0] == 0:
			delete(m, id)
		case changed:
			m[id] = e
			if clock != nil {
				e.at = clock.now
			}
		}
	}
}

// TestDistinctViewEncoding checks the encoding of every key type and value form against the
// reference encoder, and that malformed maps are refused before anything changes.
func TestDistinctViewEncoding(t *testing.T) {
	for _, tc := range []struct {
		typ     string
		vals    []any
		calls   int
		retract bool
	}{
		{"BIGINT", []any{int64(-1), int64(math.MaxInt64), nil}, 1, false},
		{"INT", []any{int64(7), nil}, 65, false},
		{"DOUBLE", []any{math.NaN(), math.Copysign(0, -1), 0.0, nil}, 2, true},
		{"VARCHAR", []any{"", "ä", nil}, 1, true},
		{"BOOLEAN", []any{true, false}, 3, false},
		{"DECIMAL(38, 2)", []any{big.NewInt(-5), nil}, 1, false},
		{"TIMESTAMP(6)", []any{enginetest.Timestamp{Millis: -3, Nanos: 999}}, 1, true},
		{"DATE", []any{int64(-1)}, 130, false},
	} {
		typ, err := engine.ParseType(tc.typ)
		if err != nil {
			t.Fatal(err)
		}
		d := distinct.NewSet(0, typ, tc.retract)
		d.KeepNulls()
		for c := range tc.calls {
			d.AddCall(c, -1)
		}
		shape := refViewShape{typ, tc.calls, tc.retract}
		want := refView{}
		var rows [][]any
		kinds := []engine.RowKind{}
		for i, v := range tc.vals {
			rows = append(rows, []any{v})
			kinds = append(kinds, engine.Insert)
			vals := make([]int64, tc.calls)
			for c := range vals {
				if tc.retract {
					vals[c] = int64(1 - i%2*2) // counts of 1 and -1 alike
				} else {
					vals[c] = 1
				}
			}
			want[refDistinctID(v)] = &refViewEntry{v: v, vals: vals}
		}
		d.Grow(1)
		in := enginetest.Batch([]engine.Type{typ}, rows, kinds, enginetest.Options{})
		act := make([]int8, len(rows))
		for i := range act {
			act[i] = int8(1 - i%2*2) // rows alternate +1, -1 so counts alternate 1, -1
			if !tc.retract {
				act[i] = 1
			}
		}
		d.Resolve(in, make([]int32, len(rows)), act)
		out := engine.OutBatch{Alloc: engine.HeapAllocator{}}
		if err := out.Init([]engine.Type{dataview.MapType}, 1, []int{d.ViewBytes([]int32{0}, false)}); err != nil {
			t.Fatal(err)
		}
		d.WriteView(&out.Cols[0], []int32{0}, false)
		got := enginetest.Rows(&out)[0].Values[0].(string)
		if g, w := canonicalView(shape, got), canonicalView(shape, want.encode(shape)); g != w {
			t.Errorf("%s: wrote %s, want %s", tc.typ, g, w)
		}
		// The reference's bytes decode in Ferry to the same entries (NULL skipped by a merge).
		m := distinct.NewSet(0, typ, tc.retract)
		for c := range tc.calls {
			m.AddCall(c, -1)
		}
		m.Grow(1)
		b := enginetest.Batch([]engine.Type{dataview.MapType}, [][]any{{want.encode(shape)}}, []engine.RowKind{0}, enginetest.Options{})
		if err := m.CheckViews(&b.Cols[0], []int32{0}); err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		m.MergeView(b.Cols[0].Bytes(0), 0, nil)
		delete(want, "null")
		if err := out.Init([]engine.Type{dataview.MapType}, 1, []int{m.ViewBytes([]int32{0}, false)}); err != nil {
			t.Fatal(err)
		}
		m.WriteView(&out.Cols[0], []int32{0}, false)
		if g, w := canonicalView(shape, enginetest.Rows(&out)[0].Values[0].(string)), canonicalView(shape, want.encode(shape)); g != w {
			t.Errorf("%s: merged %s, want %s", tc.typ, g, w)
		}
	}

	// Malformed maps: a clear error, nothing merged.
	d := distinct.NewSet(0, engine.Type{ID: engine.Varchar}, false)
	d.AddCall(0, -1)
	d.Grow(1)
	for _, tc := range []struct {
		enc  any
		want string
	}{
		{"\x01\x00\x00\x00\x02", "bad NULL flag"},
		{"\x01\x00\x00\x00\x00\x05\x00\x00\x00ab", "key of 5 bytes"},
		{"\x01\x00\x00\x00\x00\x00\x00", "truncated key length"},
		{"\x01\x00\x00\x00\x01\x01\x00", "value of 1 words truncated"},
		{"\x01\x00\x00\x00\x01\x02\x00\x00\x00\x00\x00\x00\x00", "bit 1 set for 1 calls"},
		{"\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "2-word values, want 1"},
		{"\x01\x00", "no header"},
		{nil, "is NULL"},
	} {
		b := enginetest.Batch([]engine.Type{dataview.MapType}, [][]any{{tc.enc}}, []engine.RowKind{0}, enginetest.Options{})
		err := d.CheckViews(&b.Cols[0], []int32{0})
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.enc, err, tc.want)
		}
	}
	if d.HasEntries(0) {
		t.Fatal("a refused map changed the set")
	}
}

// The reference model's MIN/MAX-with-retraction accumulators in partial rows
// (minmax_retract_merge.go's layout).

// refAccParts are an accumulator's extreme, mapSize and entries (values and counts).
func refAccParts(a refAgg) (ext any, mapSize int64, vals []any, counts []int64) {
	switch r := a.(type) {
	case *refMinMaxRetract:
		for k, v := range r.keys {
			vals, counts = append(vals, v), append(counts, r.counts[k])
		}
		return r.min, r.mapSize, vals, counts
	case *refObjMinMaxRetract:
		for k, v := range r.keys {
			vals, counts = append(vals, objValue(v)), append(counts, r.counts[k])
		}
		return objValue(r.ext), r.mapSize, vals, counts
	}
	panic("not MIN/MAX with retraction")
}

// isRefAcc reports whether a is a reference MIN/MAX with retraction.
func isRefAcc(a refAgg) bool {
	switch a.(type) {
	case *refMinMaxRetract, *refObjMinMaxRetract:
		return true
	}
	return false
}

// refAccEncode encodes a reference MIN/MAX-with-retraction accumulator over values of type t.
func refAccEncode(t engine.Type, a refAgg) string {
	ext, mapSize, vals, counts := refAccParts(a)
	var b []byte
	if ext == nil {
		b = append(b, 1)
	} else {
		b = append(append(b, 0), encodeKey(t, ext)...)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(mapSize))
	b = binary.LittleEndian.AppendUint32(b, 1)
	for i, v := range vals {
		b = append(append(b, 0), encodeKey(t, v)...)
		b = binary.LittleEndian.AppendUint64(b, uint64(counts[i]))
	}
	return string(b)
}

// refAccDecode decodes an accumulator into a fresh one of like's kind.
func refAccDecode(t engine.Type, like refAgg, enc string) refAgg {
	b := []byte(enc)
	var ext any
	null := b[0] == 1
	b = b[1:]
	if !null {
		var key []byte
		var err error
		if key, b, err = dataview.NextKey(t, b); err != nil {
			panic(err)
		}
		ext = decodeKey(t, key)
	}
	mapSize := int64(binary.LittleEndian.Uint64(b))
	b = b[12:]
	switch l := like.(type) {
	case *refMinMaxRetract:
		r := &refMinMaxRetract{max: l.max, min: ext, mapSize: mapSize, keys: map[int64]any{}, counts: map[int64]int64{}}
		for len(b) > 0 {
			key, rest, err := dataview.NextKey(t, b[1:])
			if err != nil {
				panic(err)
			}
			v := decodeKey(t, key)
			r.keys[jBits(v)], r.counts[jBits(v)] = v, int64(binary.LittleEndian.Uint64(rest))
			b = rest[8:]
		}
		return r
	case *refObjMinMaxRetract:
		r := &refObjMinMaxRetract{max: l.max, ext: ext, mapSize: mapSize, keys: map[string]any{}, counts: map[string]int64{}}
		for len(b) > 0 {
			key, rest, err := dataview.NextKey(t, b[1:])
			if err != nil {
				panic(err)
			}
			v := decodeKey(t, key)
			r.keys[objKey(v)], r.counts[objKey(v)] = v, int64(binary.LittleEndian.Uint64(rest))
			b = rest[8:]
		}
		return r
	}
	panic("not MIN/MAX with retraction")
}

// canonicalAcc renders an encoded accumulator with its entries sorted.
func canonicalAcc(t engine.Type, max bool, enc string) string {
	like := refAgg(&refMinMaxRetract{max: max})
	if t.ID == engine.Decimal || t.ID == engine.Varchar {
		like = &refObjMinMaxRetract{max: max}
	}
	ext, mapSize, vals, counts := refAccParts(refAccDecode(t, like, enc))
	var parts []string
	for i, v := range vals {
		parts = append(parts, fmt.Sprintf("%s=%d", refDistinctID(v), counts[i]))
	}
	slices.Sort(parts)
	e := "null"
	if ext != nil {
		e = refDistinctID(ext)
	}
	return fmt.Sprintf("acc{%s %d %v}", e, mapSize, parts)
}

// refPartialRow is call c's partial fields as the reference writes them: refPartial, or an
// encoded MIN/MAX with retraction.
func refPartialRow(s *Spec, c int, a refAgg) []any {
	if isRefAcc(a) {
		return []any{refAccEncode(s.ArgTypes[s.Aggs[c].Args[0]], a)}
	}
	return refPartial(a)
}

// canonicalAccs replaces the MIN/MAX-with-retraction accumulators of partial rows by their
// canonical form.
func canonicalAccs(rows []enginetest.Row, s *Spec, l *partialLayout) []enginetest.Row {
	for _, r := range rows {
		for c, call := range s.Aggs {
			if call.Retract && (call.Func == "MIN" || call.Func == "MAX") {
				if v, ok := r.Values[l.first[c]].(string); ok {
					r.Values[l.first[c]] = canonicalAcc(s.ArgTypes[call.Args[0]], call.Func == "MAX", v)
				}
			}
		}
	}
	return rows
}

// TestMalformedPartialMaps feeds a global aggregate partial rows whose MIN/MAX-with-retraction
// accumulator or distinct map is malformed: a clear error, and no key gets state.
func TestMalformedPartialMaps(t *testing.T) {
	input := bigintInput("k", "v")
	c := twoPhaseCaseOf(t, input, []int{0}, []AggCall{{Func: "MAX", Args: []int{1}, Retract: true, Name: "m"},
		{Func: "COUNT", Args: []int{1}, Retract: true, Distinct: true}, {Func: "COUNT", Retract: true, Name: "_$count1$_"}}, true, 0)
	gs := globalSpecOf(t, c, false)
	good := refView{}.encode(refViewShape{engine.Type{ID: engine.BigInt}, 1, true})
	acc := func(tail string) string { return "\x00\x07\x00\x00\x00\x00\x00\x00\x00" + tail }
	one := "\x01\x00\x00\x00\x00\x00\x00\x00"
	for _, tc := range []struct {
		acc, view any
		want      string
	}{
		{"\x02", good, "bad NULL flag"},
		{acc("\x01\x00\x00\x00\x00\x00\x00\x00"), good, "truncated mapSize or map"},
		{acc(one + "\x01\x00\x00\x00\x01"), good, "NULL flag 1"},
		{acc(one + "\x01\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), good, "a count of 0"},
		{acc(one + "\x01\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00" +
			"\x00\x07\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"), good, "holds a value twice"},
		{nil, good, "is NULL"},
		{acc(one + "\x01\x00\x00\x00"), "\x01\x00\x00\x00\x05", "bad NULL flag"},
	} {
		op, err := NewGlobalGroupAggregate(gs)
		if err != nil {
			t.Fatal(err)
		}
		row := []any{int64(1), tc.acc, int64(1), int64(1), tc.view}
		b := enginetest.Batch(gs.InputTypes, [][]any{row}, []engine.RowKind{0}, enginetest.Options{})
		_, err = op.Process(engine.Of(0, 1, b), 0, &engine.OutBatch{Alloc: engine.HeapAllocator{}})
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q/%q: %v, want %q", tc.acc, tc.view, err, tc.want)
		}
		if op.Groups() != 0 {
			t.Errorf("%q: %d keys after a refused batch", tc.acc, op.Groups())
		}
	}
}
