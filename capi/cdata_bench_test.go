//go:build ferrytest

package main

// Ferry's own Arrow C Data import and export against arrow-go's cdata package, per batch, on the
// same batch memory (docs/dependencies.md, "Arrow C Data import and export").
//
//	go test -run '^$' -bench 'BenchmarkCData' -count 8 ./capi/ | benchstat -col /impl -
//
// Import ends, on both sides, with column views a kernel reads directly (Ferry: a validated
// engine.Batch; arrow-go: the typed arrays' value slices) and with the input released through its
// release callback, as ferry_operator_process does. Export starts from an empty output batch of
// the same layout and ends with the consumer releasing the exported ArrowArray tree.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/memory/mallocator"

	"github.com/ferrystream/ferry/engine"
)

// The batch shape of the comparison: a key, a nullable value, VARCHAR and DECIMAL(18,2) columns,
// then the RowKind column.
var (
	cdataTypes = []engine.Type{
		{ID: engine.BigInt},
		{ID: engine.BigInt, Nullable: true},
		{ID: engine.Varchar, Nullable: true},
		{ID: engine.Decimal, Precision: 18, Scale: 2, Nullable: true},
	}
	cdataNames  = []string{"k", "v", "s", "d"}
	cdataSchema = func() *arrow.Schema {
		var fs []arrow.Field
		for i, t := range cdataTypes {
			fs = append(fs, arrow.Field{Name: cdataNames[i], Type: arrowType(t), Nullable: t.Nullable})
		}
		fs = append(fs, arrow.Field{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8})
		return arrow.NewSchema(fs, nil)
	}()
)

// cdataBatch is one input batch in C memory the way the JVM hands it over: a struct array with
// one child per column, every buffer, pointer array and struct allocated separately. Its release
// callbacks only count (trackArray), so the same memory can be imported again after re-arming.
type cdataBatch struct {
	rows     int
	root     *cArray
	kids     []*cArray
	tracker  *cTracker // the root's
	releases []unsafe.Pointer
	offs     []int32 // the VARCHAR column's offsets
	strBytes int     // the VARCHAR column's data size
}

