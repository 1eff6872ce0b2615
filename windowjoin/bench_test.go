package windowjoin

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// BenchmarkNexmark runs the workload of the JVM's WindowJoinBench in Go: auction(id, itemName,
// seller, category, dateTime) and bid(auction, bidder, price, channel, dateTime), each through a
// 10-second tumbling window (window_start, window_end, window_time appended), joined on the
// window and a.id = b.auction; 3 auctions per 46 bids in event-time order, keys/10 auctions per
// second, bids to an auction of the last 12 s. Per 1,000 rows one Process call per side, then a
// watermark, as the JVM operator's batches are cut. ns/op is per input row; cpu-ns/row the
// process's CPU time per input row (GC included).
//
//	go test -run '^$' -bench Nexmark -cpuprofile /tmp/wj.prof ./windowjoin
func BenchmarkNexmark(b *testing.B) {
	for _, keys := range []int{1000, 100_000} {
		for _, jt := range []string{"INNER", "LEFT"} {
			b.Run(fmt.Sprintf("%s/keys=%d", jt, keys), func(b *testing.B) { benchNexmark(b, jt, keys) })
		}
	}
}

type nexmarkCall struct {
	in [2]*engine.Batch
	wm int64
}

func benchNexmark(b *testing.B, jt string, keys int) {
	const callRows, windowMs = 1000, 10_000
	ts := engine.Type{ID: engine.Timestamp, Precision: 3}
	bigint := engine.Type{ID: engine.BigInt}
	str := engine.Type{ID: engine.Varchar, Nullable: true}
	window := `{"name":"window_start","type":"TIMESTAMP(3)","nullable":false},{"name":"window_end","type":"TIMESTAMP(3)","nullable":false},{"name":"window_time","type":"TIMESTAMP(3)","nullable":false}`
	spec := fmt.Sprintf(`{"kind":"window_join","name":"bench","inputs":[`+
		`{"fields":[{"name":"id","type":"BIGINT","nullable":false},{"name":"itemName","type":"VARCHAR"},{"name":"seller","type":"BIGINT","nullable":false},{"name":"category","type":"BIGINT","nullable":false},{"name":"dateTime","type":"TIMESTAMP(3)","nullable":false},%s],"keys":[0]},`+
		`{"fields":[{"name":"auction","type":"BIGINT","nullable":false},{"name":"bidder","type":"BIGINT","nullable":false},{"name":"price","type":"BIGINT","nullable":false},{"name":"channel","type":"VARCHAR"},{"name":"dateTime","type":"TIMESTAMP(3)","nullable":false},%s],"keys":[0]}],`+
		`"max_parallelism":128,"params":{"join_type":%q,"left_window_end_index":6,"right_window_end_index":6,"filter_nulls":[true]}}`, window, window, jt)
	types := [2][]engine.Type{{bigint, str, bigint, bigint, ts, ts, ts, ts}, {bigint, bigint, bigint, str, ts, ts, ts, ts}}

	// Enough calls to fill the state (12 s of event time), then b.N rows of a steady stream.
	r := rand.New(rand.NewPCG(1, uint64(keys)))
	msPerEvent := 3.0 / (49 * float64(keys) / 10_000)
	recent := int64(keys * 12 / 10)
	fill := keys * 49 / 3 * 12 / 10
	calls := make([]nexmarkCall, (fill+b.N)/callRows+1)
	clock, next := 0.0, int64(0)
	for c := range calls {
		var rows [2][][]any
		t := int64(0)
		for range callRows {
			clock += msPerEvent
			t = int64(clock)
			start := t - t%windowMs
			win := []any{enginetest.Timestamp{Millis: start}, enginetest.Timestamp{Millis: start + windowMs}, enginetest.Timestamp{Millis: start + windowMs - 1}}
			if next == 0 || r.IntN(49) < 3 {
				rows[0] = append(rows[0], append([]any{next, fmt.Sprintf("item-%x", r.Uint32()), 1000 + r.Int64N(10_000), 10 + r.Int64N(5), enginetest.Timestamp{Millis: t}}, win...))
				next++
			} else {
				rows[1] = append(rows[1], append([]any{next - 1 - r.Int64N(min(next, recent)), 1000 + r.Int64N(100_000), r.Int64N(10_000_000), "channel-" + fmt.Sprint(r.IntN(4)), enginetest.Timestamp{Millis: t}}, win...))
			}
		}
		calls[c].wm = t - 1
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
	j := op.(*WindowJoin)
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
		for s, in := range c.in {
			if in != nil {
				drainAll(j.Process(s, in, 0, out))
			}
		}
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
