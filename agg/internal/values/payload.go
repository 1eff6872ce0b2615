package values

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// Helpers for the per-group state payload of snapshots. Every reader checks lengths and
// returns engine.ErrData on short or malformed input; nothing panics on a corrupt payload.

var ErrTruncated = fmt.Errorf("%w: state payload truncated", engine.ErrData)

func PutVarint(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

func GetVarint(src []byte) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, ErrTruncated
	}
	return v, src[n:], nil
}

func PutBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

func GetBool(src []byte) (bool, []byte, error) {
	if len(src) < 1 || src[0] > 1 {
		return false, nil, ErrTruncated
	}
	return src[0] == 1, src[1:], nil
}

// putScalar appends the raw little-endian bytes of v (floating-point bits preserved).
func PutScalar[T Number](dst []byte, v T) []byte {
	return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v))...)
}

func GetScalar[T Number](src []byte) (T, []byte, error) {
	var v T
	n := int(unsafe.Sizeof(v))
	if len(src) < n {
		return v, nil, ErrTruncated
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&v)), n), src)
	return v, src[n:], nil
}
