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

func init() { engine.RegisterKeyed(Kind, open) }

// Params are the kind's spec parameters (docs/abi.md). Input 0 is the join's left side, input 1
// its right side: each its equi-join keys (never the window columns, in join-key order),
// window_end and, last, the row's handle (BIGINT NOT NULL; NoRow for a row the host does not
// keep). Input RowsInput carries the rows' bytes before a snapshot.
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
	if len(spec.Inputs) != 3 {
		return jt, engine.SpecError("inputs", "%s has three inputs (left, right, rows), not %d", Kind, len(spec.Inputs))
	}
	if err := checkTypes(&spec.Inputs[RowsInput], "inputs[2]", rowsTypes); err != nil {
		return jt, err
	}
	for i, idx := range []int{p.LeftWindowEndIndex, p.RightWindowEndIndex} {
		field := [...]string{"left_window_end_index", "right_window_end_index"}[i]
		in := &spec.Inputs[i]
		last := len(in.Types) - 1
		if last < 0 || in.Types[last] != (engine.Type{ID: engine.BigInt}) {
			return jt, engine.SpecError(fmt.Sprintf("inputs[%d].fields", i), "the last field is the row handle, BIGINT NOT NULL")
		}
		if idx < 0 || idx >= last {
			return jt, engine.ParamError(field, "column %d out of range (input has %d columns before the handle)", idx, last)
		}
		for _, k := range in.Keys {
			if k == last {
				return jt, engine.SpecError(fmt.Sprintf("inputs[%d].keys", i), "the row handle is not a key")
			}
			if in.Types[k].ID == engine.Binary {
				return jt, fmt.Errorf("%w: inputs[%d].fields[%d] (%s): a BINARY/VARBINARY join key: not native yet", engine.ErrUnsupported, i, k, in.Fields[k].Name)
			}
		}
		if t := in.Types[idx]; t.ID != engine.Timestamp || t.Precision > 3 || t.Nullable {
			return jt, engine.ParamError(field, "column %d is %s, want TIMESTAMP(p <= 3) NOT NULL", idx, t)
		}
	}
	if err := joincore.CheckKeys(spec); err != nil {
		return jt, err
	}
	l := &spec.Inputs[0]
	if len(p.FilterNulls) != len(l.Keys) {
		return jt, engine.ParamError("filter_nulls", "%d flags for %d keys", len(p.FilterNulls), len(l.Keys))
	}
	if p.ShiftZone != nil {
		if err := p.ShiftZone.Validate(); err != nil {
			return jt, err
		}
	}
	return jt, nil
}

// rowsTypes are the columns of input RowsInput: side, handle, the row's bytes.
var rowsTypes = []engine.Type{{ID: engine.Int}, {ID: engine.BigInt}, {ID: engine.Binary}}

func checkTypes(in *engine.Input, field string, want []engine.Type) error {
	ok := len(in.Types) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = in.Types[i] == want[i]
	}
	if !ok {
		return engine.SpecError(field, "want the columns %v", want)
	}
	return nil
}
