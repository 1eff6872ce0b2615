// Package nexmarktest generates the Nexmark-shaped auctions and bids of the JVM join benchmarks
// (IntervalJoinBench, WindowJoinBench) for the Go join benchmarks, and runs those benchmarks' calls.
package nexmarktest

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// Fields are the spec fields (JSON) of an auction (id, itemName, seller, category, dateTime)
// and of a bid (auction, bidder, price, channel, dateTime); Types their types.
var (
	Fields = [2]string{
		`{"name":"id","type":"BIGINT","nullable":false},{"name":"itemName","type":"VARCHAR"},{"name":"seller","type":"BIGINT","nullable":false},{"name":"category","type":"BIGINT","nullable":false},{"name":"dateTime","type":"TIMESTAMP(3)","nullable":false}`,
		`{"name":"auction","type":"BIGINT","nullable":false},{"name":"bidder","type":"BIGINT","nullable":false},{"name":"price","type":"BIGINT","nullable":false},{"name":"channel","type":"VARCHAR"},{"name":"dateTime","type":"TIMESTAMP(3)","nullable":false}`,
	}
	Types = [2][]engine.Type{{bigint, str, bigint, bigint, ts}, {bigint, bigint, bigint, str, ts}}
)

var (
	ts     = engine.Type{ID: engine.Timestamp, Precision: 3}
	bigint = engine.Type{ID: engine.BigInt}
	str    = engine.Type{ID: engine.Varchar, Nullable: true}
)

// Stream is the event stream: 3 auctions per 46 bids in event-time order, keys/10 auctions per
// second, each bid to an auction of the last 12 s.
type Stream struct {
	r          *rand.Rand
	msPerEvent float64
	clock      float64 // event time, ms
	next       int64   // the next auction's id
	recent     int64   // the auctions of the last 12 s
}

// New starts the stream of a join with about keys live keys.
func New(keys int) *Stream {
	return &Stream{
		r:          rand.New(rand.NewPCG(1, uint64(keys))),
		msPerEvent: 3.0 / (49 * float64(keys) / 10_000),
		recent:     int64(keys * 12 / 10),
	}
}

// Fill is the number of events that fill a join's state: 12 s of event time.
func Fill(keys int) int { return keys * 49 / 3 * 12 / 10 }

// Next returns the next event: side 0 an auction, side 1 a bid (values as enginetest.Batch
// takes them), and its event time in ms.
func (s *Stream) Next() (side int, row []any, t int64) {
	s.clock += s.msPerEvent
	t = int64(s.clock)
	r := s.r
	if s.next == 0 || r.IntN(49) < 3 {
		s.next++
		return 0, []any{s.next - 1, fmt.Sprintf("item-%x", r.Uint32()), 1000 + r.Int64N(10_000), 10 + r.Int64N(5), enginetest.Timestamp{Millis: t}}, t
	}
	return 1, []any{s.next - 1 - r.Int64N(min(s.next, s.recent)), 1000 + r.Int64N(100_000), r.Int64N(10_000_000), "channel-" + fmt.Sprint(r.IntN(4)), enginetest.Timestamp{Millis: t}}, t
}

// Drain calls next until an operator call's output is complete, failing b on an error.
func Drain(b *testing.B, more bool, err error, next func() (bool, error)) {
	for ; ; more, err = next() {
		if err != nil {
			b.Fatal(err)
		}
		if !more {
			return
		}
	}
}

// Measure runs a join benchmark's calls of callRows events each: those filling the state (fill
// events) untimed, then b.N events' worth timed. Besides ns/op (per event) it reports
// cpu-ns/row, the process's CPU time per event (GC included), steadier than wall time on a
// shared machine.
func Measure(b *testing.B, fill, callRows int, call func(i int)) {
	warm := fill / callRows
	for i := range warm {
		call(i)
	}
	b.ResetTimer()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i += callRows {
		call(warm + i/callRows)
	}
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
