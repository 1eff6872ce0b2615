// Package regularjoin is the regular join kind (regular_join): Flink 2.3's StreamingJoinOperator,
// the unbounded equi-join of two changelog streams, with INNER, LEFT, RIGHT and FULL OUTER
// padding; with mini_batch its MiniBatchStreamingJoinOperator (bundle.go); and for SEMI and ANTI
// joins StreamingSemiAntiJoinOperator (semianti.go). Every row of either side is kept (per join
// key, in one of Flink's three state layouts) and joined with the rows the other side holds, in
// the order Flink's heap state backend visits them. docs/operators/regular-join.md describes what
// runs natively and the Flink behaviour it reproduces.
package regularjoin

import (
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// Kind is the operator kind name of the regular join.
const Kind = "regular_join"

func init() { engine.RegisterKeyed(Kind, open) }

// The values of Params.LeftLayout and RightLayout: Flink's JoinInputSideSpec of the side.
const (
	// LayoutJoinKeyUnique: the join key contains a unique key of the side, so a join key holds
	// at most one row (Flink's ValueState per join key).
	LayoutJoinKeyUnique = "join_key_contains_unique_key"
	// LayoutUniqueKey: the side has a unique key the join key does not contain (a MapState
	// unique key -> row per join key).
	LayoutUniqueKey = "input_has_unique_key"
	// LayoutNoUniqueKey: no unique key (a MapState row -> count per join key).
	LayoutNoUniqueKey = "no_unique_key"
)

// Params are the kind's spec parameters (docs/abi.md). Input 0 is the join's left side, input 1
// its right side; each input's keys are its equi-join keys, in join-key order (equal counts,
// pairwise equal types). The output is the left input's fields, then the right input's.
type Params struct {
	// JoinType is INNER, LEFT, RIGHT or FULL (StreamingJoinOperator), or SEMI or ANTI
	// (StreamingSemiAntiJoinOperator: the output is the left row alone).
	JoinType string `json:"join_type"`
	// FilterNulls has one flag per join key: true for `=`, false for IS NOT DISTINCT FROM
	// (Flink's JoinSpec.filterNulls). A join key with NULL at a true position joins nothing: its
	// rows are not stored, and those of a padded side are emitted padded (and their
	// retractions as padded retractions) at once, as Flink emits them.
	FilterNulls []bool `json:"filter_nulls"`
	// LeftLayout and RightLayout are the sides' JoinInputSideSpec: LayoutJoinKeyUnique,
	// LayoutUniqueKey or LayoutNoUniqueKey.
	LeftLayout  string `json:"left_layout"`
	RightLayout string `json:"right_layout"`
	// LeftUniqueKey and RightUniqueKey are the side's unique key columns
	// (JoinInputSideSpec.getUniqueKeyIndices), in Flink's order, for the two unique-key
	// layouts; absent for LayoutNoUniqueKey. For LayoutJoinKeyUnique they are among the
	// side's join keys.
	LeftUniqueKey  []int `json:"left_unique_key,omitempty"`
	RightUniqueKey []int `json:"right_unique_key,omitempty"`
	// Condition is the residual non-equi condition over the joined row (left fields, then right
	// fields; JoinSpec's nonEquiCondition), absent when the equi keys are the whole condition.
	Condition *joincore.Expr `json:"condition,omitempty"`
	// LeftStateRetentionMs and RightStateRetentionMs are the sides' idle-state TTL in ms; a
	// non-zero value is refused (not native yet).
	LeftStateRetentionMs  int64 `json:"left_state_retention_ms,omitempty"`
	RightStateRetentionMs int64 `json:"right_state_retention_ms,omitempty"`
	// MiniBatch runs Flink's MiniBatchStreamingJoinOperator (table.exec.mini-batch.enabled): the
	// rows of Process calls are queued in per-side bundles, folded per join key (and unique key
	// or row), and joined when the host calls Flush at the bundle's end (Flink's count trigger,
	// a watermark, before a barrier). A snapshot is refused while rows are queued. It is not part
	// of the state's fingerprint: the state is the same with and without it.
	MiniBatch bool `json:"mini_batch,omitempty"`
}

// layout is a side's state layout.
type layout uint8

const (
	joinKeyUnique layout = iota // one row per join key
	uniqueKey                   // unique key -> row
	noUniqueKey                 // row -> count
)

// sideSpec is what the params say of one side.
type sideSpec struct {
	layout layout
	outer  bool  // the side's rows carry association counts: it is padded when it matches nothing (Flink's leftIsOuter/rightIsOuter), or the left side of a SEMI/ANTI join
	unique []int // the unique key columns (uniqueKey layout only)
}

var sideNames = [2]string{"left", "right"}

func (p *Params) validate(spec *engine.Spec) ([2]sideSpec, error) {
	var sides [2]sideSpec
	if len(spec.Inputs) != 2 {
		return sides, engine.SpecError("inputs", "%s has two inputs, not %d", Kind, len(spec.Inputs))
	}
	if err := joincore.RefuseBytes(spec, "a join"); err != nil {
		return sides, err
	}
	switch p.JoinType {
	case "INNER":
	case "LEFT":
		sides[0].outer = true
	case "RIGHT":
		sides[1].outer = true
	case "FULL":
		sides[0].outer, sides[1].outer = true, true
	case "SEMI", "ANTI":
		sides[0].outer = true // the left rows carry their association counts (OuterJoinRecordStateView)
		if p.MiniBatch {
			// StreamExecJoin plans StreamingSemiAntiJoinOperator whether mini-batch is on or not:
			// a mini-batch SEMI/ANTI join is no operator of Flink's.
			return sides, fmt.Errorf("%w: spec: params.mini_batch: a %s join has no mini-batch operator in Flink 2.3 (StreamingSemiAntiJoinOperator runs with mini-batch on): send mini_batch false",
				engine.ErrUnsupported, p.JoinType)
		}
	default:
		return sides, engine.ParamError("join_type", "%q, want INNER, LEFT, RIGHT, FULL, SEMI or ANTI", p.JoinType)
	}
	if err := joincore.CheckKeys(spec); err != nil {
		return sides, err
	}
	if len(p.FilterNulls) != len(spec.Inputs[0].Keys) {
		return sides, engine.ParamError("filter_nulls", "%d flags for %d keys", len(p.FilterNulls), len(spec.Inputs[0].Keys))
	}
	layouts := [2]string{p.LeftLayout, p.RightLayout}
	uks := [2][]int{p.LeftUniqueKey, p.RightUniqueKey}
	for s := range 2 {
		field, ukField := sideNames[s]+"_layout", sideNames[s]+"_unique_key"
		in := &spec.Inputs[s]
		switch layouts[s] {
		case LayoutJoinKeyUnique:
			sides[s].layout = joinKeyUnique
		case LayoutUniqueKey:
			sides[s].layout = uniqueKey
		case LayoutNoUniqueKey:
			sides[s].layout = noUniqueKey
		default:
			return sides, engine.ParamError(field, "%q, want %s, %s or %s", layouts[s], LayoutJoinKeyUnique, LayoutUniqueKey, LayoutNoUniqueKey)
		}
		uk := uks[s]
		if sides[s].layout == noUniqueKey {
			if uk != nil {
				return sides, engine.ParamError(ukField, "given for the %s layout", LayoutNoUniqueKey)
			}
			continue
		}
		if len(uk) == 0 {
			return sides, engine.ParamError(ukField, "missing for the %s layout", layouts[s])
		}
		for k, c := range uk {
			if c < 0 || c >= len(in.Types) {
				return sides, engine.ParamError(fmt.Sprintf("%s[%d]", ukField, k), "column %d out of range (input has %d columns)", c, len(in.Types))
			}
			if slices.Index(uk, c) != k {
				return sides, engine.ParamError(fmt.Sprintf("%s[%d]", ukField, k), "column %d repeated", c)
			}
			if sides[s].layout == joinKeyUnique && !slices.Contains(in.Keys, c) {
				return sides, engine.ParamError(fmt.Sprintf("%s[%d]", ukField, k), "column %d is not a join key, as the %s layout requires", c, LayoutJoinKeyUnique)
			}
		}
		sides[s].unique = uk
	}
	for s, ms := range [2]int64{p.LeftStateRetentionMs, p.RightStateRetentionMs} {
		if ms != 0 {
			return sides, fmt.Errorf("%w: spec: params.%s_state_retention_ms: %d: idle-state TTL on a regular join: not native yet",
				engine.ErrUnsupported, sideNames[s], ms)
		}
	}
	return sides, nil
}
