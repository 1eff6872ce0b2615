// Package distinct holds the value sets of DISTINCT calls (Flink's DistinctAggCodeGen): per key,
// for the calls that share an argument column, a map from each distinct value to a bit or count
// per call, which turns each row into one action per call (+1 accumulate, -1 retract, 0
// nothing) for the call's ordinary accumulator (package kernels) to fold. A Set is per-key
// state (engine.PerKey, engine.EntryState with per-entry idle-state TTL); it writes, checks and
// merges its maps in the layout of package dataview, as Flink's two-phase aggregates exchange
// them in partial rows and keep them in state. It imports engine, dataview and the internal
// helpers only: never the kernels or the operators.
package distinct
