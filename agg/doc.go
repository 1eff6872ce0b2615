// Package agg holds the group aggregate operator kinds: the single-phase GROUP BY
// (group_aggregate: GroupAggregate, and MiniBatchGroupAggregate in mini-batch mode) and the
// stages of the two-phase mini-batch GROUP BY (local_group_aggregate,
// incremental_group_aggregate, global_group_aggregate), each emitting exactly the changelog of
// its Flink 2.3 operator (docs/group-aggregate.md). It owns their spec params (Spec, Params,
// AggCall), the keyed state each keeps through engine.KeyedState, the bundles and the
// java.util.HashMap orders they emit in, the layout of partial rows, the import and export of
// Flink's own state (flinkstate.go), and frames in and out of the columnar exchange (Framed,
// package exchange).
//
// The per-call work is the kernels': one accumulator per aggregate call (package kernels), the
// DISTINCT value sets (package distinct), the layouts of Flink's data views (package dataview).
// Those packages never import this one.
package agg
