package dataview

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ferrystream/ferry/engine"
)

// randomKey draws the key of a value of type t (see NextKey).
func randomKey(r *rand.Rand, t engine.Type) []byte {
	switch t.ID {
	case engine.Varchar:
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return b
	case engine.Boolean:
		return []byte{byte(r.IntN(2))}
	}
	b := make([]byte, t.Width())
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

var keyTypes = []engine.Type{{ID: engine.BigInt}, {ID: engine.Int}, {ID: engine.Varchar}, {ID: engine.Boolean},
	{ID: engine.Decimal, Precision: 20, Scale: 2}, {ID: engine.Timestamp, Precision: 6}}

// TestDistinctMapRoundTrip writes maps of every shape (bits of up to 130 calls, counts of one
// call or several, NULL keys, with and without last writes) and reads them back.
func TestDistinctMapRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		calls := 1 + r.IntN(3) // mostly a few calls; every tenth map up to 130 (several bitmask words)
		if i%10 == 0 {
			calls = 1 + r.IntN(130)
		}
		m := DistinctMap{Key: keyTypes[r.IntN(len(keyTypes))], Calls: calls, Retract: r.IntN(2) == 0}
		times := r.IntN(2) == 0
		var want []Entry
		b := m.AppendHeader(nil)
		size := MapHeaderSize
		ends := map[int]bool{len(b): true} // where an entry ends: a map cut there is whole
		for range r.IntN(5) {
			e := Entry{Null: r.IntN(6) == 0, Vals: make([]int64, m.Calls), At: r.Int64()}
			if !e.Null {
				e.Key = randomKey(r, m.Key)
			}
			for c := range e.Vals {
				if m.Retract {
					e.Vals[c] = r.Int64N(7) - 3
				} else {
					e.Vals[c] = int64(r.IntN(2))
				}
			}
			if !times {
				e.At = 0
			}
			want = append(want, e)
			n := len(b)
			b = m.AppendEntry(b, e.Key, e.Null, e.Vals, times, e.At)
			if got := m.EntrySize(e.Key, e.Null, times); got != len(b)-n {
				t.Fatalf("%+v: EntrySize %d, wrote %d bytes", m, got, len(b)-n)
			}
			size += len(b) - n
			ends[len(b)] = true
		}
		if size != len(b) {
			t.Fatalf("%+v: %d bytes, sizes sum to %d", m, len(b), size)
		}
		src, err := m.Entries(b)
		if err != nil {
			t.Fatal(err)
		}
		var e Entry
		for i := range want {
			if src, err = m.NextEntry(src, times, &e); err != nil {
				t.Fatalf("%+v entry %d: %v", m, i, err)
			}
			w := want[i]
			if e.Null != w.Null || !bytes.Equal(e.Key, w.Key) || !slices.Equal(e.Vals, w.Vals) || e.At != w.At {
				t.Fatalf("%+v entry %d: got %+v, want %+v", m, i, e, w)
			}
		}
		if len(src) != 0 {
			t.Fatalf("%+v: %d bytes left", m, len(src))
		}
		// Maps cut inside an entry are refused, never read past their end.
		for cut := range len(b) {
			if ends[cut] {
				continue
			}
			src, err := m.Entries(b[:cut])
			for err == nil && len(src) > 0 {
				src, err = m.NextEntry(src, times, &e)
			}
			if err == nil {
				t.Fatalf("%+v: a map cut to %d of %d bytes reads", m, cut, len(b))
			}
			if !errors.Is(err, engine.ErrData) {
				t.Fatalf("%+v: %v does not wrap ErrData", m, err)
			}
		}
	}
}

// TestMinMaxAccRoundTrip writes accumulators in the state form and checks Decode of their
// partial form (StripTimes) and the last writes StripTimes returns.
func TestMinMaxAccRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		l := MinMaxAcc{Value: keyTypes[r.IntN(len(keyTypes))]}
		if l.Value.ID == engine.Boolean {
			continue // a multiset of two keys is too small for random distinct keys
		}
		times := r.IntN(2) == 0
		has := r.IntN(4) != 0
		var ext []byte
		if has {
			ext = randomKey(r, l.Value)
		}
		mapSize := r.Int64N(10)
		b := l.AppendHead(nil, ext, has, mapSize)
		if len(b) != l.HeadSize(ext, has) {
			t.Fatalf("HeadSize %d, wrote %d", l.HeadSize(ext, has), len(b))
		}
		seen := map[string]bool{}
		var keys [][]byte
		var counts []int64
		ats := map[string]int64{}
		for range r.IntN(6) {
			k := randomKey(r, l.Value)
			if seen[string(k)] {
				continue
			}
			seen[string(k)] = true
			c := r.Int64N(9) - 4
			if c == 0 {
				c = 5
			}
			at := r.Int64()
			n := len(b)
			b = l.AppendEntry(b, k, c, times, at)
			if l.EntrySize(k, times) != len(b)-n {
				t.Fatalf("EntrySize %d, wrote %d", l.EntrySize(k, times), len(b)-n)
			}
			keys, counts = append(keys, k), append(counts, c)
			ats[string(k)] = at
		}
		part, ms, lw, err := l.StripTimes(nil, b, times)
		if err != nil {
			t.Fatal(err)
		}
		if ms != mapSize {
			t.Fatalf("mapSize %d, want %d", ms, mapSize)
		}
		if times {
			if len(lw) != len(keys) {
				t.Fatalf("%d last writes, want %d", len(lw), len(keys))
			}
			for k, at := range lw {
				if ats[k] != at {
					t.Fatalf("last write %d, want %d", at, ats[k])
				}
			}
		} else if !bytes.Equal(part, b) {
			t.Fatal("StripTimes changed an accumulator without last writes")
		}
		var d DecodedMinMax
		if err := l.Decode(part, &d); err != nil {
			t.Fatal(err)
		}
		if (d.Ext != nil) != has || !bytes.Equal(d.Ext, ext) || d.MapSize != mapSize || !slices.Equal(d.Counts, counts) ||
			!slices.EqualFunc(d.Keys, keys, bytes.Equal) {
			t.Fatalf("decoded %+v, want ext %x mapSize %d keys %x counts %v", d, ext, mapSize, keys, counts)
		}
	}
}

// TestMinMaxAccRefuses checks the refusals docs/abi.md lists for an accumulator: a NULL key in
// the map and a count of 0.
func TestMinMaxAccRefuses(t *testing.T) {
	l := MinMaxAcc{Value: engine.Type{ID: engine.BigInt}}
	key := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	zero := l.AppendEntry(l.AppendHead(nil, key, true, 1), key, 0, false, 0)
	nullKey := append(l.AppendHead(nil, nil, false, 0), 1)
	for _, src := range [][]byte{zero, nullKey, {2}, l.AppendHead(nil, key, true, 1)[:5]} {
		var d DecodedMinMax
		if err := l.Decode(src, &d); !errors.Is(err, engine.ErrData) {
			t.Errorf("%x: %v, want ErrData", src, err)
		}
	}
}

func TestWelfordRoundTrip(t *testing.T) {
	b := make([]byte, WelfordSize)
	for _, w := range [][3]float64{{-3, math.Inf(1), math.Copysign(0, -1)}, {1 << 40, math.NaN(), 1e-300}} {
		PutWelford(b, int64(w[0]), w[1], w[2])
		n, mean, m2 := Welford(b)
		if n != int64(w[0]) || math.Float64bits(mean) != math.Float64bits(w[1]) || math.Float64bits(m2) != math.Float64bits(w[2]) {
			t.Fatalf("%v: read back %d %v %v", w, n, mean, m2)
		}
	}
}
