package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// sumType is the type of SUM, $SUM0 and AVG's sum over DECIMAL(p, s): DECIMAL(38, s)
// (LogicalTypeMerging.findSumAggType), nullable.
func sumType(arg engine.Type) engine.Type {
	return engine.Type{ID: engine.Decimal, Precision: 38, Scale: arg.Scale, Nullable: true}
}

// decimalCall builds the accumulator of fn over a DECIMAL argument of type arg, and the result
// type Flink's planner declares: SUM and $SUM0 give DECIMAL(38, s) (findSumAggType), AVG
// DECIMAL(38, max(6, s)) (findAvgAggType), MIN and MAX the argument type. Every result is
// nullable: $SUM0 over DECIMAL turns NULL on overflow.
func decimalCall(fn string, col int, arg engine.Type, retract bool) (Accumulator, engine.Type) {
	out := sumType(arg)
	switch fn {
	case "SUM":
		return &decSumAcc{sumAcc[values.Dec128, *values.DecOps]{col: col, retract: retract, typ: out, ops: &values.DecOps{}}}, out
	case "SUM0":
		return &decSum0Acc{col: col, typ: out}, out
	case "AVG":
		out.Scale = max(6, arg.Scale)
		return &decAvgAcc{col: col, up: out.Scale - arg.Scale, sumType: sumType(arg)}, out
	case "MIN", "MAX":
		out = arg
		out.Nullable = true
		if retract {
			return &decMinMaxRetractAcc{newMinMaxRetract[values.Dec128](fn, col, arg, &values.DecOps{})}, out
		}
		return &decMinMaxAcc{newMinMax[values.Dec128](fn, col, out, &values.DecOps{})}, out
	}
	return nil, engine.Type{}
}
