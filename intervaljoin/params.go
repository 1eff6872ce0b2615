// Package intervaljoin is the interval join kind (interval_join): Flink 2.3's RowTimeIntervalJoin
// and ProcTimeIntervalJoin (TimeIntervalJoin), an equi-join of two insert-only streams whose rows
// match when their times lie within bounds of each other, with INNER, LEFT, RIGHT and FULL
// OUTER padding. docs/operators/interval-join.md describes what runs natively and the Flink
// behaviour it reproduces.
package intervaljoin

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// Kind is the operator kind name of the interval join.
const Kind = "interval_join"

func init() { engine.RegisterKeyed(Kind, open) }

// Params are the kind's spec parameters (docs/abi.md). Input 0 is the join's left side, input 1
// its right side; each input's keys are its equi-join keys, in join-key order.
type Params struct {
	// JoinType is INNER, LEFT, RIGHT or FULL.
	JoinType string `json:"join_type"`
	// TimeMode is "rowtime" (row times from the time columns, event-time timers) or "proctime"
	// (a row's time is the processing time of its batch, processing-time timers).
	TimeMode string `json:"time_mode"`
	// LeftLowerBound and LeftUpperBound (milliseconds) are Flink's window bounds: a left row at
	// time lt matches a right row at rt when rt + LeftLowerBound <= lt <= rt + LeftUpperBound.
	// LeftUpperBound >= LeftLowerBound (Flink plans no join operator otherwise).
	LeftLowerBound int64 `json:"left_lower_bound"`
	LeftUpperBound int64 `json:"left_upper_bound"`
	// AllowedLateness (ms, >= 0) is 0 in every SQL plan; MinCleanUpIntervalMs is
	// table.exec.interval-join.min-cleanup-interval (negative counts as 0, as in Flink).
	AllowedLateness      int64 `json:"allowed_lateness"`
	MinCleanUpIntervalMs int64 `json:"min_clean_up_interval_ms"`
	// LeftTimeIndex and RightTimeIndex are the time columns of the inputs (rowtime only):
	// TIMESTAMP(p <= 3) or BIGINT, read as epoch milliseconds; NULL reads as 0.
	LeftTimeIndex  int `json:"left_time_index"`
	RightTimeIndex int `json:"right_time_index"`
	// FilterNulls has one flag per join key: true for `=`, false for IS NOT DISTINCT FROM. A key
	// with NULL at a true position joins nothing: only its rows' times are cached, and the rows
	// themselves on a padded side (docs/operators/interval-join.md#null-keys).
	FilterNulls []bool `json:"filter_nulls"`
	// NullKeyEmitImmediately (ferry.join.null-key.emit-immediately) pads a padded side's rows of
	// such keys on arrival instead of when Flink pads them, and stores none of them.
	NullKeyEmitImmediately bool `json:"null_key_emit_immediately,omitempty"`
	// EarlyFireDelayMs is the delay (ms) of Flink's EARLY_FIRE hint (FLIP-497): absent or
	// negative, no early fire. An outer join pads a cached row that matched nothing this long
	// after its time, as +I, and corrects that pad with -U/+U when the row matches later; an
	// inner join ignores it.
	EarlyFireDelayMs *int64 `json:"early_fire_delay_ms,omitempty"`
	// EarlyFireTimeMode is the time domain the delay runs in, "rowtime" or "proctime"; absent:
	// TimeMode. "proctime" on a row-time join pads on processing-time timers at the row's arrival
	// processing time plus the delay, while cleanup stays on event time.
	EarlyFireTimeMode string `json:"early_fire_time_mode,omitempty"`
	// Condition is the residual join condition over the joined row (left fields, then right
	// fields), absent when the join condition is the equi keys and the time bounds alone.
	Condition *joincore.Expr `json:"condition,omitempty"`
}

// joinType holds which sides are padded.
type joinType struct {
	leftOuter, rightOuter bool
}

// earlyFire reports whether early fire runs (Flink's earlyFireEnabled: a delay >= 0 on an outer
// join; the window span is never negative here), its delay, and whether its timers are
// processing-time timers on a row-time join (crossDomain).
func (p *Params) earlyFire(jt joinType) (enabled bool, delay int64, crossDomain bool) {
	if p.EarlyFireDelayMs == nil || *p.EarlyFireDelayMs < 0 || !jt.leftOuter && !jt.rightOuter {
		return false, 0, false
	}
	return true, *p.EarlyFireDelayMs, p.TimeMode == "rowtime" && p.EarlyFireTimeMode == "proctime"
}

func (p *Params) validate(spec *engine.Spec) (joinType, error) {
	var jt joinType
	if err := joincore.RefuseBytes(spec, "a join"); err != nil {
		return jt, err
	}
	switch p.JoinType {
	case "INNER":
	case "LEFT":
		jt.leftOuter = true
	case "RIGHT":
		jt.rightOuter = true
	case "FULL":
		jt.leftOuter, jt.rightOuter = true, true
	default:
		return jt, engine.ParamError("join_type", "%q, want INNER, LEFT, RIGHT or FULL", p.JoinType)
	}
	if len(spec.Inputs) != 2 {
		return jt, engine.SpecError("inputs", "%s has two inputs, not %d", Kind, len(spec.Inputs))
	}
	switch p.TimeMode {
	case "rowtime":
		for i, idx := range []int{p.LeftTimeIndex, p.RightTimeIndex} {
			field := [...]string{"left_time_index", "right_time_index"}[i]
			in := &spec.Inputs[i]
			if idx < 0 || idx >= len(in.Types) {
				return jt, engine.ParamError(field, "column %d out of range (input has %d columns)", idx, len(in.Types))
			}
			if t := in.Types[idx]; !(t.ID == engine.BigInt || t.ID == engine.Timestamp && t.Precision <= 3) {
				return jt, engine.ParamError(field, "column %d is %s, want TIMESTAMP(p <= 3) or BIGINT", idx, t)
			}
		}
	case "proctime":
	default:
		return jt, engine.ParamError("time_mode", "%q, want rowtime or proctime", p.TimeMode)
	}
	if p.LeftUpperBound < p.LeftLowerBound {
		return jt, fmt.Errorf("%w: spec: params: negative window (left_upper_bound %d < left_lower_bound %d): Flink plans no join operator for it",
			engine.ErrUnsupported, p.LeftUpperBound, p.LeftLowerBound)
	}
	if p.AllowedLateness < 0 {
		return jt, engine.ParamError("allowed_lateness", "%d, want >= 0", p.AllowedLateness)
	}
	if err := joincore.CheckKeys(spec); err != nil {
		return jt, err
	}
	l := &spec.Inputs[0]
	switch p.EarlyFireTimeMode {
	case "", "proctime":
	case "rowtime":
		if p.TimeMode == "proctime" {
			return jt, engine.ParamError("early_fire_time_mode", "rowtime on a proctime join: row-time triggering requires a row-time interval join")
		}
	default:
		return jt, engine.ParamError("early_fire_time_mode", "%q, want rowtime or proctime", p.EarlyFireTimeMode)
	}
	if len(p.FilterNulls) != len(l.Keys) {
		return jt, engine.ParamError("filter_nulls", "%d flags for %d keys", len(p.FilterNulls), len(l.Keys))
	}
	return jt, nil
}
