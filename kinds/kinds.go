// Package kinds lists Ferry's operator kinds: importing it registers every kind of the
// production library (engine.KindOf, engine.Kinds). A new kind adds the import of its package
// here, and nothing else of the C ABI or the session changes (docs/abi.md, "Adding an operator
// kind").
package kinds

import (
	_ "github.com/ferrystream/ferry/agg"               // group_aggregate, local_group_aggregate, global_group_aggregate, incremental_group_aggregate
	_ "github.com/ferrystream/ferry/dedup"             // deduplicate
	_ "github.com/ferrystream/ferry/intervaljoin"      // interval_join
	_ "github.com/ferrystream/ferry/lookup/jdbclookup" // jdbc_lookup
	_ "github.com/ferrystream/ferry/regularjoin"       // regular_join
	_ "github.com/ferrystream/ferry/topn"              // top_n
	_ "github.com/ferrystream/ferry/windowagg"         // window_aggregate
	_ "github.com/ferrystream/ferry/windowjoin"        // window_join
)
