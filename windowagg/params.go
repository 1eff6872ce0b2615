// Package windowagg is the window aggregate kind (window_aggregate): Flink 2.3's single-phase
// WindowAggOperator over TUMBLE, HOP and CUMULATE windows on row time (StreamExecWindowAggregate
// with a slicing processor), GROUP BY window_start, window_end and keys.
// docs/operators/window-aggregate.md describes what runs natively and the Flink behaviour it
// reproduces.
package windowagg

import (
	"fmt"
	"math"
	"strings"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/windowjoin"
)

// Kind is the operator kind name of the window aggregate.
const Kind = "window_aggregate"

func init() { engine.RegisterKeyed(Kind, open) }

// The window properties an output row may end with (Params.Properties).
const (
	PropWindowStart = "window_start"
	PropWindowEnd   = "window_end"
	PropWindowTime  = "window_time"
)

// Params are the kind's spec parameters (docs/abi.md). One input, insert-only, keyed by the
// GROUP BY keys other than the window columns. The output is the keys, one column per
// aggregate call (but an inserted COUNT(*)), then the window properties in Properties order.
type Params struct {
	// Window is TUMBLE, HOP or CUMULATE.
	Window string `json:"window"`
	// SizeMs is the window size (HOP, TUMBLE) or max size (CUMULATE), in ms.
	SizeMs int64 `json:"size_ms"`
	// SlideMs is HOP's slide in ms; SizeMs must be a multiple of it.
	SlideMs int64 `json:"slide_ms,omitempty"`
	// StepMs is CUMULATE's step in ms; SizeMs must be a multiple of it.
	StepMs int64 `json:"step_ms,omitempty"`
	// OffsetMs is the window offset in ms (|offset| < size for TUMBLE).
	OffsetMs int64 `json:"offset_ms,omitempty"`
	// RowtimeIndex is the row-time column, TIMESTAMP(p <= 3) NOT NULL (TIMESTAMP_LTZ crosses as
	// its epoch milliseconds); a NULL is FERRY_EDATA, as Flink's message.
	RowtimeIndex int `json:"rowtime_index"`
	// ShiftZone is the session time zone of a TIMESTAMP_LTZ row time (absent: TIMESTAMP, UTC):
	// windows are aligned to its wall clock and fire at Flink's toEpochMillsForTimer.
	ShiftZone *windowjoin.Zone `json:"shift_zone,omitempty"`
	// Aggs are the aggregate calls (AggregateInfoList's order) over the input's columns:
	// func, args and name as for group_aggregate; distinct, filter, retract and java_strings are
	// not native yet (FERRY_EUNSUPPORTED).
	Aggs []agg.AggCall `json:"aggs"`
	// CountStar is the call index of the COUNT(*) Flink reads to tell an empty window
	// (AggregateInfoList's indexOfCountStar); absent: every fired window is emitted. HOP needs
	// one.
	CountStar *int `json:"count_star,omitempty"`
	// CountStarInserted: the CountStar call is the count1 Flink inserted: no output column.
	CountStarInserted bool `json:"count_star_inserted,omitempty"`
	// Properties are the window properties after the aggregates, in output order: window_start,
	// window_end, window_time (each TIMESTAMP(3) NOT NULL; window_time is the window end - 1,
	// shifted back to epoch milliseconds under ShiftZone).
	Properties []string `json:"properties"`
}

// shape is a window shape: Flink's slice assigners.
type shape uint8

const (
	tumble shape = iota
	hop
	cumulate
)

// assigner is Flink's SliceAssigner of the params (SliceAssigners.tumbling, hopping,
// cumulative): slices of sliceSize ms, windows of size ms.
type assigner struct {
	shape     shape
	size      int64
	offset    int64
	sliceSize int64 // the slice length: size (TUMBLE), gcd(size, slide) (HOP), step (CUMULATE)
	nSlices   int   // HOP: slices per window
}

