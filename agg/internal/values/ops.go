package values

import (
	"encoding/binary"
	"math/bits"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// Ops is what a generic kernel needs to know about its stored value type V beyond Go's ==
// (which means "the same stored value"): where argument values come from, Flink's order and
// identity on them, how they are kept, snapshotted and written. The implementations are NumOps
// (numbers, DATE, TIMESTAMP(p <= 3)), DecOps (DECIMAL), StrOps (VARCHAR), BoolOps and
// TimestampOps (TIMESTAMP(p > 3)), and they are the only place where the value types differ:
// the generic kernels of package kernels are written once, over V and O.
//
// A method of a type parameter is an indirect call through the instantiation's dictionary (Go
// compiles generic code once per GC shape) and is never inlined, which made the per-row loops
// 1.2-4x slower. The per-row methods of each kernel are therefore generated per value family
// with O a concrete type (agg/kernels/kernels_gen.go, by go generate), where these calls
// inline across the package boundary; the methods left generic run once per call or per
// group. docs/group-aggregate.md#kernels has the measurements.

// Ops values are per accumulator and not safe for concurrent use. V values that refer to
// memory (StrRef) are valid for the ops that produced them; KeepFrom copies one across.
type Ops[V comparable] interface {
	// Bind points at for the rows of one call: column col of in, which is the aggregate's
	// argument (argument true; VARCHAR then reads the call's java_strings flags) or a partial
	// state column. Unbind drops every reference into the batch.
	Bind(in *engine.Batch, col int, argument bool)
	Unbind()
	// At is row i's value of the bound column, which must not be NULL. It may refer to the
	// batch (VARCHAR) until Keep copies it.
	At(i int) V

	// Keep returns an owned copy of v that outlives the batch; Drop releases an owned value no
	// longer referenced. KeepFrom copies a value owned by other ops of the same type.

	Keep(v V) V
	KeepFrom(from Ops[V], v V) V
	Drop(v V)

	// Less is Flink's < on the type, as MinAggFunction's lessThan generates it: Java's
	// primitive < for numbers (NaN is never less, -0.0 is not less than 0.0), compareTo < 0 for
	// DecimalData and StringData. Compare is compareTo (Double.compare's total order for
	// floating point), as Min/MaxWithRetractAggFunction calls it. Equal is Java equals(), the
	// identity of MapView keys. Same is Flink's equaliser on results, asked only for two
	// non-NULL values that Go's == calls different.
	Less(a, b V) bool
	Compare(a, b V) int
	Equal(a, b V) bool
	Same(a, b V) bool
	// Hash hashes v's identity (equal values hash alike) within group g.
	Hash(g int32, v V) uint64

	// Put appends v's snapshot bytes; Get reads them back as an owned value. Sparse reports
	// whether a NULL slot is written as nothing (VARCHAR) rather than as a value (fixed width).
	Put(dst []byte, v V) []byte
	Get(src []byte) (V, []byte, error)
	Sparse() bool

	// Write fills output row j with vals[pick[j]] (vals[j] when pick is nil), NULL where nulls
	// says so; VarBytes is the VARCHAR data size Write needs (0 for fixed-width values).
	Write(out *engine.OutColumn, vals []V, nulls []bool, pick []int32)
	VarBytes(vals []V, nulls []bool, pick []int32) int

	// CompactDue reports whether the arena of owned values is mostly garbage. A kernel then
	// calls CompactStart, Move for every live owned value (replacing it with the result) and
	// CompactEnd, at the start of a call, when no recorded value is still to be read.

	CompactDue() bool
	CompactStart()
	Move(v V) V
	CompactEnd()
	// Bytes is the memory the ops own (the arena).
	Bytes() int64
}

// Arith adds SUM's arithmetic: a + b and a - b in the sum type, false when Flink's result is
// NULL (DECIMAL beyond 38 digits; integers wrap and floating point rounds, never NULL).
type Arith[V comparable] interface {
	Ops[V]
	Add(a, b V) (V, bool)
	Sub(a, b V) (V, bool)
}

// Number is the scalar physical type of a numeric aggregate argument or result.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~float32 | ~float64
}