// newCDataBatch builds a batch of rows rows from seed; alloc returns zeroed memory that outlives
// the batch (cAlloc, or guardArena.alloc so that reads past a buffer fault).
func newCDataBatch(rows int, seed uint64, alloc func(int) unsafe.Pointer) *cdataBatch {
	r := rand.New(rand.NewPCG(seed, uint64(rows)))
	in := &cdataBatch{rows: rows}
	bitmap := func() (unsafe.Pointer, []byte) {
		p := alloc((rows + 7) / 8)
		return p, unsafe.Slice((*byte)(p), (rows+7)/8)
	}
	// nulls draws a validity bitmap with one NULL in 16 on average.
	nulls := func() (unsafe.Pointer, int, func(int) bool) {
		p, bits := bitmap()
		n := 0
		for i := range rows {
			if r.IntN(16) == 0 {
				n++
			} else {
				bits[i>>3] |= 1 << (i & 7)
			}
		}
		return p, n, func(i int) bool { return bits[i>>3]&(1<<(i&7)) == 0 }
	}
	child := func(nullCount int, bufs ...unsafe.Pointer) *cArray {
		a := (*cArray)(alloc(sizeofArray))
		bp := alloc(8 * len(bufs))
		copy(unsafe.Slice((*unsafe.Pointer)(bp), len(bufs)), bufs)
		v := view(a)
		v.Length, v.NullCount, v.NBuffers, v.Buffers = int64(rows), int64(nullCount), int64(len(bufs)), bp
		trackArray(a, (*cTracker)(alloc(int(unsafe.Sizeof(cTracker{})))), nil, 0)
		return a
	}

	key := alloc(8 * rows)
	keys := unsafe.Slice((*int64)(key), rows)
	for i := range keys {
		keys[i] = r.Int64N(1 << 20)
	}
	in.kids = append(in.kids, child(0, nil, key))

	vValid, vNulls, _ := nulls()
	val := alloc(8 * rows)
	vals := unsafe.Slice((*int64)(val), rows)
	for i := range vals {
		vals[i] = r.Int64N(1_000_000)
	}
	in.kids = append(in.kids, child(vNulls, vValid, val))

	sValid, sNulls, sIsNull := nulls()
	offs := alloc(4 * (rows + 1))
	in.offs = unsafe.Slice((*int32)(offs), rows+1)
	var text []byte
	for i := range rows {
		if !sIsNull(i) {
			text = fmt.Appendf(text, "item-%d", r.IntN(1_000_000))
		}
		in.offs[i+1] = int32(len(text))
	}
	in.strBytes = len(text)
	data := alloc(len(text))
	copy(unsafe.Slice((*byte)(data), len(text)), text)
	in.kids = append(in.kids, child(sNulls, sValid, offs, data))

	dValid, dNulls, _ := nulls()
	dec := alloc(16 * rows)
	decs := unsafe.Slice((*byte)(dec), 16*rows)
	for i := range rows {
		v := r.Int64N(1_000_000_000_000) - 500_000_000_000
		binary.LittleEndian.PutUint64(decs[16*i:], uint64(v))
		binary.LittleEndian.PutUint64(decs[16*i+8:], uint64(v>>63))
	}
	in.kids = append(in.kids, child(dNulls, dValid, dec))

	kinds := alloc(rows)
	for i := range unsafe.Slice((*byte)(kinds), rows) {
		unsafe.Slice((*byte)(kinds), rows)[i] = [...]byte{0, 0, 0, 0, 0, 0, 0, 1, 2, 3}[i%10] // +I, -U, +U, -D
	}
	in.kids = append(in.kids, child(0, nil, kinds))

	in.root = (*cArray)(alloc(sizeofArray))
	kp := (**cArray)(alloc(8 * len(in.kids)))
	copy(unsafe.Slice(kp, len(in.kids)), in.kids)
	rv := view(in.root)
	rv.Length, rv.NBuffers, rv.Buffers = int64(rows), 1, alloc(8)
	rv.NChildren, rv.Children = int64(len(in.kids)), unsafe.Pointer(kp)
	in.tracker = (*cTracker)(alloc(int(unsafe.Sizeof(cTracker{}))))
	trackArray(in.root, in.tracker, kp, len(in.kids))
	for _, a := range append([]*cArray{in.root}, in.kids...) {
		in.releases = append(in.releases, view(a).Release)
	}
	return in
}

// arm restores the release callbacks an import consumed and returns the root.
func (in *cdataBatch) arm() *cArray {
	view(in.root).Release = in.releases[0]
	for i, k := range in.kids {
		view(k).Release = in.releases[i+1]
	}
	return in.root
}

// buffers returns a's buffer pointer array.
func buffers(a *cArray) []unsafe.Pointer {
	v := view(a)
	return unsafe.Slice((*unsafe.Pointer)(v.Buffers), v.NBuffers)
}

// cArena frees the C memory of benchmark batches at the end of a benchmark.
func cArena(b testing.TB) func(int) unsafe.Pointer {
	var ptrs []unsafe.Pointer
	b.Cleanup(func() {
		for _, p := range ptrs {
			cFree(p)
		}
	})
	return func(n int) unsafe.Pointer {
		p := cAlloc(n)
		ptrs = append(ptrs, p)
		return p
	}
}

var cdataRows = []int{1, 64, 1024, 4096}

// cpuLoop runs body in b.Loop on one locked OS thread and reports, besides the wall time, the
// CPU time that thread used per iteration (cpu-ns/op). On a machine shared with other work the
// CPU time is the steadier figure: it leaves out the time the thread waited for a core. It also
// leaves out work the Go runtime does on other threads (background GC), which B/op and allocs/op
// stand for.
func cpuLoop(b *testing.B, body func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	n := 0
	start := threadCPU()
	for b.Loop() {
		body()
		n++
	}
	b.ReportMetric(float64(threadCPU()-start)/float64(n), "cpu-ns/op")
}

