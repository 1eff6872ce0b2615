package main

// The operator kinds of libferry.so: each package registers its kinds (engine.RegisterKeyed,
// engine.RegisterFunction) when it is imported. A new kind adds its import here, and nothing
// else of the C ABI changes.
import (
	_ "github.com/ferrystream/ferry/agg"               // group_aggregate, local_group_aggregate, global_group_aggregate, incremental_group_aggregate
	_ "github.com/ferrystream/ferry/intervaljoin"      // interval_join
	_ "github.com/ferrystream/ferry/lookup/jdbclookup" // jdbc_lookup
	_ "github.com/ferrystream/ferry/windowjoin"        // window_join
)
