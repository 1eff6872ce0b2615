// Package windowjoin is the window join kind (window_join): Flink 2.3's WindowJoinOperator, the
// join of two window table-valued functions (TUMBLE, HOP, CUMULATE) on window_start, window_end
// and equi keys, with INNER, LEFT, RIGHT, FULL, SEMI and ANTI joins. Rows are kept per key and
// window end until the watermark passes the window's end; then the window's rows join, are
// padded and are dropped. docs/operators/window-join.md describes what runs natively and the
// Flink behaviour it reproduces.
package windowjoin

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// Kind is the operator kind name of the window join.
const Kind = "window_join"

func init() { engine.Register(Kind, open) }

// Params are the kind's spec parameters (docs/abi.md). Input 0 is the join's left side, input 1
// its right side; each input's keys are its equi-join keys (never the window columns), in
// join-key order.
type Params struct {
	// JoinType is INNER, LEFT, RIGHT, FULL, SEMI or ANTI.
	JoinType string `json:"join_type"`
	// LeftWindowEndIndex and RightWindowEndIndex are the window_end columns of the inputs:
	// TIMESTAMP(3) NOT NULL, epoch milliseconds of the local wall clock.
	LeftWindowEndIndex  int `json:"left_window_end_index"`
	RightWindowEndIndex int `json:"right_window_end_index"`
	// FilterNulls has one flag per join key: true for `=`, false for IS NOT DISTINCT FROM. A key
	// with NULL at a true position joins nothing (docs/operators/window-join.md#null-keys).
	FilterNulls []bool `json:"filter_nulls"`
	// NullKeyEmitImmediately (ferry.join.null-key.emit-immediately) pads a preserved side's rows
	// of such keys on arrival instead of at the window's end, and stores none of them.
	NullKeyEmitImmediately bool `json:"null_key_emit_immediately,omitempty"`
	// Condition is the residual join condition over the joined row (left fields, then right
	// fields), absent when the join condition is the window columns and the equi keys alone.
	Condition *joincore.Expr `json:"condition,omitempty"`
	// ShiftZone is the time zone window ends are shifted from (TIMESTAMP_LTZ windows); absent
	// for UTC (TIMESTAMP windows).
	ShiftZone *Zone `json:"shift_zone,omitempty"`
}

// joinType holds which sides are preserved (padded, or for ANTI emitted, when they match
// nothing) and whether the output is the left row alone.
type joinType struct {
	leftOuter, rightOuter bool
	semi, anti            bool
}

func (p *Params) validate(spec *engine.Spec) (joinType, error) {
	var jt joinType
	if err := joincore.RefuseBytes(spec); err != nil {
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
	case "SEMI":
		jt.semi = true
	case "ANTI":
		jt.anti = true
	default:
		return jt, engine.ParamError("join_type", "%q, want INNER, LEFT, RIGHT, FULL, SEMI or ANTI", p.JoinType)
	}
	if len(spec.Inputs) != 2 {
		return jt, engine.SpecError("inputs", "%s has two inputs, not %d", Kind, len(spec.Inputs))
	}
	for i, idx := range []int{p.LeftWindowEndIndex, p.RightWindowEndIndex} {
		field := [...]string{"left_window_end_index", "right_window_end_index"}[i]
		in := &spec.Inputs[i]
		if idx < 0 || idx >= len(in.Types) {
			return jt, engine.ParamError(field, "column %d out of range (input has %d columns)", idx, len(in.Types))
		}
		if t := in.Types[idx]; t.ID != engine.Timestamp || t.Precision > 3 || t.Nullable {
			return jt, engine.ParamError(field, "column %d is %s, want TIMESTAMP(p <= 3) NOT NULL", idx, t)
		}
	}
	l, r := &spec.Inputs[0], &spec.Inputs[1]
	if len(l.Keys) != len(r.Keys) {
		return jt, engine.SpecError("inputs[1].keys", "%d keys, the left input has %d", len(r.Keys), len(l.Keys))
	}
	for k := range l.Keys {
		a, b := l.Types[l.Keys[k]], r.Types[r.Keys[k]]
		a.Nullable, b.Nullable = false, false
		if a != b {
			return jt, engine.SpecError(fmt.Sprintf("inputs[1].keys[%d]", k), "type %s differs from the left key's %s", b, a)
		}
	}
	if len(p.FilterNulls) != len(l.Keys) {
		return jt, engine.ParamError("filter_nulls", "%d flags for %d keys", len(p.FilterNulls), len(l.Keys))
	}
	if p.ShiftZone != nil {
		if err := p.ShiftZone.validate(); err != nil {
			return jt, err
		}
	}
	return jt, nil
}