func (p *Params) validate(spec *engine.Spec) (assigner, error) {
	var a assigner
	if len(spec.Inputs) != 1 {
		return a, engine.SpecError("inputs", "%s has 1 input, not %d", Kind, len(spec.Inputs))
	}
	in := &spec.Inputs[0]
	if p.SizeMs <= 0 {
		return a, engine.ParamError("size_ms", "%d, want > 0", p.SizeMs)
	}
	a.size, a.offset = p.SizeMs, p.OffsetMs
	switch strings.ToUpper(p.Window) {
	case "TUMBLE":
		if p.SlideMs != 0 || p.StepMs != 0 {
			return a, engine.ParamError("window", "TUMBLE takes no slide_ms or step_ms")
		}
		if abs(p.OffsetMs) >= p.SizeMs {
			return a, engine.ParamError("offset_ms", "|%d| not below size %d", p.OffsetMs, p.SizeMs)
		}
		a.shape, a.sliceSize = tumble, p.SizeMs
	case "HOP":
		if p.SlideMs <= 0 || p.SizeMs%p.SlideMs != 0 || p.StepMs != 0 {
			return a, engine.ParamError("slide_ms", "%d: HOP needs a slide > 0 that divides size %d", p.SlideMs, p.SizeMs)
		}
		a.shape, a.sliceSize = hop, gcd(p.SizeMs, p.SlideMs)
		if p.SizeMs/a.sliceSize > math.MaxInt32 {
			return a, engine.ParamError("slide_ms", "%d slices per window", p.SizeMs/a.sliceSize)
		}
		a.nSlices = int(p.SizeMs / a.sliceSize)
		if p.CountStar == nil {
			return a, engine.ParamError("count_star", "HOP needs a COUNT(*) (Flink's indexOfCountStar)")
		}
	case "CUMULATE":
		if p.StepMs <= 0 || p.SizeMs%p.StepMs != 0 || p.SlideMs != 0 {
			return a, engine.ParamError("step_ms", "%d: CUMULATE needs a step > 0 that divides size %d", p.StepMs, p.SizeMs)
		}
		a.shape, a.sliceSize = cumulate, p.StepMs
	default:
		return a, engine.ParamError("window", "%q, want TUMBLE, HOP or CUMULATE", p.Window)
	}
	if p.RowtimeIndex < 0 || p.RowtimeIndex >= len(in.Types) {
		return a, engine.ParamError("rowtime_index", "column %d out of range (input has %d columns)", p.RowtimeIndex, len(in.Types))
	}
	if t := in.Types[p.RowtimeIndex]; t.ID != engine.Timestamp || !t.Compact() {
		return a, engine.ParamError("rowtime_index", "column %d is %s, want TIMESTAMP(p <= 3)", p.RowtimeIndex, t)
	}
	if z := p.ShiftZone; z != nil {
		if err := z.Validate(); err != nil {
			return a, err
		}
		current := z.Offset
		if n := len(z.Transitions); n > 0 {
			current = z.Transitions[n-1][2]
		}
		if misaligned(z, current, a.sliceSize) {
			return a, fmt.Errorf("%w: %s", engine.ErrUnsupported, misalignedReason(z, current, a.sliceSize))
		}
	}
	for i, c := range p.Aggs {
		field := fmt.Sprintf("aggs[%d]", i)
		switch {
		case c.Distinct:
			return a, fmt.Errorf("%w: spec: params.%s.distinct: DISTINCT in a window aggregate: not native yet", engine.ErrUnsupported, field)
		case c.Filter != nil:
			return a, fmt.Errorf("%w: spec: params.%s.filter: FILTER in a window aggregate: not native yet", engine.ErrUnsupported, field)
		case c.Retract:
			return a, fmt.Errorf("%w: spec: params.%s.retract: a retracting call in a window aggregate: not native yet", engine.ErrUnsupported, field)
		case c.JavaStrings != nil:
			return a, engine.ParamError(field+".java_strings", "not taken: the window buffer serializes every row, so strings compare as bytes")
		}
	}
	if p.CountStar != nil {
		i := *p.CountStar
		if i < 0 || i >= len(p.Aggs) || !strings.EqualFold(p.Aggs[i].Func, "COUNT") || len(p.Aggs[i].Args) != 0 {
			return a, engine.ParamError("count_star", "%d is not a COUNT(*) call", i)
		}
	} else if p.CountStarInserted {
		return a, engine.ParamError("count_star_inserted", "set without count_star")
	}
	for i, pr := range p.Properties {
		switch pr {
		case PropWindowStart, PropWindowEnd, PropWindowTime:
		default:
			return a, engine.ParamError(fmt.Sprintf("properties[%d]", i), "%q, want %s, %s or %s", pr, PropWindowStart, PropWindowEnd, PropWindowTime)
		}
	}
	return a, nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// windowStart is TimeWindow.getWindowStartWithOffset.
func windowStart(ts, offset, size int64) int64 {
	r := (ts - offset) % size
	if r < 0 {
		return ts - (r + size)
	}
	return ts - r
}

// sliceEnd is assignSliceEnd of a local timestamp.
func (a *assigner) sliceEnd(ts int64) int64 {
	return windowStart(ts, a.offset, a.sliceSize) + a.sliceSize
}

// lastWindowEnd is getLastWindowEnd: the end of the last window the slice belongs to.
func (a *assigner) lastWindowEnd(sliceEnd int64) int64 {
	switch a.shape {
	case hop:
		return sliceEnd - a.sliceSize + a.size
	case cumulate:
		return a.windowStart(sliceEnd) + a.size
	}
	return sliceEnd
}

// windowStart is getWindowStart of a window end.
func (a *assigner) windowStart(windowEnd int64) int64 {
	if a.shape == cumulate {
		return windowStart(windowEnd-1, a.offset, a.size)
	}
	return windowEnd - a.size
}

// mergeTarget is sliceStateMergeTarget: the slice whose state a row of a fired slice folds
// into (CUMULATE: the window's first slice, which holds the merged state).
func (a *assigner) mergeTarget(sliceEnd int64) int64 {
	if a.shape == cumulate {
		return a.windowStart(sliceEnd) + a.sliceSize
	}
	return sliceEnd
}

// misaligned reports whether, in zone z at offset (ms), Flink's next trigger and its window
// timers disagree: without daylight saving, getNextTriggerWatermarkWithOffset aligns triggers to
// slices in epoch time while the windows align to the zone's wall clock, so a window may fire
// while its rows still wait in Flink's buffer (which WindowAgg does not keep). They agree when
// the offset is a multiple of the slice.
func misaligned(z *windowjoin.Zone, offset, sliceSize int64) bool {
	return z != nil && !z.UsesDaylightTime && offset%sliceSize != 0
}

func misalignedReason(z *windowjoin.Zone, offset, sliceSize int64) string {
	return fmt.Sprintf("TIMESTAMP_LTZ windows in time zone %s at offset %d ms, not a multiple of the %d ms slice, "+
		"in a zone without daylight saving (Flink's next trigger aligns to epoch time, so its window buffer may fold rows "+
		"after their window fired): not native", z.ID, offset, sliceSize)
}