// threadCPU is the user and system time the calling OS thread has used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cdataSink keeps the views alive so the compiler cannot drop them.
var cdataSink int

// ferryViews touches each view of b the way a kernel starts reading them.
func ferryViews(b *engine.Batch) int {
	n := b.Len
	return len(engine.Values[int64](&b.Cols[0], n)) + len(engine.Values[int64](&b.Cols[1], n)) + len(b.Cols[1].Valid) +
		len(b.Cols[2].Offs) + len(b.Cols[2].Data) + len(b.Cols[2].Valid) + len(b.Cols[3].Data) + len(b.Cols[3].Valid) +
		len(b.Kinds)
}

// arrowViews takes the typed arrays and value slices of rec that a kernel reads.
func arrowViews(rec arrow.RecordBatch) int {
	k := rec.Column(0).(*array.Int64)
	v := rec.Column(1).(*array.Int64)
	s := rec.Column(2).(*array.String)
	d := rec.Column(3).(*array.Decimal128)
	kinds := rec.Column(4).(*array.Int8)
	return len(k.Int64Values()) + len(v.Int64Values()) + len(v.NullBitmapBytes()) + len(s.ValueOffsets()) +
		len(s.ValueBytes()) + len(s.NullBitmapBytes()) + len(d.Values()) + len(d.NullBitmapBytes()) + len(kinds.Int8Values())
}

// BenchmarkCDataImport: one input batch from C structs to column views, released.
//
//	ferry: engine.Importer.Import (every header, buffer count, VARCHAR offset, NOT NULL column
//	       and RowKind byte validated), then the release callback.
//	arrow-go: cdata.ImportCRecordBatchWithSchema (schema imported once, as for a stream), the
//	       typed arrays' value slices, then RecordBatch.Release, which calls the release callback.
//	arrow-go+checks: Ferry's Import first, then arrow-go's: what Ferry would run to keep its
//	       contract on top of arrow-go (docs/dependencies.md).
func BenchmarkCDataImport(b *testing.B) {
	for _, rows := range cdataRows {
		in := newCDataBatch(rows, 1, cArena(b))
		im := engine.Importer{Types: cdataTypes, Names: cdataNames}
		var bt engine.Batch
		check := func(b *testing.B, arms int64) {
			if got := trackerReleases(in.tracker); got != arms {
				b.Fatalf("input released %d times, want %d", got, arms)
			}
		}
		b.Run(fmt.Sprintf("rows=%d/impl=ferry", rows), func(b *testing.B) {
			b.ReportAllocs()
			base := trackerReleases(in.tracker)
			cpuLoop(b, func() {
				root := in.arm()
				if err := im.Import(view(root), &bt); err != nil {
					b.Fatal(err)
				}
				cdataSink += ferryViews(&bt)
				bt.Forget()
				releaseArray(root)
			})
			check(b, base+int64(b.N))
		})
		b.Run(fmt.Sprintf("rows=%d/impl=arrow-go", rows), func(b *testing.B) {
			b.ReportAllocs()
			base := trackerReleases(in.tracker)
			cpuLoop(b, func() {
				root := in.arm()
				rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(root)), cdataSchema)
				if err != nil {
					b.Fatal(err)
				}
				cdataSink += arrowViews(rec)
				rec.Release()
			})
			check(b, base+int64(b.N))
		})
		b.Run(fmt.Sprintf("rows=%d/impl=arrow-go+checks", rows), func(b *testing.B) {
			b.ReportAllocs()
			base := trackerReleases(in.tracker)
			cpuLoop(b, func() {
				root := in.arm()
				if err := im.Import(view(root), &bt); err != nil {
					b.Fatal(err)
				}
				bt.Forget()
				rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(root)), cdataSchema)
				if err != nil {
					b.Fatal(err)
				}
				cdataSink += arrowViews(rec)
				rec.Release()
			})
			check(b, base+int64(b.N))
		})
	}
}

