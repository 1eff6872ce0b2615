package values

import (
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// WriteFixed fills output row j with vals[pick[j]] (NULL when nulls[pick[j]]), or with vals[j]
// when pick is nil. V is fixed-width and laid out in memory as its Arrow value (numbers;
// Dec128, two little-endian words = Arrow's decimal128). Values under NULL are written as zero.
func WriteFixed[V comparable](out *engine.OutColumn, vals []V, nulls []bool, pick []int32) {
	var zero V
	if pick == nil {
		dst := FixedSlice[V](out.Data)[:len(vals)]
		for j, x := range vals {
			dst[j] = x
			if nulls[j] {
				dst[j] = zero
				out.SetNull(j)
			}
		}
		return
	}
	dst := FixedSlice[V](out.Data)[:len(pick)]
	for j, p := range pick {
		dst[j] = vals[p]
		if nulls[p] {
			dst[j] = zero
			out.SetNull(j)
		}
	}
}

// FixedSlice reinterprets b as values of the fixed-width type V. Output buffers are 8-byte
// aligned (engine.Allocator).
func FixedSlice[V any](b []byte) []V {
	var zero V
	n := len(b) / int(unsafe.Sizeof(zero))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*V)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
