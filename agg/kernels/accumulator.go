package kernels

import "github.com/ferrystream/ferry/engine"

// Accumulator holds the state of one aggregate call for every group of an operator
// (DataFusion's GroupsAccumulator shape). Dispatch happens once per batch per call; the per-row
// loops inside are monomorphic.
type Accumulator interface {
	engine.PerKey // per group (key id), in flat slices
	// Fold applies the rows of in, in order, to their groups: row i goes to group gids[i] and
	// is accumulated (act[i] > 0), retracted (act[i] < 0) or left out (act[i] == 0, e.g. by a
	// FILTER or DISTINCT); rows with gids[i] < 0 are skipped. It records each row's value before
	// and after folding and sets changed[i] when the two differ under Flink's equaliser.
	Fold(in *engine.Batch, gids []int32, act []int8, changed []bool)
	// Write fills output row j with the value of the last fold picked by pick[j]: 2i for row
	// i's value before folding, 2i+1 after (rowValues).
	Write(out *engine.OutColumn, pick []int32)
	// Differ reports whether entries a and b of the last fold (as picked by Write) differ under
	// Flink's equaliser.
	Differ(a, b int32) bool
	PartialState
}

// PartialState is an accumulator's partial state: the fields of Flink's accumulator row for the
// call (partial.go). The two-phase aggregate's local operator writes it per key; its global
// operator merges such rows into its own state.
type PartialState interface {
	// PartialTypes returns the types of the accumulator's fields in the order of Flink's
	// accumulator row, or an error wrapping engine.ErrUnsupported when Ferry cannot carry them
	// as Arrow columns (a MapView).
	PartialTypes() ([]engine.Type, error)
	// PartialVarBytes sets dst[k] to the data size partial column k needs for groups when it is
	// VARCHAR, for OutBatch.Init; dst has one entry per partial column.
	PartialVarBytes(groups []int32, dst []int)
	// WritePartial writes the partial state of group groups[j] to row j of out, one column per
	// partial field, laid out by OutBatch.Init for len(groups) rows.
	WritePartial(out []engine.OutColumn, groups []int32) error
	// Merge merges partial rows, in order: row i of the columns in.Cols[first:] (one per
	// partial field) into group gids[i]; rows with gids[i] < 0 are skipped. It follows Flink's
	// merge expressions (or merge method) for the function, records each row's value before
	// and after as Fold does (Write and Differ read them) and sets changed[i] when the two
	// differ under Flink's equaliser. It checks the columns first and changes nothing when it
	// returns an error.
	Merge(in *engine.Batch, first int, gids []int32, changed []bool) error
}
