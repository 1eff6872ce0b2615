// Package dataview is the byte layout of Flink's data views and nested accumulators as they
// cross between Go and the JVM (docs/abi.md#data-views): the MapViews of DISTINCT calls
// (DistinctMap), the accumulator of MIN/MAX with retraction with its MapView (MinMaxAcc) and
// $WELFORD_M2's nested row (PutWelford), each one VARBINARY value per row. They cross in two
// forms: in the partial rows of the two-phase aggregate (Flink's local aggregate writes them, its
// global aggregate merges them), and as Flink keeps them in state, each map entry followed by its
// last write under idle-state TTL, when a savepoint moves between Flink's operator and Ferry's.
// The JVM's side is jni's arrow/DistinctViews, MinMaxAccumulators and WelfordAccumulators.
//
// Inside a view a value is a key: its Arrow bytes (NextKey, AppendKey, KeyColumn).
//
// The package knows the layouts only: the DISTINCT sets (package distinct) and the kernels
// (package kernels) write and merge their own state through it. It imports engine (and the
// scratch helpers) only.
package dataview
