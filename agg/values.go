package agg

import (
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// number is the scalar physical type of a numeric aggregate argument or result.
type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// rowValues records, for each row of the current batch, an aggregate's value before and after
// the row was folded, interleaved: entry 2i is row i's value before, 2i+1 after. The group
// aggregate emits -U/-D rows from the former and +I/+U rows from the latter, picking entries by
// index with no branch. Owned by one accumulator, reused across batches.
type rowValues[T number] struct {
	vals  []T
	nulls []bool
}

func (v *rowValues[T]) reset(n int) {
	v.vals = resize(v.vals, 2*n)
	v.nulls = resize(v.nulls, 2*n)
	clear(v.nulls)
}

// record stores row i's values before (pv, pn = NULL) and after (nv, nn) folding, and flags the
// row as changed when Flink's equaliser would: it compares with Java's ==, so NaN differs from
// itself and -0.0 equals 0.0.
func (v *rowValues[T]) record(i int, pv T, pn bool, nv T, nn bool, changed []bool) {
	v.vals[2*i], v.vals[2*i+1] = pv, nv
	v.nulls[2*i], v.nulls[2*i+1] = pn, nn
	if pn != nn || (!nn && pv != nv) {
		changed[i] = true
	}
}

// differ compares entries a and b as record compares a row's before and after.
func (v *rowValues[T]) differ(a, b int32) bool {
	return v.nulls[a] != v.nulls[b] || (!v.nulls[b] && v.vals[a] != v.vals[b])
}

// write fills output row j with entry pick[j] (see rowValues).
func (v *rowValues[T]) write(out *engine.OutColumn, pick []int32) {
	dst := engine.OutValues[T](out)[:len(pick)]
	vals, nulls := v.vals, v.nulls
	for j, p := range pick {
		dst[j] = vals[p]
		if nulls[p] {
			out.SetNull(j)
		}
	}
}

// resize returns s with length n, reusing its array when it is large enough. Contents are not
// cleared.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}

// extend grows per-group state s to n entries; new entries are zero.
func extend[T any](s []T, n int) []T {
	for len(s) < n {
		var zero T
		s = append(s, zero)
	}
	return s
}

// bitsOf returns the bits of x as Java's Double.doubleToLongBits / Float.floatToIntBits would,
// sign-extended to 64 bits: NaN collapses to the canonical NaN; integers return their value.
// Equal bits mean Java's equals() holds for the boxed values.
func bitsOf[T number](x T) int64 {
	size := unsafe.Sizeof(x)
	if x != x { // NaN
		if size == 4 {
			return 0x7fc00000
		}
		return 0x7ff8000000000000
	}
	switch size {
	case 8:
		return *(*int64)(unsafe.Pointer(&x))
	case 4:
		return int64(*(*int32)(unsafe.Pointer(&x)))
	case 2:
		return int64(*(*int16)(unsafe.Pointer(&x)))
	}
	return int64(*(*int8)(unsafe.Pointer(&x)))
}

// compare is Java's compareTo for the boxed values: numeric order for integers, and for
// floating point Double.compare's total order (-0.0 < 0.0, NaN above +Inf, NaN equal to NaN).
func compare[T number](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := bitsOf(a), bitsOf(b)
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	}
	return 1
}
