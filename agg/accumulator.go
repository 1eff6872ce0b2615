package agg

import "github.com/ferrystream/ferry/engine"

// accumulator holds the state of one aggregate call for every group of an operator
// (DataFusion's GroupsAccumulator shape). Dispatch happens once per batch per call; the per-row
// loops inside are monomorphic.
type accumulator interface {
	engine.PerKey // per group (key id), in flat slices
	// fold applies the rows of in, in order, to their groups: row i goes to group gids[i] and
	// is accumulated (act[i] > 0), retracted (act[i] < 0) or left out (act[i] == 0, e.g. by a
	// FILTER or DISTINCT); rows with gids[i] < 0 are skipped. It records each row's value before
	// and after folding and sets changed[i] when the two differ under Flink's equaliser.
	fold(in *engine.Batch, gids []int32, act []int8, changed []bool)
	// write fills output row j with the value of the last fold picked by pick[j]: 2i for row
	// i's value before folding, 2i+1 after (rowValues).
	write(out *engine.OutColumn, pick []int32)
	// differ reports whether entries a and b of the last fold (as picked by write) differ under
	// Flink's equaliser.
	differ(a, b int32) bool
}
