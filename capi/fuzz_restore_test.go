//go:build ferrytest

package main

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/dedup"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/snapshot"
	"github.com/ferrystream/ferry/topn"
	"github.com/ferrystream/ferry/windowagg"
)

// FuzzRestore feeds mutated snapshot chunks to ferry_operator_restore, for every registered
// operator kind with state. The mutations apply to the chunk's payload and the chunk is encoded
// again (checksums and compression recomputed), so they reach the kind's payload decoder. Every
// input must end in FERRY_OK or an error, never a panic; a failed restore must leave the key
// group as it was (empty), and the operator must stay usable: it processes a batch and
// snapshots every key group afterwards.

// restoreFuzzSpecs are, per operator kind with state, specs whose state covers the kind's
// payload (every per-key state its operators keep). A kind registered without an entry here or
// in statelessKinds fails TestFuzzRestoreCoversEveryKind.
var restoreFuzzSpecs = map[string][]spec{
	agg.Kind: {
		// Retracting: record counter, value multisets of MIN/MAX with retraction (numbers,
		// DECIMAL, VARCHAR), DISTINCT counts, SUM/AVG with retraction.
		{flatSpec{Kind: agg.Kind, Name: "restore-retract", MaxParallelism: 128, Keys: []int{0, 1},
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Aggs: []agg.AggCall{{Func: "COUNT", Retract: true}, {Func: "SUM", Args: []int{2}, Retract: true},
				{Func: "MAX", Args: []int{2}, Retract: true}, {Func: "MIN", Args: []int{4}, Retract: true},
				{Func: "COUNT", Args: []int{2}, Retract: true, Distinct: true}, {Func: "SUM", Args: []int{3}, Retract: true},
				{Func: "AVG", Args: []int{3}, Retract: true}, {Func: "MAX", Args: []int{3}, Retract: true},
				{Func: "AVG", Args: []int{5}, Retract: true}, {Func: "MIN", Args: []int{5}, Retract: true},
				{Func: "SUM0", Args: []int{2}, Retract: true}},
			NeedRetraction: true, GenerateUpdateBefore: true}},
		// Insert-only with idle-state TTL: last-write times; plain MIN/MAX (numbers, DECIMAL,
		// VARCHAR), DECIMAL SUM0 and AVG.
		{flatSpec{Kind: agg.Kind, Name: "restore-ttl", MaxParallelism: 128, Keys: []int{1}, StateTTLMs: 1 << 40,
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Aggs: []agg.AggCall{{Func: "COUNT"}, {Func: "SUM", Args: []int{2}}, {Func: "MIN", Args: []int{3}}, {Func: "MAX", Args: []int{4}},
				{Func: "SUM0", Args: []int{3}}, {Func: "AVG", Args: []int{3}}, {Func: "MAX", Args: []int{5}}, {Func: "AVG", Args: []int{2}}}}},
		// Retracting with idle-state TTL: the entries of DISTINCT counts and of MIN/MAX
		// multisets (numbers, DECIMAL, VARCHAR) carry their own last-write times.
		{flatSpec{Kind: agg.Kind, Name: "restore-retract-ttl", MaxParallelism: 128, Keys: []int{0}, StateTTLMs: 1 << 40,
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Aggs: []agg.AggCall{{Func: "COUNT", Args: []int{4}, Retract: true, Distinct: true}, {Func: "MAX", Args: []int{2}, Retract: true},
				{Func: "MIN", Args: []int{3}, Retract: true}, {Func: "MAX", Args: []int{4}, Retract: true}},
			NeedRetraction: true}},
		// Insert-only DISTINCT with idle-state TTL: bits and last-write times per entry.
		{flatSpec{Kind: agg.Kind, Name: "restore-distinct-ttl", MaxParallelism: 128, Keys: []int{0}, StateTTLMs: 1 << 40,
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Aggs:  []agg.AggCall{{Func: "COUNT", Args: []int{4}, Distinct: true}, {Func: "SUM", Args: []int{2}, Distinct: true}}}},
		// Insert-only DISTINCT (bits per call) with a FILTER.
		{flatSpec{Kind: agg.Kind, Name: "restore-distinct", MaxParallelism: 128, Keys: []int{0},
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Aggs: []agg.AggCall{{Func: "COUNT", Args: []int{4}, Distinct: true}, {Func: "SUM", Args: []int{2}, Distinct: true},
				{Func: "MAX", Args: []int{4}, Distinct: true}}}},
	},
	// The global aggregate's input is partial rows: restoreRows' columns read as keys (k, s),
	// then the partial state of SUM(BIGINT), MIN(DECIMAL(20, 2)), MAX(VARCHAR), SUM(DOUBLE).
	agg.GlobalKind: {
		{flatSpec{Kind: agg.GlobalKind, Name: "restore-global", MaxParallelism: 128, Keys: []int{0, 1},
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &agg.GlobalParams{LocalInput: fields("v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
				Aggs: []agg.AggCall{{Func: "SUM", Args: []int{0}}, {Func: "MIN", Args: []int{1}}, {Func: "MAX", Args: []int{2}},
					{Func: "SUM", Args: []int{3}}},
				GenerateUpdateBefore: true}}},
		{flatSpec{Kind: agg.GlobalKind, Name: "restore-global-ttl", MaxParallelism: 128, Keys: []int{0},
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &agg.GlobalParams{LocalInput: fields("s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
				Aggs: []agg.AggCall{{Func: "MAX", Args: []int{0}}, {Func: "MAX", Args: []int{1}}, {Func: "MIN", Args: []int{2}},
					{Func: "MIN", Args: []int{3}}, {Func: "SUM", Args: []int{4}}},
				StateTTLMs: 1 << 40}}},
	},
	// Processing-time keep-last rows with their stored kinds; row-time keep-first rows waiting
	// for their timers (v as the row time), and with TTL row-time keep-last rows.
	dedup.Kind: {
		{flatSpec{Kind: dedup.Kind, Name: "restore-dedup-last", MaxParallelism: 128, Keys: []int{0},
			Input:  fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &dedup.Params{KeepLastRow: true, GenerateUpdateBefore: true, GenerateInsert: true, StoredRowKeepsKind: true}}},
		{flatSpec{Kind: dedup.Kind, Name: "restore-dedup-first-rowtime", MaxParallelism: 128, Keys: []int{1},
			Input:  fields("k", "BIGINT", "s", "VARCHAR", "v", "TIMESTAMP(3)", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &dedup.Params{Rowtime: true, RowtimeIndex: 2, OutputInsertOnly: true, StateTTLMs: 1 << 40}}},
		{flatSpec{Kind: dedup.Kind, Name: "restore-dedup-last-rowtime", MaxParallelism: 128, Keys: []int{0, 1},
			Input:  fields("k", "BIGINT", "s", "VARCHAR", "v", "TIMESTAMP(3)", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &dedup.Params{Rowtime: true, RowtimeIndex: 2, KeepLastRow: true, GenerateUpdateBefore: true, StateTTLMs: 1 << 40}}},
	},
	// Top-N buffers of rows over string, decimal and number sort keys (with ties); the retracting
	// Top-N's groups with counts; the first N's counters with TTL.
	topn.Kind: {
		{flatSpec{Kind: topn.Kind, Name: "restore-top-n", MaxParallelism: 128, Keys: []int{0},
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &topn.Params{Function: topn.AppendOnlyTopN, SortKeys: []topn.SortKey{{Field: 4}, {Field: 3, NullsLast: true}, {Field: 2}},
				RankStart: 2, RankEnd: 5, OutputRankNumber: true}}},
		{flatSpec{Kind: topn.Kind, Name: "restore-retractable-top-n", MaxParallelism: 128, Keys: []int{0}, NeedRetraction: true,
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR"),
			Params: &topn.Params{Function: topn.RetractableTopN, SortKeys: []topn.SortKey{{Field: 3, Ascending: true}, {Field: 4, NullsLast: true}},
				RankStart: 1, RankEnd: 3, GenerateUpdateBefore: true}}},
		{flatSpec{Kind: topn.Kind, Name: "restore-updatable-top-n", MaxParallelism: 128, Keys: []int{0},
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &topn.Params{Function: topn.UpdatableTopN, SortKeys: []topn.SortKey{{Field: 2}}, RowKeys: []int{0, 4},
				RankStart: 1, RankEnd: 4, OutputRankNumber: true, GenerateUpdateBefore: true}}},
		{flatSpec{Kind: topn.Kind, Name: "restore-top1", MaxParallelism: 128, Keys: []int{1},
			Input:  fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &topn.Params{Function: topn.FastTop1, SortKeys: []topn.SortKey{{Field: 2, Ascending: true}}, RankStart: 1, RankEnd: 1}}},
		{flatSpec{Kind: topn.Kind, Name: "restore-first-n", MaxParallelism: 128, Keys: []int{0, 1},
			Input: fields("k", "BIGINT", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &topn.Params{Function: topn.AppendOnlyFirstN, SortKeys: []topn.SortKey{{Field: 2, Ascending: true}}, RankStart: 1, RankEnd: 3,
				StateTTLMs: 1 << 40}}},
	},
	// Slices of HOP windows per key (k as the row time), each with the accumulators of COUNT(*),
	// SUM(BIGINT), MIN(DECIMAL(20, 2)), MAX(VARCHAR) and AVG(DOUBLE), and their timers.
	windowagg.Kind: {
		{flatSpec{Kind: windowagg.Kind, Name: "restore-window-aggregate", MaxParallelism: 128, Keys: []int{1},
			Input: fields("k", "TIMESTAMP(3)", "s", "VARCHAR", "v", "BIGINT", "d", "DECIMAL(20, 2)", "w", "VARCHAR", "x", "DOUBLE"),
			Params: &windowagg.Params{Window: "HOP", SizeMs: 4, SlideMs: 2, RowtimeIndex: 0, CountStar: pointerTo(0),
				Aggs: []agg.AggCall{{Func: "COUNT"}, {Func: "SUM", Args: []int{2}}, {Func: "MIN", Args: []int{3}}, {Func: "MAX", Args: []int{4}},
					{Func: "AVG", Args: []int{5}}},
				Properties: []string{windowagg.PropWindowStart, windowagg.PropWindowEnd}}}},
	},
}

// statelessKinds are the registered keyed kinds without keyed state (test kinds, and the local
// aggregate, whose bundle never outlives a call); functions keep none either.
var statelessKinds = map[string]bool{enginetest.FanoutKind: true, "test_gate": true, agg.LocalKind: true}

func TestFuzzRestoreCoversEveryKind(t *testing.T) {
	for _, k := range engine.Kinds() {
		if k.Shape == engine.ShapeKeyed && restoreFuzzSpecs[k.Name] == nil && multiInputFuzzSpecs[k.Name] == nil && !statelessKinds[k.Name] {
			t.Errorf("operator kind %s has no FuzzRestore spec (restoreFuzzSpecs)", k.Name)
		}
	}
	for k, specs := range restoreFuzzSpecs {
		for _, s := range specs {
			op, err := enginetest.Open(s.header(t))
			if err != nil || op.State() == nil {
				t.Errorf("kind %s: spec %s opens no stateful operator (%v)", k, s.Name, err)
				continue
			}
			op.Close()
		}
	}
}

// restoreSeed is one key group's snapshot payload of a fuzz spec.
type restoreSeed struct {
	spec    spec
	multi   *multiInputSpec // instead of spec, for a kind with several inputs
	kg      int
	payload []byte
	header  snapshot.Header
}

var restoreFuzz struct {
	sync.Once
	seeds []restoreSeed
}

// restoreRows is a valid changelog over restoreFuzzSpecs' input (its first columns for a spec
// with fewer): inserts, and for retracting specs retractions of earlier rows, on few keys.
func restoreRows(retract bool) ([][]any, []int8) {
	var rows [][]any
	var kinds []int8
	for i := range 300 {
		row := []any{int64(i % 7), fmt.Sprintf("key-%d", i%5), int64(i * 37 % 101), dec(fmt.Sprintf("%d.%02d", i%50-20, i%100)),
			fmt.Sprintf("w%03d", i*13%17), float64(i%9) / 4}
		if i%11 == 0 {
			row[2], row[4] = nil, nil
		}
		rows, kinds = append(rows, row), append(kinds, pI)
		if retract && i%4 == 3 {
			rows, kinds = append(rows, rows[len(rows)-3]), append(kinds, mD)
		}
	}
	return rows, kinds
}

// restoreFuzzSetup builds the seeds: every spec's operator fed restoreRows, every key group with
// state snapshotted, its payload decoded.
func restoreFuzzSetup(t testing.TB) []restoreSeed {
	restoreFuzz.Do(func() {
		for _, specs := range restoreFuzzSpecs {
			for _, s := range specs {
				o := openOp(t, s)
				rows, kinds := restoreRows(s.NeedRetraction)
				for i := range rows {
					rows[i] = rows[i][:len(s.Input)] // a spec may read the first columns only
				}
				rec := buildRecord(o.in, rows, kinds)
				o.process(rec, 0)
				rec.Release()
				barrierFlush(t, o.h)
				hd := snapshot.Header{Kind: s.Kind, MaxParallelism: s.MaxParallelism, Fingerprint: fingerprintOf(t, s), Last: true}
				for kg := range s.MaxParallelism {
					blob, r := snapshotKG(t, o.h, kg)
					if r.code != codeOK {
						t.Fatalf("snapshot: %v", r)
					}
					if blob == nil {
						continue
					}
					hd.KeyGroup = kg
					_, payload, err := snapshot.Decode(blob, hd, nil)
					if err != nil {
						t.Fatal(err)
					}
					restoreFuzz.seeds = append(restoreFuzz.seeds, restoreSeed{spec: s, kg: kg, payload: slices.Clone(payload), header: hd})
				}
				o.close()
			}
		}
		for _, specs := range multiInputFuzzSpecs {
			for i := range specs {
				s := &specs[i]
				o := openMulti(t, s)
				o.build()
				hd := snapshot.Header{Kind: s.kind, MaxParallelism: s.maxParallelism(t), Fingerprint: s.fingerprint(t), Last: true}
				for kg := range hd.MaxParallelism {
					blob, r := snapshotKG(t, o.h, kg)
					if r.code != codeOK {
						t.Fatalf("snapshot: %v", r)
					}
					if blob == nil {
						continue
					}
					hd.KeyGroup = kg
					_, payload, err := snapshot.Decode(blob, hd, nil)
					if err != nil {
						t.Fatal(err)
					}
					restoreFuzz.seeds = append(restoreFuzz.seeds, restoreSeed{multi: s, kg: kg, payload: slices.Clone(payload), header: hd})
				}
			}
		}
		slices.SortFunc(restoreFuzz.seeds, func(a, b restoreSeed) int {
			if a.name() != b.name() {
				return compareStrings(a.name(), b.name())
			}
			return a.kg - b.kg
		})
	})
	if len(restoreFuzz.seeds) == 0 {
		t.Fatal("no restore seeds")
	}
	return restoreFuzz.seeds
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mutate applies a mutation program to payload: 4-byte steps (operation, position high and low
// byte, value). Operations: xor a byte (value|1), set a byte, truncate, insert a byte, delete a
// byte, set a varint-sized field to a large value.
func mutate(payload, prog []byte) []byte {
	p := slices.Clone(payload)
	for len(prog) >= 4 {
		op, pos, v := prog[0]%6, int(binary.BigEndian.Uint16(prog[1:3])), prog[3]
		prog = prog[4:]
		if len(p) == 0 && op != 3 {
			continue
		}
		i := pos % max(len(p), 1)
		switch op {
		case 0:
			p[i] ^= v | 1
		case 1:
			p[i] = v
		case 2:
			p = p[:i]
		case 3:
			p = slices.Insert(p, min(pos%(len(p)+1), len(p)), v)
		case 4:
			p = slices.Delete(p, i, i+1)
		case 5:
			p = append(p[:i], append(binary.AppendVarint(nil, int64(v)<<56|int64(pos)), p[i:]...)...)
		}
	}
	return p
}

func runRestoreInput(t *testing.T, data []byte) {
	seeds := restoreFuzzSetup(t)
	defer engine.Unpoison() // each input is judged alone
	if len(data) == 0 {
		return
	}
	seed := seeds[int(data[0])%len(seeds)]
	payload := mutate(seed.payload, data[1:])
	chunk := snapshot.Encode(nil, seed.header, payload)

	if seed.multi != nil {
		o := openMulti(t, seed.multi)
		restoreChecked(t, o.h, seed.kg, chunk)
		o.usable(t)
		if p := engine.Poisoned(); p != "" {
			t.Fatalf("poisoned: %s", p)
		}
		return
	}
	o := openOp(t, seed.spec)
	restoreChecked(t, o.h, seed.kg, chunk)
	// Usable: a batch processes (a panic would be FERRY_EINTERNAL), every key group snapshots.
	rows, kinds := restoreRows(false)
	rec := buildRecord(o.in, rows[:40], kinds[:40])
	defer rec.Release()
	if _, r := o.tryProcess(rec); r.code == codeInternal || r.code == codePoisoned {
		t.Fatalf("process after restore: %v", r)
	}
	barrierFlush(t, o.h)
	for kg := range seed.spec.MaxParallelism {
		for range 3 {
			blob, r := snapshotKG(t, o.h, kg)
			if r.code != codeOK {
				t.Fatalf("snapshot of key group %d after restore: %v", kg, r)
			}
			if blob == nil {
				break
			}
		}
	}
	if p := engine.Poisoned(); p != "" {
		t.Fatalf("poisoned: %s", p)
	}
}

// restoreChecked restores a mutated chunk: it must succeed or fail with FERRY_EDATA or
// FERRY_EINVAL, and a failed restore leaves nothing behind: the key group is empty and the
// operator holds no key.
func restoreChecked(t *testing.T, h cHandle, kg int, chunk []byte) {
	t.Helper()
	r := restoreKG(t, h, kg, chunk)
	switch r.code {
	case codeOK:
	case codeData, codeInval:
		if blob, r2 := snapshotKG(t, h, kg); r2.code != codeOK || blob != nil {
			t.Fatalf("after a failed restore (%s): snapshot %v, %d bytes", r.msg, r2, len(blob))
		}
		var e cError
		var st cStats
		if r2 := finish(t, "ferry_operator_stats", int32(ferry_operator_stats(h, &st, &e)), &e); r2.code != codeOK || st.keys != 0 {
			t.Fatalf("after a failed restore (%s): %v, %d keys", r.msg, r2, st.keys)
		}
	default:
		t.Fatalf("restore of a mutated payload: %v", r)
	}
}

func (s restoreSeed) name() string {
	if s.multi != nil {
		return s.multi.name
	}
	return s.spec.Name
}

func FuzzRestore(f *testing.F) {
	seeds := restoreFuzzSetup(f)
	for i := range seeds {
		f.Add([]byte{byte(i)})
	}
	for i := range seeds {
		f.Add([]byte{byte(i), 0, 0, 17, 0xff, 2, 0, 30, 0}) // xor the key length, truncate
		f.Add([]byte{byte(i), 5, 0, 18, 9})                 // a huge varint after the key
	}
	f.Fuzz(runRestoreInput)
}

func pointerTo[T any](v T) *T { return &v }

// barrierFlush flushes as the host does before every checkpoint barrier (the window aggregate's
// bundle ends there); the kinds of restoreFuzzSpecs emit nothing when they flush.
func barrierFlush(t testing.TB, h cHandle) {
	t.Helper()
	var e cError
	out := newCArray()
	defer cFree(unsafe.Pointer(out))
	if r := finish(t, "ferry_operator_flush", int32(flushCall(h, 0, out, &e)), &e); r.code != codeOK {
		t.Fatalf("flush: %v", r)
	}
	if out.release != nil {
		t.Fatal("flush emitted rows")
	}
}