// NumOps is Ops for numbers, stored as themselves: Java's primitive arithmetic and
// comparisons, boxed equals() and compareTo for identity and order.
type NumOps[T Number] struct {
	vals []T // bound column
}

func (o *NumOps[T]) Bind(in *engine.Batch, col int, _ bool) {
	o.vals = engine.Values[T](&in.Cols[col], in.Len)
}
func (o *NumOps[T]) Unbind()                           { o.vals = nil }
func (o *NumOps[T]) At(i int) T                        { return o.vals[i] }
func (o *NumOps[T]) Keep(v T) T                        { return v }
func (o *NumOps[T]) KeepFrom(_ Ops[T], v T) T          { return v }
func (o *NumOps[T]) Drop(T)                            {}
func (o *NumOps[T]) Less(a, b T) bool                  { return a < b }
func (o *NumOps[T]) Compare(a, b T) int                { return compare(a, b) }
func (o *NumOps[T]) Equal(a, b T) bool                 { return JavaBits(a) == JavaBits(b) }
func (o *NumOps[T]) Same(a, b T) bool                  { return a == b }
func (o *NumOps[T]) Hash(g int32, v T) uint64          { return valueHash(g, uint64(JavaBits(v)), 0) }
func (o *NumOps[T]) Put(dst []byte, v T) []byte        { return PutScalar(dst, v) }
func (o *NumOps[T]) Get(src []byte) (T, []byte, error) { return GetScalar[T](src) }
func (o *NumOps[T]) Sparse() bool                      { return false }
func (o *NumOps[T]) Add(a, b T) (T, bool)              { return a + b, true }
func (o *NumOps[T]) Sub(a, b T) (T, bool)              { return a - b, true }
func (o *NumOps[T]) Write(out *engine.OutColumn, vals []T, nulls []bool, pick []int32) {
	WriteFixed(out, vals, nulls, pick)
}
func (o *NumOps[T]) VarBytes([]T, []bool, []int32) int { return 0 }
func (o *NumOps[T]) CompactDue() bool                  { return false }
func (o *NumOps[T]) CompactStart()                     {}
func (o *NumOps[T]) Move(v T) T                        { return v }
func (o *NumOps[T]) CompactEnd()                       {}
func (o *NumOps[T]) Bytes() int64                      { return 0 }

// JavaBits returns the bits of x as Java's Double.doubleToLongBits / Float.floatToIntBits would,
// sign-extended to 64 bits: NaN collapses to the canonical NaN; integers return their value.
// Equal bits mean Java's equals() holds for the boxed values.
func JavaBits[T Number](x T) int64 {
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
func compare[T Number](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	ab, bb := JavaBits(a), JavaBits(b)
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	}
	return 1
}

// valueHash hashes a fixed-width value's identity words (lo, hi) within group g.
func valueHash(g int32, lo, hi uint64) uint64 {
	h := lo*0x9e3779b97f4a7c15 ^ hi*0xbf58476d1ce4e5b9 ^ uint64(uint32(g))*0xc2b2ae3d27d4eb4f
	h ^= h >> 29
	h *= 0x94d049bb133111eb
	return h ^ h>>32
}

// HashBytes hashes key bytes within group g: the entry hash of a string or DISTINCT key.
func HashBytes(g int32, key []byte) uint64 {
	h := uint64(g)*0x9e3779b97f4a7c15 ^ uint64(len(key))
	for len(key) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(key)) * 0xbf58476d1ce4e5b9
		h = bits.RotateLeft64(h, 31)
		key = key[8:]
	}
	for _, b := range key {
		h = (h ^ uint64(b)) * 0x94d049bb133111eb
	}
	return h ^ h>>29
}
