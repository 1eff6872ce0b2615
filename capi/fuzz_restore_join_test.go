//go:build ferrytest

package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/examples/kind/firstrow"
	"github.com/ferrystream/ferry/intervaljoin"
	"github.com/ferrystream/ferry/regularjoin"
	"github.com/ferrystream/ferry/windowjoin"
)

// multiInputFuzzSpecs are FuzzRestore's specs of kinds with several inputs, which the
// group-aggregate-shaped spec type cannot describe: the spec JSON, one schema per input, and the
// steps that build state covering the kind's payload.
var multiInputFuzzSpecs = map[string][]multiInputSpec{
	intervaljoin.Kind: {{
		kind: intervaljoin.Kind,
		name: "restore-interval-join",
		json: `{"kind":"interval_join","name":"restore-interval-join","inputs":[` +
			`{"fields":[{"name":"k","type":"BIGINT"},{"name":"t","type":"TIMESTAMP(3)"},{"name":"s","type":"VARCHAR"},{"name":"b","type":"BOOLEAN"},{"name":"d","type":"DECIMAL(20, 2)"}],"keys":[0]},` +
			`{"fields":[{"name":"k","type":"BIGINT"},{"name":"t","type":"TIMESTAMP(3)"},{"name":"w","type":"VARCHAR"}],"keys":[0]}],` +
			`"max_parallelism":128,"chunk_rows":7,"params":{"join_type":"FULL","time_mode":"rowtime","left_lower_bound":-5,"left_upper_bound":10,` +
			`"allowed_lateness":0,"min_clean_up_interval_ms":0,"left_time_index":1,"right_time_index":1,"filter_nulls":[true]}}`,
		schemas: []*arrow.Schema{
			arrow.NewSchema([]arrow.Field{
				{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
				{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
				{Name: "d", Type: &arrow.Decimal128Type{Precision: 20, Scale: 2}, Nullable: true},
				{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
			}, nil),
			arrow.NewSchema([]arrow.Field{
				{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
				{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Millisecond}, Nullable: true},
				{Name: "w", Type: arrow.BinaryTypes.String, Nullable: true},
				{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
			}, nil),
		},
		rows: func(input, i int) []any {
			var k any = int64(i % 9)
			if i%13 == 0 {
				k = nil
			}
			t := tsMs(int64(i*3 - 40 + i%11))
			if input == 0 {
				return []any{k, t, fmt.Sprintf("left-%d-%s", i, "xxxxxxxx"[:i%8]), i%3 == 0, dec(fmt.Sprintf("%d.%02d", i%50-20, i%100))}
			}
			return []any{k, t, fmt.Sprintf("r%d", i)}
		},
		watermarks: []int64{-100, 20, 35},
	}},
}

func init() {
	// The example kind: its keys alone, with their last-write times under TTL.
	multiInputFuzzSpecs[firstrow.Kind] = []multiInputSpec{{
		kind: firstrow.Kind,
		name: "restore-first-row",
		json: `{"kind":"example_first_row","name":"restore-first-row","inputs":[` +
			`{"fields":[{"name":"k","type":"BIGINT"},{"name":"s","type":"VARCHAR"}],"keys":[0,1]}],` +
			`"max_parallelism":128,"params":{"state_ttl_ms":1099511627776}}`,
		schemas: []*arrow.Schema{arrow.NewSchema([]arrow.Field{
			{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
		}, nil)},
		rows: func(_, i int) []any {
			var k any = int64(i % 17)
			if i%11 == 0 {
				k = nil
			}
			return []any{k, fmt.Sprintf("s%d", i%5)}
		},
	}}
}

// distinctMap encodes a DISTINCT value set of BIGINT keys as the local aggregate writes it into a
// partial row (docs/abi.md#data-views): one bitmask word per entry.
func distinctMap(entries ...[2]int64) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 1)
	for _, e := range entries {
		b = append(b, 0)
		b = binary.LittleEndian.AppendUint64(b, uint64(e[0]))
		b = binary.LittleEndian.AppendUint64(b, uint64(e[1]))
	}
	return b
}

func init() {
	// The interval join with EARLY_FIRE: fired bits (event-time early fire at the watermarks),
	// and pending processing-time early fires with their schedule (on a row-time join).
	base := multiInputFuzzSpecs[intervaljoin.Kind][0]
	for _, ef := range []struct{ name, params string }{
		{"restore-interval-join-early-fire", `"early_fire_delay_ms":3,`},
		{"restore-interval-join-proctime-early-fire", `"early_fire_delay_ms":1000,"early_fire_time_mode":"proctime",`},
	} {
		s := base
		s.name = ef.name
		s.json = strings.Replace(strings.Replace(base.json, base.name, ef.name, 1), `"filter_nulls"`, ef.params+`"filter_nulls"`, 1)
		multiInputFuzzSpecs[intervaljoin.Kind] = append(multiInputFuzzSpecs[intervaljoin.Kind], s)
	}

	// The window join's state: per key, windows with the handles of their rows on both sides
	// (NULL keys on the left, the preserved side of LEFT, only: the right's carry NoRow), their
	// timers, and in the snapshot the rows' bytes, sent on input 2 before it.
	wjRow := func(input, i int) (k any, handle int64) {
		k, handle = int64(i%9), int64(i)
		if i%13 == 0 {
			k = nil
			if input == 1 {
				handle = windowjoin.NoRow
			}
		}
		return k, handle
	}
	const wjInput = `{"fields":[{"name":"k","type":"BIGINT"},{"name":"we","type":"TIMESTAMP(3)","nullable":false},` +
		`{"name":"h","type":"BIGINT","nullable":false}],"keys":[0]}`
	wjSchema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "we", Type: &arrow.TimestampType{Unit: arrow.Millisecond}},
		{Name: "h", Type: arrow.PrimitiveTypes.Int64},
		{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
	}, nil)
	multiInputFuzzSpecs[windowjoin.Kind] = []multiInputSpec{{
		kind: windowjoin.Kind,
		name: "restore-window-join",
		json: `{"kind":"window_join","name":"restore-window-join","inputs":[` + wjInput + `,` + wjInput + `,` +
			`{"fields":[{"name":"side","type":"INT","nullable":false},{"name":"handle","type":"BIGINT","nullable":false},{"name":"row","type":"BYTES","nullable":false}]}],` +
			`"max_parallelism":128,"chunk_rows":7,"params":{"join_type":"LEFT","left_window_end_index":1,"right_window_end_index":1,"filter_nulls":[true]}}`,
		schemas: []*arrow.Schema{wjSchema, wjSchema, arrow.NewSchema([]arrow.Field{
			{Name: "side", Type: arrow.PrimitiveTypes.Int32},
			{Name: "handle", Type: arrow.PrimitiveTypes.Int64},
			{Name: "row", Type: arrow.BinaryTypes.Binary},
			{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
		}, nil)},
		rows: func(input, i int) []any {
			k, h := wjRow(input, i)
			return []any{k, tsMs(int64(i%4*10 + 10)), h}
		},
		watermarks: []int64{-100, 5, 15},
		// The bytes of every row build and usable send (more than the state holds: those of
		// fired windows too), of varied lengths.
		beforeSnapshot: func() [][]any {
			var rows [][]any
			for input := range 2 {
				for i := range 120 {
					if _, h := wjRow(input, i); h != windowjoin.NoRow {
						rows = append(rows, []any{int32(input), h, []byte(fmt.Sprintf("%c%d-%s", "lr"[input], i, "xxxxxxxx"[:i%8]))})
					}
				}
			}
			return rows
		},
	}}

	// The incremental aggregate's state is the DISTINCT value sets per partial key (k, bucket):
	// partial rows of COUNT(DISTINCT x), COUNT(DISTINCT x) FILTER (bits 1 and 2 of one set) and
	// COUNT(*).
	multiInputFuzzSpecs[agg.IncrementalKind] = []multiInputSpec{{
		kind: agg.IncrementalKind,
		name: "restore-incremental",
		json: `{"kind":"incremental_group_aggregate","name":"restore-incremental","inputs":[` +
			`{"fields":[{"name":"k","type":"BIGINT"},{"name":"b","type":"BIGINT"},{"name":"c0","type":"BIGINT"},` +
			`{"name":"c1","type":"BIGINT"},{"name":"c2","type":"BIGINT"},{"name":"d0","type":"BYTES"}],"keys":[0,1]}],` +
			`"max_parallelism":128,"params":{"local_input":[{"name":"k","type":"BIGINT"},{"name":"b","type":"BIGINT"},` +
			`{"name":"x","type":"BIGINT"}],"aggs":[{"func":"COUNT","args":[2],"distinct":true},` +
			`{"func":"COUNT","args":[2],"distinct":true},{"func":"COUNT"}],"final_keys":[0]}}`,
		schemas: []*arrow.Schema{arrow.NewSchema([]arrow.Field{
			{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "c0", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "c1", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "c2", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: "d0", Type: arrow.BinaryTypes.Binary, Nullable: true},
			{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
		}, nil)},
		rows: func(_, i int) []any {
			x := int64(i * 7 % 23)
			return []any{int64(i % 9), int64(i % 4), int64(2), int64(1), int64(3),
				distinctMap([2]int64{x, 1 + int64(i%2)*2}, [2]int64{x + 100, 1})}
		},
	}}
	// With idle-state TTL every entry of the value sets carries its last-write time.
	ttl := multiInputFuzzSpecs[agg.IncrementalKind][0]
	ttl.name = "restore-incremental-ttl"
	ttl.json = strings.Replace(strings.Replace(ttl.json, `"final_keys":[0]`, `"final_keys":[0],"state_ttl_ms":1099511627776`, 1),
		"restore-incremental", ttl.name, 1)
	multiInputFuzzSpecs[agg.IncrementalKind] = append(multiInputFuzzSpecs[agg.IncrementalKind], ttl)
}

func init() {
	// The regular join's state: per key, FULL, the left side's rows with their counts
	// (no_unique_key: every row repeats every 9 rows) and the right side's by unique key
	// (input_has_unique_key: ids repeat, replacing rows), both with association counts; LEFT,
	// one row per key on the left (join_key_contains_unique_key). NULL keys are not stored.
	const rjInput = `{"fields":[{"name":"k","type":"BIGINT"},{"name":"id","type":"BIGINT"},{"name":"s","type":"VARCHAR"}],"keys":[0]}`
	rjSchema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
	}, nil)
	spec := func(name, params string) multiInputSpec {
		return multiInputSpec{
			kind: regularjoin.Kind,
			name: name,
			json: `{"kind":"regular_join","name":"` + name + `","inputs":[` + rjInput + `,` + rjInput + `],` +
				`"max_parallelism":128,"chunk_rows":7,"params":{"filter_nulls":[true],` + params + `}}`,
			schemas: []*arrow.Schema{rjSchema, rjSchema},
			rows: func(input, i int) []any {
				var k any = int64(i % 9)
				if i%13 == 0 {
					k = nil
				}
				if input == 0 {
					return []any{k, int64(i % 3), fmt.Sprintf("left-%s", "xxxxxxxx"[:i%9%8])}
				}
				return []any{k, int64(i % 40), fmt.Sprintf("r%d", i)}
			},
		}
	}
	multiInputFuzzSpecs[regularjoin.Kind] = []multiInputSpec{
		spec("restore-regular-join", `"join_type":"FULL","left_layout":"no_unique_key","right_layout":"input_has_unique_key","right_unique_key":[1]`),
		spec("restore-regular-join-unique", `"join_type":"LEFT","left_layout":"join_key_contains_unique_key","left_unique_key":[0],"right_layout":"no_unique_key"`),
	}
	// mini_batch: the same state, built through bundles; the fingerprint is that of the join
	// without mini_batch.
	mb := spec("restore-regular-join-mini-batch", `"join_type":"RIGHT","left_layout":"input_has_unique_key","left_unique_key":[1],"right_layout":"no_unique_key","mini_batch":true`)
	mb.bundles = true
	// ANTI: the left rows with their association counts by unique key, the right side's rows
	// with their counts.
	anti := spec("restore-anti-join", `"join_type":"ANTI","left_layout":"input_has_unique_key","left_unique_key":[1],"right_layout":"no_unique_key"`)
	multiInputFuzzSpecs[regularjoin.Kind] = append(multiInputFuzzSpecs[regularjoin.Kind], mb, anti)
}

// multiInputSpec is one FuzzRestore spec of a kind with several inputs. rows gives row i of an
// input; the state is built by 120 rows per input in alternating batches of 10, with the
// watermarks advanced after every 80 rows (matched flags, expired buckets, pending timers).
type multiInputSpec struct {
	kind       string
	name       string
	json       string
	schemas    []*arrow.Schema
	rows       func(input, i int) []any
	watermarks []int64
	// beforeSnapshot, if set, gives the rows sent on the spec's last input right before a
	// snapshot (the window join's row bytes): rows feeds the other inputs only, and build
	// checks that a snapshot fails with FERRY_ESTATE before they are sent.
	beforeSnapshot func() [][]any
	// bundles: the operator queues its rows until a flush (a mini-batch bundle's end); build
	// checks that a snapshot fails with FERRY_ESTATE while rows are queued, and build and usable
	// flush before a snapshot.
	bundles bool
}

// dataInputs is the number of inputs rows feeds.
func (s *multiInputSpec) dataInputs() int {
	if s.beforeSnapshot != nil {
		return len(s.schemas) - 1
	}
	return len(s.schemas)
}

func (s *multiInputSpec) maxParallelism(t testing.TB) int {
	h, err := engine.ParseSpec([]byte(s.json))
	if err != nil {
		t.Fatal(err)
	}
	return h.MaxParallelism
}

func (s *multiInputSpec) fingerprint(t testing.TB) uint64 {
	h, err := engine.ParseSpec([]byte(s.json))
	if err != nil {
		t.Fatal(err)
	}
	op, err := enginetest.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	return op.State().Fingerprint()
}

// multiOp is an open operator of a multiInputSpec.
type multiOp struct {
	t   testing.TB
	s   *multiInputSpec
	h   cHandle
	out *arrow.Schema
}

func openMulti(t testing.TB, s *multiInputSpec) *multiOp {
	t.Helper()
	cs := cString(s.json)
	defer cFree(unsafe.Pointer(cs))
	var ptrs []*cSchema
	var exported []cSchemaIn
	for _, sc := range s.schemas {
		e := exportSchema(sc)
		exported = append(exported, e)
		ptrs = append(ptrs, e.s)
	}
	list := schemaList(ptrs...)
	defer cFree(unsafe.Pointer(list))
	var h cHandle
	var e cError
	r := finish(t, "ferry_operator_open", int32(ferry_operator_open(cs, nil, cInt32(len(ptrs)), list, &h, &e)), &e)
	for i := range exported {
		exported[i].consumed(t, "ferry_operator_open")
	}
	if r.code != codeOK {
		t.Fatalf("open %s: %v", s.name, r)
	}
	o := &multiOp{t: t, s: s, h: h}
	o.out = (&testOp{t: t, h: h}).outputSchema()
	t.Cleanup(func() {
		var e cError
		ferry_operator_close(o.h, &e)
		takeError(&e)
	})
	return o
}

// release imports and frees one output chunk.
func (o *multiOp) release(out *cArray) {
	if out.release == nil {
		cFree(unsafe.Pointer(out))
		return
	}
	rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(out)), o.out)
	cFree(unsafe.Pointer(out))
	if err != nil {
		o.t.Fatalf("arrow-go cannot import a chunk: %v", err)
	}
	rec.Release()
}