// cdataVarBytes is the VARCHAR size of an export benchmark batch (about what newCDataBatch
// generates).
func cdataVarBytes(rows int) []int { return []int{0, 0, 10 * rows, 0} }

// markNulls sets the same NULLs (one row in 16) in every nullable column of an output batch,
// then computes its null counts: the part of an operator's output step both exports share.
func markNulls(o *engine.OutBatch) {
	for c := range o.Cols[:len(o.Cols)-1] {
		col := &o.Cols[c]
		if col.Valid == nil {
			continue
		}
		for j := c; j < o.Len; j += 16 {
			col.SetNull(j)
		}
	}
	o.Finish()
}

// mallocSlab allocates output slabs from a Mallocator, so arrow-go can own and free them.
type mallocSlab struct{ mem *mallocator.Mallocator }

func (m mallocSlab) Alloc(n int) []byte { return m.mem.Allocate(n) }

// arrowRecordOver wraps the columns of an output batch laid out in slab (owned by a
// memory.Buffer) as an arrow-go record, without copying: each Arrow buffer is a slice of the
// slab that keeps it alive.
func arrowRecordOver(o *engine.OutBatch, slab *memory.Buffer, cols []arrow.Array) arrow.RecordBatch {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(o.Slab)))
	sub := func(p unsafe.Pointer, n int) *memory.Buffer {
		if p == nil {
			return nil
		}
		return memory.SliceBuffer(slab, int(uintptr(p)-base), n)
	}
	fields := cdataSchema.Fields()
	for i := range o.Cols {
		c := &o.Cols[i]
		bufs := []*memory.Buffer{sub(ptr(c.Valid), len(c.Valid))}
		if c.Type.ID == engine.Varchar {
			bufs = append(bufs, sub(unsafe.Pointer(unsafe.SliceData(c.Offs)), 4*len(c.Offs)), sub(ptr(c.Data), len(c.Data)))
		} else {
			bufs = append(bufs, sub(ptr(c.Data), len(c.Data)))
		}
		data := array.NewData(fields[i].Type, o.Len, bufs, nil, c.NullCount, 0)
		cols[i] = array.MakeFromData(data)
		data.Release()
		for _, buf := range bufs {
			if buf != nil {
				buf.Release()
			}
		}
	}
	rec := array.NewRecordBatch(cdataSchema, cols, int64(o.Len))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// arrowRecordBuffers builds the same output batch the way arrow-go code usually does: one
