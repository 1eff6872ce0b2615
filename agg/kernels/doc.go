// Package kernels holds the accumulators of the group aggregates: one Accumulator per aggregate
// call (COUNT, SUM, $SUM0, AVG, MIN and MAX with and without retraction, FIRST_VALUE and
// LAST_VALUE, LISTAGG, SINGLE_VALUE, $WELFORD_M2 behind STDDEV and VAR), holding the call's
// state for every group of an operator in flat slices and folding a whole batch per call.
// New resolves a call to its accumulator and result type (Support tells what runs natively).
//
// Each accumulator reproduces its Flink function exactly: accumulate, retract, Flink's
// equaliser on results (Fold, Write, Differ record every row's value before and after), the
// fields of Flink's accumulator row and its merge (PartialState, for the two-phase aggregate),
// the snapshot payload of each group (engine.PerKey), and for MIN/MAX with retraction its
// MapView in Flink's state (ViewState). DISTINCT and FILTER reach an accumulator as per-row
// actions (+1, -1, 0); package distinct resolves DISTINCT.
//
// MIN/MAX, MIN/MAX with retraction and SUM are templates over a stored value type V and its
// value-ops O (package values), built on parts shared with the other kernels over value-ops:
// groupValues (one nullable value per group, also SINGLE_VALUE's) and opsValues (the recorder
// that compares and writes through the ops). kernels_gen.go specializes the per-row methods of
// the templates and their parts per value family, with O concrete, so the ops calls inline. It
// is written by go generate (internal/gen), whose test fails when the file is stale;
// kernels_hand.go holds the few specialized methods written by hand.
// docs/group-aggregate.md#kernels has the measurements.
//
// The package imports engine, values, entries, dataview and scratch: never the operators
// (package agg) or the DISTINCT sets.
package kernels

//go:generate go run ./internal/gen
