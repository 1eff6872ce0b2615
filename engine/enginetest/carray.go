package enginetest

import (
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// released marks the release callback of arrays CArray builds: never called, only non-nil.
var released byte

// CArray lays b out as a struct ArrowArray tree in Go memory, the shape a host passes to
// ferry_operator_process: one child per column (offset and length as b's view), then the int8
// RowKind column. For pure-Go tests of code that imports C arrays (engine.Importer); nothing may
// release it.
func CArray(b *engine.Batch) *engine.CArray {
	n := len(b.Cols)
	kids := make([]*engine.CArray, n+1)
	for i := range b.Cols {
		c := &b.Cols[i]
		bufs := []unsafe.Pointer{ptr(c.Valid), ptr(c.Data)}
		if c.Type.Variable() {
			var offs unsafe.Pointer
			if c.Offs != nil {
				offs = unsafe.Pointer(unsafe.SliceData(c.Offs))
			}
			bufs = []unsafe.Pointer{ptr(c.Valid), offs, ptr(c.Data)}
		}
		nulls := int64(0)
		for r := range b.Len {
			if c.IsNull(r) {
				nulls++
			}
		}
		kids[i] = array(int64(c.Offset+b.Len), nulls, int64(c.Offset), bufs)
	}
	kinds := append([]byte(nil), b.Kinds...)
	kids[n] = array(int64(b.Len), 0, 0, []unsafe.Pointer{nil, ptr(kinds)})
	root := array(int64(b.Len), 0, 0, []unsafe.Pointer{nil})
	root.NChildren = int64(n + 1)
	root.Children = unsafe.Pointer(unsafe.SliceData(kids))
	return root
}

func array(length, nulls, offset int64, bufs []unsafe.Pointer) *engine.CArray {
	return &engine.CArray{Length: length, NullCount: nulls, Offset: offset, NBuffers: int64(len(bufs)),
		Buffers: unsafe.Pointer(unsafe.SliceData(bufs)), Release: unsafe.Pointer(&released)}
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}