// Mallocator allocation per Arrow buffer.
func arrowRecordBuffers(mem *mallocator.Mallocator, rows int, varBytes []int, cols []arrow.Array) arrow.RecordBatch {
	fields := cdataSchema.Fields()
	buf := func(n int) *memory.Buffer { return memory.NewBufferWithAllocator(mem.Allocate(n), mem) }
	for i, f := range fields {
		var bufs []*memory.Buffer
		nulls := 0
		if f.Nullable {
			valid := buf((rows + 7) / 8)
			bits := valid.Bytes()
			for j := range bits {
				bits[j] = 0xff
			}
			for j := i; j < rows; j += 16 {
				bits[j>>3] &^= 1 << (j & 7)
				nulls++
			}
			if nulls == 0 {
				valid.Release()
				valid = nil
			}
			bufs = append(bufs, valid)
		} else {
			bufs = append(bufs, nil)
		}
		switch f.Type.ID() {
		case arrow.STRING:
			bufs = append(bufs, buf(4*(rows+1)), buf(varBytes[i]))
		case arrow.INT8:
			bufs = append(bufs, buf(rows))
		case arrow.DECIMAL128:
			bufs = append(bufs, buf(16*rows))
		default:
			bufs = append(bufs, buf(8*rows))
		}
		data := array.NewData(f.Type, rows, bufs, nil, nulls, 0)
		cols[i] = array.MakeFromData(data)
		data.Release()
		for _, b := range bufs {
			if b != nil {
				b.Release()
			}
		}
	}
	rec := array.NewRecordBatch(cdataSchema, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// BenchmarkCDataExport: one output batch from an empty layout to an ArrowArray tree in C memory,
// released by its consumer (here Go through C; from the JVM the release runs on a Java thread).
//
//	ferry: engine.OutBatch in one C slab (ferry_slab_alloc), operator.export (ferry_export_batch:
//	       one more allocation for every struct and pointer array); the release is C only.
//	arrow-go: the same one-slab layout, allocated by arrow-go's Mallocator and wrapped as arrays
//	       (memory.SliceBuffer per Arrow buffer), exported by cdata.ExportArrowRecordBatch; the
//	       release calls back into Go for every array of the tree.
//	arrow-go-buffers: as arrow-go, but one Mallocator allocation per Arrow buffer.
func BenchmarkCDataExport(b *testing.B) {
	out := newCArray()
	defer cFree(unsafe.Pointer(out))
	release := func(b *testing.B) {
		if out.release == nil {
			b.Fatal("nothing exported")
		}
		releaseArray(out)
		*view(out) = engine.CArray{}
	}
	for _, rows := range cdataRows {
		varBytes := cdataVarBytes(rows)
		b.Run(fmt.Sprintf("rows=%d/impl=ferry", rows), func(b *testing.B) {
			b.ReportAllocs()
			o := &operator{}
			ob := engine.OutBatch{Alloc: &o.alloc}
			cpuLoop(b, func() {
				if err := ob.Init(cdataTypes, rows, varBytes); err != nil {
					b.Fatal(err)
				}
				markNulls(&ob)
				if err := o.export(out, &ob); err != nil {
					b.Fatal(err)
				}
				release(b)
			})
			if n := outstanding(); n != 0 {
				b.Fatalf("%d output bytes outstanding", n)
			}
		})
		b.Run(fmt.Sprintf("rows=%d/impl=arrow-go", rows), func(b *testing.B) {
			b.ReportAllocs()
			mem := mallocator.NewMallocator()
			ob := engine.OutBatch{Alloc: mallocSlab{mem}}
			cols := make([]arrow.Array, len(cdataTypes)+1)
			cpuLoop(b, func() {
				if err := ob.Init(cdataTypes, rows, varBytes); err != nil {
					b.Fatal(err)
				}
				markNulls(&ob)
				slab := memory.NewBufferWithAllocator(ob.Slab, mem)
				rec := arrowRecordOver(&ob, slab, cols)
				slab.Release()
				cdata.ExportArrowRecordBatch(rec, (*cdata.CArrowArray)(unsafe.Pointer(out)), nil)
				rec.Release()
				release(b)
			})
			if n := mem.AllocatedBytes(); n != 0 {
				b.Fatalf("%d bytes of Mallocator memory outstanding", n)
			}
		})
		b.Run(fmt.Sprintf("rows=%d/impl=arrow-go-buffers", rows), func(b *testing.B) {
			b.ReportAllocs()
			mem := mallocator.NewMallocator()
			cols := make([]arrow.Array, len(cdataTypes)+1)
			cpuLoop(b, func() {
				rec := arrowRecordBuffers(mem, rows, varBytes, cols)
				cdata.ExportArrowRecordBatch(rec, (*cdata.CArrowArray)(unsafe.Pointer(out)), nil)
				rec.Release()
				release(b)
			})
			if n := mem.AllocatedBytes(); n != 0 {
				b.Fatalf("%d bytes of Mallocator memory outstanding", n)
			}
		})
	}
}

// TestCDataBenchBatches checks the benchmarks compare like with like: the input batch imports
// into the same values on both sides, and both exports carry the same batch.
func TestCDataBenchBatches(t *testing.T) {
	for _, rows := range cdataRows {
		in := newCDataBatch(rows, 1, cArena(t))
		im := engine.Importer{Types: cdataTypes, Names: cdataNames}
		var bt engine.Batch
		if err := im.Import(view(in.arm()), &bt); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range rows {
			vals := []string{fmt.Sprint(engine.Values[int64](&bt.Cols[0], rows)[i])}
			if bt.Cols[1].IsNull(i) {
				vals = append(vals, "null")
			} else {
				vals = append(vals, fmt.Sprint(engine.Values[int64](&bt.Cols[1], rows)[i]))
			}
			if bt.Cols[2].IsNull(i) {
				vals = append(vals, "null")
			} else {
				vals = append(vals, fmt.Sprintf("%q", bt.Cols[2].Bytes(i)))
			}
			if bt.Cols[3].IsNull(i) {
				vals = append(vals, "null")
			} else {
				d := bt.Cols[3].Fixed(i)
				vals = append(vals, fmt.Sprintf("%d/%d", int64(binary.LittleEndian.Uint64(d[8:])), binary.LittleEndian.Uint64(d)))
			}
			want = append(want, fmt.Sprint(bt.Kinds[i], vals))
		}
		bt.Forget()
		releaseArray(in.root)

		rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(in.arm())), cdataSchema)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			vals := []string{fmt.Sprint(rec.Column(0).(*array.Int64).Value(i))}
			for c := 1; c < 4; c++ {
				col := rec.Column(c)
				switch {
				case col.IsNull(i):
					vals = append(vals, "null")
				case c == 1:
					vals = append(vals, fmt.Sprint(col.(*array.Int64).Value(i)))
				case c == 2:
					vals = append(vals, fmt.Sprintf("%q", col.(*array.String).Value(i)))
				default:
					v := col.(*array.Decimal128).Value(i)
					vals = append(vals, fmt.Sprintf("%d/%d", v.HighBits(), v.LowBits()))
				}
			}
			if got := fmt.Sprint(byte(rec.Column(4).(*array.Int8).Value(i)), vals); got != want[i] {
				t.Fatalf("rows=%d row %d: arrow-go %s, Ferry %s", rows, i, got, want[i])
			}
		}
		rec.Release()
		if n := trackerReleases(in.tracker); n != 2 {
			t.Fatalf("rows=%d: input released %d times, want 2", rows, n)
		}

		// Both exports hand out the same batch.
		varBytes := cdataVarBytes(rows)
		o := &operator{}
		ob := engine.OutBatch{Alloc: &o.alloc}
		if err := ob.Init(cdataTypes, rows, varBytes); err != nil {
			t.Fatal(err)
		}
		markNulls(&ob)
		out := newCArray()
		if err := o.export(out, &ob); err != nil {
			t.Fatal(err)
		}
		ferryRec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(out)), cdataSchema)
		if err != nil {
			t.Fatal(err)
		}
		mem := mallocator.NewMallocator()
		for _, build := range []func() arrow.RecordBatch{
			func() arrow.RecordBatch {
				ob := engine.OutBatch{Alloc: mallocSlab{mem}}
				if err := ob.Init(cdataTypes, rows, varBytes); err != nil {
					t.Fatal(err)
				}
				markNulls(&ob)
				slab := memory.NewBufferWithAllocator(ob.Slab, mem)
				defer slab.Release()
				return arrowRecordOver(&ob, slab, make([]arrow.Array, 5))
			},
			func() arrow.RecordBatch { return arrowRecordBuffers(mem, rows, varBytes, make([]arrow.Array, 5)) },
		} {
			rec := build()
			ex := newCArray()
			cdata.ExportArrowRecordBatch(rec, (*cdata.CArrowArray)(unsafe.Pointer(ex)), nil)
			rec.Release()
			back, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(ex)), cdataSchema)
			if err != nil {
				t.Fatal(err)
			}
			for c := range 5 {
				if !array.Equal(back.Column(c), ferryRec.Column(c)) {
					t.Errorf("rows=%d column %d: arrow-go export %v, Ferry export %v", rows, c, back.Column(c), ferryRec.Column(c))
				}
			}
			back.Release()
			cFree(unsafe.Pointer(ex))
		}
		ferryRec.Release()
		cFree(unsafe.Pointer(out))
		if n := mem.AllocatedBytes(); n != 0 {
			t.Errorf("rows=%d: %d bytes of Mallocator memory outstanding", rows, n)
		}
	}
}