// drain fetches and frees the remaining chunks of a call.
func (o *multiOp) drain(more cInt32) result {
	for more == 1 {
		out := newCArray()
		var e cError
		r := finish(o.t, "ferry_operator_next", int32(ferry_operator_next(o.h, out, &more, &e)), &e)
		o.release(out)
		if r.code != codeOK {
			return r
		}
	}
	return result{}
}

// process sends rows [from, to) of input and drains the output.
func (o *multiOp) process(input, from, to int) result {
	o.t.Helper()
	var rows [][]any
	for i := from; i < to; i++ {
		rows = append(rows, o.s.rows(input, i))
	}
	return o.processRows(input, rows)
}

// processRows sends rows on input and drains the output.
func (o *multiOp) processRows(input int, rows [][]any) result {
	o.t.Helper()
	rec := buildRecord(o.s.schemas[input], rows, make([]int8, len(rows)))
	defer rec.Release()
	in := exportInput(rec)
	out := newCArray()
	more := cInt32(0)
	var e cError
	r := finish(o.t, "ferry_operator_process", int32(processOn(o.h, input, len(o.s.schemas), in.arr, 0, out, &more, &e)), &e)
	in.consumed(o.t, "ferry_operator_process")
	o.release(out)
	if r.code != codeOK {
		return r
	}
	return o.drain(more)
}

