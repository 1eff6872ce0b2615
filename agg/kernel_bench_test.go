//go:build linux

package agg

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// threadCPU is the CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID): unlike wall
// time it does not count time spent descheduled, so kernel comparisons hold on a busy machine.
func threadCPU() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0) // CLOCK_THREAD_CPUTIME_ID
	return ts.Nano()
}

// BenchmarkKernelFold folds one batch of 4096 rows into 64 groups with one accumulator, again
// and again: the per-row loop of each kernel alone, without keys, groups or output. With
// retraction every value is accumulated and retracted again (MIN/MAX multisets churn and stay
// small). It reports wall ns/row and the benchmark thread's cpu-ns/row.
func BenchmarkKernelFold(b *testing.B) {
	for _, c := range []struct {
		fn, typ string
		retract bool
	}{
		{"COUNT", "BIGINT", false},
		{"SUM", "BIGINT", false},
		{"SUM0", "BIGINT", false},
		{"AVG", "BIGINT", false},
		{"MAX", "BIGINT", false},
		{"MAX", "DOUBLE", false},
		{"MAX", "BIGINT", true},
		{"SUM", "DECIMAL(18, 2)", false},
		{"SUM", "DECIMAL(18, 2)", true},
		{"SUM0", "DECIMAL(18, 2)", false},
		{"AVG", "DECIMAL(18, 2)", false},
		{"MAX", "DECIMAL(18, 2)", false},
		{"MAX", "DECIMAL(18, 2)", true},
		{"MAX", "VARCHAR", false},
		{"MAX", "VARCHAR", true},
		{"LISTAGG", "VARCHAR", true}, // without retraction the lists only grow
	} {
		b.Run(fmt.Sprintf("%s/%s/retract=%v", c.fn, c.typ, c.retract), func(b *testing.B) {
			const n, groups = 4096, 64
			spec := mustParse(&testSpec{MaxParallelism: 128, Keys: []int{},
				Input: bigintInput("v:" + c.typ), NeedRetraction: c.retract,
				Aggs: []AggCall{{Func: c.fn, Args: []int{0}, Retract: c.retract}}})
			acc, _, err := newCall(0, spec.Aggs[0], spec)
			if err != nil {
				b.Fatal(err)
			}
			acc.Grow(groups)
			r := rand.New(rand.NewPCG(1, 2))
			rows := make([][]any, n)
			gids := make([]int32, n)
			acts := make([]int8, n)
			for i := range rows {
				var v any
				switch c.typ {
				case "BIGINT":
					v = r.Int64N(1_000_000)
				case "DOUBLE":
					v = float64(r.Int64N(1_000_000)) / 8
				case "VARCHAR":
					v = fmt.Sprintf("name-%0*d", 3+r.IntN(16), r.IntN(1_000_000))
				default:
					v = big.NewInt(r.Int64N(100_000_000))
				}
				gids[i], acts[i] = int32(r.IntN(groups)), 1
				if c.retract && i%2 == 1 { // retract the previous row's value
					v, gids[i], acts[i] = rows[i-1][0], gids[i-1], -1
				}
				rows[i] = []any{v}
			}
			batch := enginetest.Batch(spec.InputTypes, rows, make([]engine.RowKind, n), enginetest.Options{})
			changed := make([]bool, n)
			acc.Fold(batch, gids, acts, changed) // warm: groups hold values
			perRow(b, n, func() { acc.Fold(batch, gids, acts, changed) })
		})
	}
}

// perRow runs call, over a batch of n rows, until the benchmark is done and reports wall ns/row
// and the benchmark thread's cpu-ns/row.
func perRow(b *testing.B, n int, call func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	var cpu int64
	i := 0
	for b.Loop() {
		if i == 0 { // after b.Loop's own start (a GC), like the timer
			cpu = threadCPU()
		}
		call()
		i++
	}
	cpu = threadCPU() - cpu
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i*n), "ns/row")
	b.ReportMetric(float64(cpu)/float64(i*n), "cpu-ns/row")
}

// BenchmarkKernelMerge merges one batch of 4096 partial rows into 64 groups with one
// accumulator, again and again: the per-row loop of each kernel's Merge (the global aggregate
// of a two-phase plan) alone, without keys, groups or output (perRow).
func BenchmarkKernelMerge(b *testing.B) {
	for _, c := range []struct{ fn, typ string }{
		{"COUNT", "BIGINT"},
		{"SUM", "BIGINT"},
		{"SUM0", "BIGINT"},
		{"AVG", "BIGINT"},
		{"MAX", "BIGINT"},
		{"SUM", "DECIMAL(18, 2)"},
		{"SUM0", "DECIMAL(18, 2)"},
		{"AVG", "DECIMAL(18, 2)"},
		{"MAX", "DECIMAL(18, 2)"},
		{"MAX", "VARCHAR"},
	} {
		b.Run(fmt.Sprintf("%s/%s", c.fn, c.typ), func(b *testing.B) {
			const n, groups = 4096, 64
			spec := mustParse(&testSpec{MaxParallelism: 128, Keys: []int{},
				Input: bigintInput("v:" + c.typ), Aggs: []AggCall{{Func: c.fn, Args: []int{0}}}})
			acc, _, err := newCall(0, spec.Aggs[0], spec)
			if err != nil {
				b.Fatal(err)
			}
			acc.Grow(groups)
			types, err := acc.PartialTypes()
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			rows := make([][]any, n)
			gids := make([]int32, n)
			for i := range rows {
				rows[i] = make([]any, len(types))
				for k, t := range types {
					switch t.ID {
					case engine.BigInt:
						rows[i][k] = r.Int64N(1_000_000)
					case engine.Varchar:
						rows[i][k] = fmt.Sprintf("name-%0*d", 3+r.IntN(16), r.IntN(1_000_000))
					default:
						rows[i][k] = big.NewInt(r.Int64N(100_000_000))
					}
				}
				gids[i] = int32(r.IntN(groups))
			}
			batch := enginetest.Batch(types, rows, make([]engine.RowKind, n), enginetest.Options{})
			changed := make([]bool, n)
			merge := func() {
				if err := acc.Merge(batch, 0, gids, changed); err != nil {
					b.Fatal(err)
				}
			}
			merge() // warm: groups hold values
			perRow(b, n, merge)
		})
	}
}
