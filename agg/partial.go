package agg

import (
	"fmt"
	"strings"

	"github.com/ferrystream/ferry/engine"
)

// PartialSupport reports whether call's partial state (arg: the type of its first argument,
// for DISTINCT calls) crosses between a local and a global aggregate natively. Every call's
// does, the MapViews of DISTINCT calls and of MIN/MAX with retraction (package dataview's
// layouts) included, except where the global's result depends on the order of
// a java.util.HashMap: Flink's merge folds a DISTINCT call's new values in the
// iteration order of the buffer's MapView, and that order changes floating-point and DECIMAL
// (overflow) sums, MIN/MAX over floats (NaN never wins, -0.0 and 0.0 keep the first), and every
// LISTAGG (the order of the concatenation); and LISTAGG with retraction, whose partial state
// holds two ListViews that do not cross yet. The error wraps engine.ErrUnsupported and reads like "SUM(DISTINCT) over DOUBLE: the global
// aggregate folds the values in a java.util.HashMap's order: not native yet".
func PartialSupport(call AggCall, arg engine.Type) error {
	fn := strings.ToUpper(call.Func)
	if fn == "LISTAGG" && call.Retract {
		return fmt.Errorf("%w: LISTAGG with retraction in two phases: its ListView partial state does not cross yet", engine.ErrUnsupported)
	}
	if !call.Distinct || fn == "COUNT" {
		return nil
	}
	if fn == "LISTAGG" {
		return fmt.Errorf("%w: LISTAGG(DISTINCT): the global aggregate concatenates the values in a java.util.HashMap's order: not native yet", engine.ErrUnsupported)
	}
	if arg.ID == engine.Float || arg.ID == engine.Double || (arg.ID == engine.Decimal && fn != "MIN" && fn != "MAX") {
		arg.Nullable = true
		return fmt.Errorf("%w: %s(DISTINCT) over %s: the global aggregate folds the values in a java.util.HashMap's order: not native yet",
			engine.ErrUnsupported, strings.ReplaceAll(fn, "SUM0", "$SUM0"), arg)
	}
	return nil
}
