package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// VarOutput is implemented by accumulators whose output column is VARCHAR: VarBytes is the
// total UTF-8 size of the values Write will put in output rows pick, for OutBatch.Init.
type VarOutput interface {
	VarBytes(pick []int32) int
}

// varcharCall builds the accumulator of MIN or MAX over VARCHAR; its result type is the
// argument type, nullable.
func varcharCall(fn string, col, javaCol int, arg engine.Type, retract bool) (Accumulator, engine.Type) {
	out := arg
	out.Nullable = true
	if retract {
		return &strMinMaxRetractAcc{newMinMaxRetract[values.StrRef](fn, col, arg, values.NewStrOps(javaCol))}, out
	}
	return &strMinMaxAcc{newMinMax[values.StrRef](fn, col, out, values.NewStrOps(javaCol))}, out
}

// VarBytes is the output size of VARCHAR MIN/MAX (VarOutput); only VARCHAR accumulators have
// it.
func (a *strMinMaxAcc) VarBytes(pick []int32) int { return a.ops.VarBytes(a.vals, a.nulls, pick) }

func (a *strMinMaxRetractAcc) VarBytes(pick []int32) int {
	return a.ops.VarBytes(a.vals, a.nulls, pick)
}
