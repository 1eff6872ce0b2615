package values

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// The per-group state payload of snapshots (engine.PerKey's Save and Load): each Put appends a
// value, each Get reads one and returns the rest. Every Get checks lengths and returns
// engine.ErrData on short or malformed input; nothing panics on a corrupt payload.

// ErrTruncated is the error of a Get that finds its value truncated or malformed.
var ErrTruncated = fmt.Errorf("%w: state payload truncated", engine.ErrData)

// PutVarint appends v as a signed varint (encoding/binary).
func PutVarint(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

// GetVarint reads a signed varint.
func GetVarint(src []byte) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, ErrTruncated
	}
	return v, src[n:], nil
}

// PutBool appends b as one byte, 0 or 1.
func PutBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// GetBool reads a byte PutBool wrote; any other byte is malformed.
func GetBool(src []byte) (bool, []byte, error) {
	if len(src) < 1 || src[0] > 1 {
		return false, nil, ErrTruncated
	}
	return src[0] == 1, src[1:], nil
}

// PutScalar appends the raw little-endian bytes of v (floating-point bits preserved).
func PutScalar[T Number](dst []byte, v T) []byte {
	return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))...)
}

// GetScalar reads a value PutScalar wrote.
func GetScalar[T Number](src []byte) (T, []byte, error) {
	var v T
	n := int(unsafe.Sizeof(v))
	if len(src) < n {
		return v, nil, ErrTruncated
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), n), src)
	return v, src[n:], nil
}
