//go:build ferrytest

package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// BenchmarkABIProcess measures the whole C ABI path of one batch: ferry_operator_process
// (handle lookup, validation of the ArrowArray tree, the group aggregate, export of the output
// into C memory) plus releasing the output batch, for a Nexmark-shaped aggregate: GROUP BY
// auction, COUNT(*), SUM(price), MAX(price), AVG(price), insert-only, with update-before.
//
// The input is one set of C structs over a large column of pre-generated rows, reused the way a
// host reuses its buffers: each call moves the struct's offset to the next window and re-arms the
// release callbacks (plain stores into C memory, no cgo call), so building input stays outside
// the timed work. For keys=1M every key holds state before timing starts.
func BenchmarkABIProcess(b *testing.B) {
	for _, keys := range []int{64, 1 << 20} {
		for _, size := range []int{1, 1024, 4096} {
			name := fmt.Sprintf("keys=%d/batch=%d", keys, size)
			if keys == 1<<20 {
				name = fmt.Sprintf("keys=1M/batch=%d", size)
			}
			b.Run(name, func(b *testing.B) { benchABIProcess(b, keys, size) })
		}
	}
}

const benchSpecJSON = `{"kind":"group_aggregate","name":"GroupAggregate(groupBy=[auction])",` +
	`"inputs":[{"fields":[{"name":"auction","type":"BIGINT","nullable":false},{"name":"price","type":"BIGINT"}],"keys":[0]}],` +
	`"max_parallelism":128,"params":{"aggs":[{"func":"COUNT","name":"bids"},{"func":"SUM","args":[1],"name":"total"},` +
	`{"func":"MAX","args":[1],"name":"top"},{"func":"AVG","args":[1],"name":"avg"}],"generate_update_before":true}}`

// benchInput is a struct array of n rows in C memory: auction, price (5% NULL), RowKind +I.
type benchInput struct {
	root     *cArray
	kids     []*cArray
	releases []unsafe.Pointer // each array's release callback, to re-arm
	allocs   []unsafe.Pointer
}

func newBenchInput(b *testing.B, auctions []int64, r *rand.Rand) *benchInput {
	n := len(auctions)
	in := &benchInput{}
	alloc := func(size int) unsafe.Pointer {
		p := cAlloc(size)
		in.allocs = append(in.allocs, p)
		return p
	}
	auction := alloc(8 * n)
	copy(unsafe.Slice((*int64)(auction), n), auctions)
	price := alloc(8 * n)
	prices := unsafe.Slice((*int64)(price), n)
	valid := alloc((n + 7) / 8)
	bits := unsafe.Slice((*byte)(valid), (n+7)/8)
	nulls := 0
	for i := range prices {
		prices[i] = int64(r.IntN(100_000))
		if r.IntN(20) == 0 {
			nulls++
		} else {
			bits[i>>3] |= 1 << (i & 7)
		}
	}
	kinds := alloc(n) // zeroed: every row +I

	column := func(nullCount int, validity, data unsafe.Pointer) *cArray {
		a := (*cArray)(alloc(sizeofArray))
		bufs := alloc(16)
		copy(unsafe.Slice((*unsafe.Pointer)(bufs), 2), []unsafe.Pointer{validity, data})
		v := view(a)
		v.Length, v.NullCount, v.NBuffers, v.Buffers = int64(n), int64(nullCount), 2, bufs
		trackArray(a, (*cTracker)(alloc(int(unsafe.Sizeof(cTracker{})))), nil, 0)
		return a
	}
	in.kids = []*cArray{column(0, nil, auction), column(nulls, valid, price), column(0, nil, kinds)}
	in.root = (*cArray)(alloc(sizeofArray))
	kp := (**cArray)(alloc(8 * len(in.kids)))
	copy(unsafe.Slice(kp, len(in.kids)), in.kids)
	rv := view(in.root)
	rv.NBuffers, rv.Buffers, rv.NChildren, rv.Children = 1, alloc(8), int64(len(in.kids)), unsafe.Pointer(kp)
	trackArray(in.root, (*cTracker)(alloc(int(unsafe.Sizeof(cTracker{})))), kp, len(in.kids))
	for _, a := range append([]*cArray{in.root}, in.kids...) {
		in.releases = append(in.releases, view(a).Release)
	}
	b.Cleanup(func() {
		for _, p := range in.allocs {
			cFree(p)
		}
	})
	return in
}

// window re-arms the input and points it at rows [start, start+size).
func (in *benchInput) window(start, size int) *cArray {
	v := view(in.root)
	v.Offset, v.Length = int64(start), int64(size)
	v.Release = in.releases[0]
	for i, k := range in.kids {
		view(k).Release = in.releases[i+1]
	}
	return in.root
}

func benchABIProcess(b *testing.B, keys, size int) {
	r := rand.New(rand.NewPCG(uint64(keys), uint64(size)))
	rows := 1 << 20
	var auctions []int64
	if keys > rows/2 {
		// The first keys rows hold every key once (they pre-populate the state), then random ones.
		auctions = make([]int64, keys, keys+rows)
		for i, k := range r.Perm(keys) {
			auctions[i] = int64(k)
		}
	}
	for range rows {
		auctions = append(auctions, int64(r.IntN(keys)))
	}
	in := newBenchInput(b, auctions, r)
	spec := cString(benchSpecJSON)
	defer cFree(unsafe.Pointer(spec))
	var h cHandle
	var e cError
	if c := ferry_operator_open(spec, nil, 0, nil, &h, &e); c != 0 {
		b.Fatal(takeError(&e))
	}
	defer ferry_operator_close(h, &e)
	out := newCArray()
	defer cFree(unsafe.Pointer(out))
	var more cInt32
	call := func(start, n int) {
		if c := processOn(h, 0, 1, in.window(start, n), 0, out, &more, &e); c != 0 {
			code, msg := takeError(&e)
			b.Fatalf("process: %d %s", code, msg)
		}
		if out.release != nil {
			releaseArray(out)
			*view(out) = engine.CArray{}
		}
	}
	first := 0
	if keys > rows/2 {
		for start := 0; start < keys; start += 4096 {
			call(start, min(4096, keys-start))
		}
		first = keys
	}
	span := len(auctions) - first - size
	pos := 0
	var total int64
	for b.Loop() {
		call(first+pos, size)
		total += int64(size)
		pos += size
		if pos > span {
			pos = 0
		}
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
	if n := outstanding(); n != 0 {
		b.Fatalf("outstanding output bytes %d", n)
	}
}