// flush ends a bundle (ferry_operator_flush) and drains the output.
func (o *multiOp) flush() result {
	out := newCArray()
	more := cInt32(0)
	var e cError
	r := finish(o.t, "ferry_operator_flush", int32(ferry_operator_flush(o.h, 0, out, &more, &e)), &e)
	o.release(out)
	if r.code != codeOK {
		return r
	}
	return o.drain(more)
}

func (o *multiOp) advance(wm int64) result {
	out := newCArray()
	more := cInt32(0)
	var e cError
	r := finish(o.t, "ferry_operator_advance", int32(ferry_operator_advance(o.h, cInt64(wm), 0, out, &more, &e)), &e)
	o.release(out)
	if r.code != codeOK {
		return r
	}
	return o.drain(more)
}

// build feeds the spec's state-building steps.
func (o *multiOp) build() {
	o.t.Helper()
	w := 0
	for i := 0; i < 120; i += 10 {
		for input := range o.s.dataInputs() {
			if r := o.process(input, i, i+10); r.code != codeOK {
				o.t.Fatalf("%s: process: %v", o.s.name, r)
			}
		}
		if i%80 == 70 && w < len(o.s.watermarks) {
			if r := o.advance(o.s.watermarks[w]); r.code != codeOK {
				o.t.Fatalf("%s: advance: %v", o.s.name, r)
			}
			w++
		}
	}
	if o.s.bundles {
		if _, r := snapshotKG(o.t, o.h, 0); r.code != codeState {
			o.t.Fatalf("%s: a snapshot with queued rows: %v, want FERRY_ESTATE", o.s.name, r)
		}
		if r := o.flush(); r.code != codeOK {
			o.t.Fatalf("%s: flush: %v", o.s.name, r)
		}
	}
	if o.s.beforeSnapshot != nil {
		if _, r := snapshotKG(o.t, o.h, 0); r.code != codeState {
			o.t.Fatalf("%s: a snapshot before the rows of input %d: %v, want FERRY_ESTATE", o.s.name, len(o.s.schemas)-1, r)
		}
		if r := o.sendBeforeSnapshot(); r.code != codeOK {
			o.t.Fatalf("%s: the rows before a snapshot: %v", o.s.name, r)
		}
	}
}

// sendBeforeSnapshot sends the spec's beforeSnapshot rows, if any.
func (o *multiOp) sendBeforeSnapshot() result {
	o.t.Helper()
	if o.s.beforeSnapshot == nil {
		return result{}
	}
	return o.processRows(len(o.s.schemas)-1, o.s.beforeSnapshot())
}

// usable checks that a restored operator processes rows of every input, fires timers and
// snapshots every key group.
func (o *multiOp) usable(t *testing.T) {
	for input := range o.s.dataInputs() {
		if r := o.process(input, 0, 20); r.code == codeInternal || r.code == codePoisoned {
			t.Fatalf("process after restore: %v", r)
		}
	}
	if r := o.advance(math.MaxInt64); r.code == codeInternal || r.code == codePoisoned {
		t.Fatalf("advance after restore: %v", r)
	}
	if r := o.sendBeforeSnapshot(); r.code == codeInternal || r.code == codePoisoned {
		t.Fatalf("the rows before a snapshot after restore: %v", r)
	}
	if o.s.bundles {
		if r := o.flush(); r.code == codeInternal || r.code == codePoisoned {
			t.Fatalf("flush after restore: %v", r)
		}
	}
	for kg := range o.s.maxParallelism(t) {
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
}
