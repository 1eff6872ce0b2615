package engine

import (
	"fmt"
	"unsafe"
)

// CSchema mirrors struct ArrowSchema of the Arrow C Data Interface field for field, so pure Go
// can read a C schema without cgo. Ferry never writes to a CSchema it did not allocate.
type CSchema struct {
	Format      unsafe.Pointer // const char*
	Name        unsafe.Pointer // const char*
	Metadata    unsafe.Pointer // const char*
	Flags       int64
	NChildren   int64
	Children    unsafe.Pointer // struct ArrowSchema**
	Dictionary  unsafe.Pointer // struct ArrowSchema*
	Release     unsafe.Pointer // void (*)(struct ArrowSchema*)
	PrivateData unsafe.Pointer
}

// cString copies the NUL-terminated C string at p ("" for NULL).
func cString(p unsafe.Pointer) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(p, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// CheckSchema compares the host's schema of input number i with the spec: a "+s" struct whose
// children are the input's fields in their Arrow formats (Type.ArrowFormat) followed by the int8
// RowKind column, none of them dictionary-encoded or nested. Errors wrap ErrData.
func (in *Input) CheckSchema(s *CSchema, i int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: input schema %d: %s", ErrData, i, fmt.Sprintf(format, args...))
	}
	if s.Release == nil {
		return bad("already released")
	}
	if cString(s.Format) != "+s" {
		return bad("root is not a struct (\"+s\")")
	}
	n := len(in.Types)
	if s.NChildren != int64(n+1) || s.Children == nil {
		return bad("%d columns, want %d (%d declared + RowKind)", s.NChildren, n+1, n)
	}
	for c, k := range unsafe.Slice((**CSchema)(s.Children), n+1) {
		want, what := "c", "RowKind"
		if c < n {
			want, what = in.Types[c].ArrowFormat(), fmt.Sprintf("%s %s", in.Fields[c].Name, in.Types[c])
		}
		if k == nil || k.Format == nil {
			return bad("column %d is NULL", c)
		}
		if got := cString(k.Format); got != want {
			return bad("column %d (%s) has Arrow format %q, want %q", c, what, got, want)
		}
		if k.Dictionary != nil || k.NChildren != 0 {
			return bad("column %d (%s) must be a plain, non-dictionary array", c, what)
		}
	}
	return nil
}
