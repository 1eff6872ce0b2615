package intervaljoin

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// BenchmarkNexmark runs the workload of the JVM's IntervalJoinBench in Go: auction(id, itemName,
// seller, category, dateTime) JOIN bid(auction, bidder, price, channel, dateTime) ON a.id =
// b.auction AND b.dateTime BETWEEN a.dateTime AND a.dateTime + 10 s, 3 auctions per 46 bids in
// event-time order, keys/10 auctions per second, bids to an auction of the last 12 s; one
// ProcessRuns call per 1,000 rows, then a watermark. LEFT+early_fire is the LEFT join with
// EARLY_FIRE('delay'='2s'). ns/op is per input row; cpu-ns/row the process's CPU time per input
// row (GC included).
//
//	go test -run '^$' -bench Nexmark -cpuprofile /tmp/ij.prof ./intervaljoin
func BenchmarkNexmark(b *testing.B) {
	for _, keys := range []int{1000, 100_000} {
		for _, jt := range []string{"INNER", "LEFT", "LEFT+early_fire"} {
			b.Run(fmt.Sprintf("%s/keys=%d", jt, keys), func(b *testing.B) { benchNexmark(b, jt, keys) })
		}
	}
}

type nexmarkCall struct {
	in   [2]*engine.Batch
	runs []engine.Run
	wm   int64
}

func benchNexmark(b *testing.B, jt string, keys int) {
	const callRows = 1000
	ts := engine.Type{ID: engine.Timestamp, Precision: 3}
	bigint := engine.Type{ID: engine.BigInt}
	str := engine.Type{ID: engine.Varchar, Nullable: true}
	earlyFire := ""
	if j, ok := strings.CutSuffix(jt, "+early_fire"); ok {
		jt, earlyFire = j, `"early_fire_delay_ms":2000,`
	}
	spec := fmt.Sprintf(`{"kind":"interval_join","name":"bench","inputs":[`+
		`{"fields":[{"name":"id","type":"BIGINT","nullable":false},{"name":"itemName","type":"VARCHAR"},{"name":"seller","type":"BIGINT","nullable":false},{"name":"category","type":"BIGINT","nullable":false},{"name":"dateTime","type":"TIMESTAMP(3)","nullable":false}],"keys":[0]},`+
		`{"fields":[{"name":"auction","type":"BIGINT","nullable":false},{"name":"bidder","type":"BIGINT","nullable":false},{"name":"price","type":"BIGINT","nullable":false},{"name":"channel","type":"VARCHAR"},{"name":"dateTime","type":"TIMESTAMP(3)","nullable":false}],"keys":[0]}],`+
		`"max_parallelism":128,"params":{"join_type":%q,"time_mode":"rowtime","left_lower_bound":-10000,"left_upper_bound":0,`+
		`"allowed_lateness":0,"min_clean_up_interval_ms":0,"left_time_index":4,"right_time_index":4,%s"filter_nulls":[true]}}`, jt, earlyFire)
	types := [2][]engine.Type{{bigint, str, bigint, bigint, ts}, {bigint, bigint, bigint, str, ts}}

	// Enough calls to fill the state (12 s of event time), then b.N rows of a steady stream.
	r := rand.New(rand.NewPCG(1, uint64(keys)))
	msPerEvent := 3.0 / (49 * float64(keys) / 10_000)
	recent := int64(keys * 12 / 10)
	fill := keys * 49 / 3 * 12 / 10
	nCalls := (fill+b.N)/callRows + 1
	calls := make([]nexmarkCall, nCalls)
	clock, next := 0.0, int64(0)
	for c := range calls {
		var rows [2][][]any
		var runs []engine.Run
		t := int64(0)
		for range callRows {
			clock += msPerEvent
			t = int64(clock)
			side := 1
			var row []any
			if next == 0 || r.IntN(49) < 3 {
				side = 0
				row = []any{next, fmt.Sprintf("item-%x", r.Uint32()), 1000 + r.Int64N(10_000), 10 + r.Int64N(5), enginetest.Timestamp{Millis: t}}
				next++
			} else {
				row = []any{next - 1 - r.Int64N(min(next, recent)), 1000 + r.Int64N(100_000), r.Int64N(10_000_000), "channel-" + fmt.Sprint(r.IntN(4)), enginetest.Timestamp{Millis: t}}
			}
			rows[side] = append(rows[side], row)
			if n := len(runs); n > 0 && runs[n-1].Input == side {
				runs[n-1].Rows++
			} else {
				runs = append(runs, engine.Run{Input: side, Rows: 1})
			}
		}
		calls[c].runs, calls[c].wm = runs, t-1
		for s := range 2 {
			if len(rows[s]) > 0 {
				calls[c].in[s] = enginetest.Batch(types[s], rows[s], make([]engine.RowKind, len(rows[s])), enginetest.Options{})
			}
		}
	}
	parsed, err := engine.ParseSpec([]byte(spec))
	if err != nil {
		b.Fatal(err)
	}
	op, err := engine.Open(parsed)
	if err != nil {
		b.Fatal(err)
	}
	j := op.(*IntervalJoin)
	out := &engine.OutBatch{Alloc: engine.HeapAllocator{}}
	drainAll := func(more bool, err error) {
		for ; ; more, err = j.Continue(out) {
			if err != nil {
				b.Fatal(err)
			}
			if !more {
				return
			}
		}
	}
	run := func(c *nexmarkCall) {
		drainAll(j.ProcessRuns(c.in[:], c.runs, 0, out))
		drainAll(j.Advance(c.wm, 0, out))
	}
	warm := fill / callRows
	for i := range warm {
		run(&calls[i])
	}
	b.ResetTimer()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i += callRows {
		run(&calls[warm+i/callRows])
	}
	// The machine may be shared: CPU time per row is steadier than wall time.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/row")
}

// cpuTime is the process's user and system CPU time in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
