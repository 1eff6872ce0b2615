package dataview

import (
	"encoding/binary"
	"math"

	"github.com/ferrystream/ferry/engine"
)

// $WELFORD_M2's accumulator (STDDEV and VAR), Flink's nested row STRUCTURED<n BIGINT, mean
// DOUBLE, m2 DOUBLE>, crosses as 24 bytes (docs/abi.md#data-views):
//
//	acc := n int64 LE, mean float64 bits LE, m2 float64 bits LE

// WelfordType is the type of a column of $WELFORD_M2 accumulators.
var WelfordType = engine.Type{ID: engine.Binary, Nullable: true}

// WelfordSize is the size of an encoded $WELFORD_M2 accumulator.
const WelfordSize = 24

// PutWelford writes the accumulator (n, mean, m2) to b[:WelfordSize].
func PutWelford(b []byte, n int64, mean, m2 float64) {
	binary.LittleEndian.PutUint64(b, uint64(n))
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(mean))
	binary.LittleEndian.PutUint64(b[16:], math.Float64bits(m2))
}

// Welford reads the accumulator in b[:WelfordSize].
func Welford(b []byte) (n int64, mean, m2 float64) {
	return int64(binary.LittleEndian.Uint64(b)), math.Float64frombits(binary.LittleEndian.Uint64(b[8:])),
		math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))
}
