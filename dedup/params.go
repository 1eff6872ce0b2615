package dedup

import "github.com/ferrystream/ferry/engine"

// Kind is the kind's name in specs.
const Kind = "deduplicate"

// Params are the spec parameters of a deduplicate operator: the fields of Flink's
// StreamExecDeduplicate and the options its translation reads (docs/abi.md, "deduplicate").
type Params struct {
	// KeepLastRow keeps each key's last row (ORDER BY the time attribute DESC); false keeps its
	// first.
	KeepLastRow bool `json:"keep_last_row,omitempty"`
	// Rowtime orders by the row-time attribute, input column RowtimeIndex (Flink: the first
	// row-time field); false: by processing time, that is arrival order.
	Rowtime bool `json:"rowtime,omitempty"`
	// RowtimeIndex is the input column of the row-time attribute (TIMESTAMP(3) or
	// TIMESTAMP_LTZ(3)), read as Flink's RowData.getLong does: a NULL reads 0.
	RowtimeIndex int `json:"rowtime_index,omitempty"`
	// GenerateUpdateBefore emits -U before each +U (the planner's changelog mode).
	GenerateUpdateBefore bool `json:"generate_update_before,omitempty"`
	// GenerateInsert emits a key's first row as +I rather than +U
	// (table.exec.deduplicate.insert-update-after-sensitive-enabled).
	GenerateInsert bool `json:"generate_insert,omitempty"`
	// OutputInsertOnly is Flink's insert-only row-time keep-first deduplication
	// (RowTimeDeduplicateKeepFirstRowFunction): a key's earliest row is held until the watermark
	// passes it and emitted then as +I, rows behind the watermark are dropped. Only with Rowtime,
	// not KeepLastRow, not MiniBatch.
	OutputInsertOnly bool `json:"output_insert_only,omitempty"`
	// MiniBatch: every Process call is one bundle of Flink's KeyedMapBundleOperator, whose keys
	// finish in the iteration order of its java.util.HashMap.
	MiniBatch bool `json:"mini_batch,omitempty"`
	// CompactChanges folds a bundle's rows of a key into the one kept before comparing with the
	// state (RowTimeMiniBatchLatestChangeDeduplicateFunction;
	// table.exec.deduplicate.mini-batch.compact-changes-enabled). Only with Rowtime and MiniBatch.
	CompactChanges bool `json:"compact_changes,omitempty"`
	// StoredRowKeepsKind: the stored last row takes the row kind it is emitted with, as under
	// Flink's heap state backend, which keeps the row object itself (processing-time keep-last:
	// Flink's equaliser then finds a row stored as +U unequal to an identical next row). False:
	// the row is stored as it arrived, as a serializing backend (RocksDB, ForSt) stores it.
	StoredRowKeepsKind bool `json:"stored_row_keeps_kind,omitempty"`
	// StateTTLMs is the idle-state retention in ms (table.exec.state.ttl; Flink reads no STATE_TTL
	// hint on a rank); 0 keeps state forever. It also turns off the suppression of unchanged rows.
	StateTTLMs int64 `json:"state_ttl_ms,omitempty"`
}

// validate checks the params against the spec's one input.
func (p *Params) validate(spec *engine.Spec) error {
	if len(spec.Inputs) != 1 {
		return engine.SpecError("inputs", "%s has 1 input, not %d", Kind, len(spec.Inputs))
	}
	in := &spec.Inputs[0]
	if p.StateTTLMs < 0 {
		return engine.ParamError("state_ttl_ms", "negative (%d)", p.StateTTLMs)
	}
	if p.Rowtime {
		if p.RowtimeIndex < 0 || p.RowtimeIndex >= len(in.Types) {
			return engine.ParamError("rowtime_index", "column %d out of range (input has %d columns)", p.RowtimeIndex, len(in.Types))
		}
		if t := in.Types[p.RowtimeIndex]; t.ID != engine.Timestamp || t.Precision > 3 {
			return engine.ParamError("rowtime_index", "column %d is %s, not a TIMESTAMP(3) or TIMESTAMP_LTZ(3)", p.RowtimeIndex, t)
		}
	} else if p.RowtimeIndex != 0 {
		return engine.ParamError("rowtime_index", "set without rowtime")
	}
	if p.OutputInsertOnly && (!p.Rowtime || p.KeepLastRow || p.MiniBatch) {
		return engine.ParamError("output_insert_only", "only for row-time keep-first without mini-batch")
	}
	if p.CompactChanges && (!p.Rowtime || !p.MiniBatch) {
		return engine.ParamError("compact_changes", "only for row-time mini-batch")
	}
	return nil
}
