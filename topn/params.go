package topn

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// Kind is the kind's name in specs.
const Kind = "top_n"

// The functions of Flink's StreamExecRank translation this kind runs (Params.Function).
const (
	// AppendOnlyTopN is AppendOnlyTopNFunction: an insert-only input, any constant rank range.
	AppendOnlyTopN = "append_only_top_n"
	// AppendOnlyFirstN is AppendOnlyFirstNFunction: an insert-only input ordered by its
	// processing time ascending, that is by arrival; a key's first rows are its top N.
	AppendOnlyFirstN = "append_only_first_n"
	// FastTop1 is FastTop1Function: rank 1 to 1 of an insert-only or upsert input.
	FastTop1 = "fast_top1"
	// RetractableTopN is RetractableTopNFunction: an input with retractions; every row of a key
	// is kept.
	RetractableTopN = "retractable_top_n"
	// UpdatableTopN is UpdatableTopNFunction: an upsert input (RowKeys its upsert key) whose sort
	// keys only improve, any constant rank range but 1 to 1.
	UpdatableTopN = "updatable_top_n"
)

// Params are the spec parameters of a top_n operator: the fields of Flink's StreamExecRank and
// the function its translation picks (docs/abi.md, "top_n").
type Params struct {
	Function string `json:"function"`
	// SortKeys are the ORDER BY fields (input columns), in order.
	SortKeys []SortKey `json:"sort_keys"`
	// RowKeys are UpdatableTopN's row key: the input's upsert key (UpdateFastStrategy's primary
	// keys), input columns.
	RowKeys []int `json:"row_keys,omitempty"`
	// RankStart and RankEnd are the constant rank range, 1-based and inclusive.
	RankStart int64 `json:"rank_start"`
	RankEnd   int64 `json:"rank_end"`
	// OutputRankNumber appends the rank (BIGINT NOT NULL) to the output rows.
	OutputRankNumber bool `json:"output_rank_number,omitempty"`
	// GenerateUpdateBefore emits -U before each +U (the planner's changelog mode).
	GenerateUpdateBefore bool `json:"generate_update_before,omitempty"`
	// StateTTLMs is the idle-state retention in ms, 0 for none; only AppendOnlyFirstN runs with
	// one (the others' results then depend on Flink's LRU cache).
	StateTTLMs int64 `json:"state_ttl_ms,omitempty"`
}

// SortKey is one ORDER BY field: Flink's SortSpec.SortFieldSpec.
type SortKey struct {
	Field     int  `json:"field"`
	Ascending bool `json:"ascending"`
	// NullsLast sorts NULL after every value, in either direction.
	NullsLast bool `json:"nulls_last"`
}

// validate checks the params against the spec's one input.
func (p *Params) validate(spec *engine.Spec) error {
	if len(spec.Inputs) != 1 {
		return engine.SpecError("inputs", "%s has 1 input, not %d", Kind, len(spec.Inputs))
	}
	in := &spec.Inputs[0]
	switch p.Function {
	case AppendOnlyTopN, AppendOnlyFirstN, FastTop1, RetractableTopN, UpdatableTopN:
	default:
		return engine.ParamError("function", "%q is none of %s, %s, %s, %s, %s", p.Function, AppendOnlyTopN, AppendOnlyFirstN, FastTop1, RetractableTopN, UpdatableTopN)
	}
	if (p.Function == UpdatableTopN) != (len(p.RowKeys) > 0) {
		return engine.ParamError("row_keys", "%d row keys with %s: %s takes them, and only it", len(p.RowKeys), p.Function, UpdatableTopN)
	}
	for i, c := range p.RowKeys {
		if c < 0 || c >= len(in.Types) {
			return engine.ParamError("row_keys", "[%d]: column %d out of range (input has %d columns)", i, c, len(in.Types))
		}
		if t := in.Types[c]; t.ID == engine.Float || t.ID == engine.Double {
			return fmt.Errorf("%w: row_keys[%d] (%s): a FLOAT/DOUBLE upsert key: not native", engine.ErrUnsupported, i, t)
		}
	}
	if len(p.SortKeys) == 0 {
		return engine.ParamError("sort_keys", "empty")
	}
	for i, k := range p.SortKeys {
		if k.Field < 0 || k.Field >= len(in.Types) {
			return engine.ParamError("sort_keys", "[%d]: column %d out of range (input has %d columns)", i, k.Field, len(in.Types))
		}
		if p.Function == AppendOnlyFirstN {
			continue // ordered by arrival: the sort field is never read
		}
		switch t := in.Types[k.Field]; t.ID {
		case engine.Float, engine.Double:
			return fmt.Errorf("%w: sort_keys[%d] (%s): Flink's comparator takes NaN as equal to every value, which its buffer's order depends on: not native", engine.ErrUnsupported, i, t)
		case engine.Binary:
			return fmt.Errorf("%w: sort_keys[%d] (%s): not native yet", engine.ErrUnsupported, i, t)
		}
	}
	if p.RankStart < 1 || p.RankEnd < p.RankStart {
		return engine.ParamError("rank_start", "rank range [%d, %d] is not a range of ranks from 1", p.RankStart, p.RankEnd)
	}
	if p.Function == FastTop1 && (p.RankStart != 1 || p.RankEnd != 1) {
		return engine.ParamError("rank_end", "%s ranks 1 to 1, not %d to %d", FastTop1, p.RankStart, p.RankEnd)
	}
	if p.Function == AppendOnlyFirstN && (len(p.SortKeys) != 1 || !p.SortKeys[0].Ascending) {
		return engine.ParamError("sort_keys", "%s orders by one processing-time field ascending", AppendOnlyFirstN)
	}
	if p.Function == RetractableTopN {
		if p.RankStart > 1 && !p.OutputRankNumber {
			return fmt.Errorf("%w: %s with an offset and no rank number: Flink's function then stores rows with the RowKind it emitted them with, which its retractions compare: not native", engine.ErrUnsupported, RetractableTopN)
		}
		for c, t := range in.Types {
			if t.ID == engine.Float || t.ID == engine.Double {
				return fmt.Errorf("%w: %s over a %s field (%d): Flink's equaliser compares it by value or by its bits, as the row arrives: not native", engine.ErrUnsupported, RetractableTopN, t, c)
			}
		}
	}
	if p.StateTTLMs < 0 {
		return engine.ParamError("state_ttl_ms", "negative (%d)", p.StateTTLMs)
	}
	if p.StateTTLMs > 0 && p.Function != AppendOnlyFirstN {
		return fmt.Errorf("%w: state_ttl_ms with %s: Flink's results then depend on which keys its LRU cache holds: not native", engine.ErrUnsupported, p.Function)
	}
	return nil
}
