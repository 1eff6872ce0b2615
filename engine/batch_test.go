package engine_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// Pure-Go tests of Importer.Import: the ArrowArray structs (engine.CArray) and their buffers live
// in Go memory, which is fine without cgo. Every validation rule of batch.go has a case that must
// fail with ErrData (ErrInvalid for a NULL root) and a message naming the offending array.

// liveRelease is a stand-in release callback: Import only checks it is not NULL.
var releaseMarker byte

func live() unsafe.Pointer { return unsafe.Pointer(&releaseMarker) }

func ptrs(ps ...unsafe.Pointer) unsafe.Pointer {
	if len(ps) == 0 {
		return nil
	}
	return unsafe.Pointer(&ps[0])
}

func bytesPtr(b []byte) unsafe.Pointer {
	if b == nil {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

// bitmap sets bit i for every valid[i].
func bitmap(valid []bool) []byte {
	b := make([]byte, (len(valid)+7)/8+1)
	for i, v := range valid {
		if v {
			b[i>>3] |= 1 << (i & 7)
		}
	}
	return b
}

func nullCount(valid []bool) int64 {
	n := int64(0)
	for _, v := range valid {
		if !v {
			n++
		}
	}
	return n
}

// fixedArray is a fixed-width column: data holds all elements (offset included).
func fixedArray(data []byte, elems int, valid []bool) *engine.CArray {
	a := &engine.CArray{Length: int64(elems), NBuffers: 2, Release: live()}
	var v unsafe.Pointer
	if valid != nil {
		v = bytesPtr(bitmap(valid))
		a.NullCount = nullCount(valid)
	}
	a.Buffers = ptrs(v, bytesPtr(data))
	return a
}

func int64Array(vals []int64, valid []bool) *engine.CArray {
	data := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
	}
	return fixedArray(data, len(vals), valid)
}

func int32Array(vals []int32, valid []bool) *engine.CArray {
	data := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(data[4*i:], uint32(v))
	}
	return fixedArray(data, len(vals), valid)
}

func boolArray(vals []bool, valid []bool) *engine.CArray {
	return fixedArray(bitmap(vals), len(vals), valid)
}

func kindArray(kinds ...byte) *engine.CArray {
	return fixedArray(append([]byte(nil), kinds...), len(kinds), nil)
}

func stringArray(vals []string, valid []bool) *engine.CArray {
	offs := make([]int32, len(vals)+1)
	var data []byte
	for i, s := range vals {
		data = append(data, s...)
		offs[i+1] = int32(len(data))
	}
	a := &engine.CArray{Length: int64(len(vals)), NBuffers: 3, Release: live()}
	var v unsafe.Pointer
	if valid != nil {
		v = bytesPtr(bitmap(valid))
		a.NullCount = nullCount(valid)
	}
	a.Buffers = ptrs(v, unsafe.Pointer(&offs[0]), bytesPtr(data))
	return a
}

func structArray(length int64, kids ...*engine.CArray) *engine.CArray {
	cs := append([]*engine.CArray(nil), kids...)
	a := &engine.CArray{Length: length, NBuffers: 1, NChildren: int64(len(kids)), Buffers: ptrs(nil), Release: live()}
	if len(cs) > 0 {
		a.Children = unsafe.Pointer(&cs[0])
	}
	return a
}

func children(root *engine.CArray) []*engine.CArray {
	return unsafe.Slice((**engine.CArray)(root.Children), root.NChildren)
}

func buffers(a *engine.CArray) []unsafe.Pointer {
	return unsafe.Slice((*unsafe.Pointer)(a.Buffers), a.NBuffers)
}

func mustType(t *testing.T, s string) engine.Type {
	t.Helper()
	ty, err := engine.ParseType(s)
	if err != nil {
		t.Fatal(err)
	}
	return ty
}

// The declared schema of the tests: k BIGINT, s VARCHAR, n INT NOT NULL, b BOOLEAN, RowKind.
func testImporter(t *testing.T) *engine.Importer {
	return &engine.Importer{
		Types: []engine.Type{mustType(t, "BIGINT"), mustType(t, "VARCHAR"), mustType(t, "INT NOT NULL"), mustType(t, "BOOLEAN")},
		Names: []string{"k", "s", "n", "b"},
	}
}

// validBatch is 4 rows: keys with a NULL, strings with an empty one and a NULL, and RowKinds.
func validBatch() *engine.CArray {
	return structArray(4,
		int64Array([]int64{10, 20, 0, 40}, []bool{true, true, false, true}),
		stringArray([]string{"a", "", "xyz", "long string value"}, []bool{true, true, true, false}),
		int32Array([]int32{1, -2, 3, math.MaxInt32}, nil),
		boolArray([]bool{true, false, true, true}, []bool{true, true, true, true}),
		kindArray(0, 1, 2, 3),
	)
}

func TestImportValidationRules(t *testing.T) {
	col := func(i int) func(*engine.CArray) *engine.CArray {
		return func(root *engine.CArray) *engine.CArray { return children(root)[i] }
	}
	rootOf := func(root *engine.CArray) *engine.CArray { return root }
	type mut struct {
		name   string
		target func(*engine.CArray) *engine.CArray
		apply  func(root, a *engine.CArray)
		msg    []string
	}
	// Header rules apply to the root and to every child; each child names itself.
	var cases []mut
	headerRules := []struct {
		name  string
		apply func(root, a *engine.CArray)
		msg   string
	}{
		{"negative length", func(_, a *engine.CArray) { a.Length = -1 }, "negative length -1"},
		{"negative offset", func(_, a *engine.CArray) { a.Offset = -3 }, "negative offset -3"},
		{"length beyond 2^40", func(_, a *engine.CArray) { a.Length = 1<<40 + 1 }, "too large"},
		{"offset+length overflow", func(_, a *engine.CArray) { a.Offset = math.MaxInt64 }, "too large"},
		{"offset+length beyond 2^40", func(_, a *engine.CArray) { a.Offset = 1 << 40 }, "too large"},
		{"null count < -1", func(_, a *engine.CArray) { a.NullCount = -2 }, "null count -2 outside [-1,"},
		{"null count > length", func(_, a *engine.CArray) { a.NullCount = a.Length + 1 }, "outside [-1,"},
		{"negative n_buffers", func(_, a *engine.CArray) { a.NBuffers = -1 }, "negative buffer or child count"},
		{"negative n_children", func(_, a *engine.CArray) { a.NChildren = -1 }, "negative buffer or child count"},
		{"buffers NULL", func(_, a *engine.CArray) { a.Buffers = nil }, "buffers pointer is NULL"},
	}
	targets := []struct {
		name   string
		target func(*engine.CArray) *engine.CArray
		label  string
	}{
		{"root", rootOf, "input batch"},
		{"BIGINT", col(0), "input column 0 (k)"},
		{"VARCHAR", col(1), "input column 1 (s)"},
		{"INT", col(2), "input column 2 (n)"},
		{"BOOLEAN", col(3), "input column 3 (b)"},
		{"RowKind", col(4), "input column 4 (RowKind)"},
	}
	for _, tg := range targets {
		for _, h := range headerRules {
			cases = append(cases, mut{tg.name + "/" + h.name, tg.target, h.apply, []string{tg.label, h.msg}})
		}
	}
	cases = append(cases, []mut{
		// Struct rules.
		{"root/n_buffers 2", rootOf, func(_, a *engine.CArray) { a.NBuffers = 2; a.Buffers = ptrs(nil, nil) }, []string{"input batch: struct array has 2 buffers, want 1"}},
		{"root/n_buffers 0", rootOf, func(_, a *engine.CArray) { a.NBuffers = 0; a.Buffers = nil }, []string{"struct array has 0 buffers, want 1"}},
		{"root/too few children", rootOf, func(_, a *engine.CArray) { a.NChildren = 4 }, []string{"input batch has 4 columns, want 5 (4 declared + RowKind)"}},
		{"root/too many children", rootOf, func(_, a *engine.CArray) { a.NChildren = 6 }, []string{"input batch has 6 columns, want 5"}},
		{"root/null rows", rootOf, func(_, a *engine.CArray) { a.NullCount = 1; a.Buffers = ptrs(bytesPtr([]byte{0x0e})) }, []string{"struct array has null rows"}},
		{"root/dictionary", rootOf, func(_, a *engine.CArray) { a.Dictionary = unsafe.Pointer(validBatch()) }, []string{"input batch: unexpected dictionary"}},
		{"root/children NULL", rootOf, func(_, a *engine.CArray) { a.Children = nil }, []string{"input batch: children pointer is NULL"}},
		// Child rules.
		{"child NULL", rootOf, func(_, a *engine.CArray) { children(a)[1] = nil }, []string{"input column 1 (s): child array is NULL"}},
		{"child released", col(2), func(_, a *engine.CArray) { a.Release = nil }, []string{"input column 2 (n): child array is released"}},
		{"VARCHAR with 2 buffers", col(1), func(_, a *engine.CArray) { a.NBuffers = 2 }, []string{"input column 1 (s): buffer count 2, want 3 for VARCHAR"}},
		{"BIGINT with 3 buffers", col(0), func(_, a *engine.CArray) { v := buffers(a)[1]; a.NBuffers = 3; a.Buffers = ptrs(nil, v, nil) }, []string{"input column 0 (k): buffer count 3, want 2 for BIGINT"}},
		{"BOOLEAN with 1 buffer", col(3), func(_, a *engine.CArray) { a.NBuffers = 1 }, []string{"input column 3 (b): buffer count 1, want 2"}},
		{"RowKind with 3 buffers", col(4), func(_, a *engine.CArray) { v := buffers(a)[1]; a.NBuffers = 3; a.Buffers = ptrs(nil, v, nil) }, []string{"input column 4 (RowKind): buffer count 3, want 2"}},
		{"child with children", col(0), func(_, a *engine.CArray) {
			a.NChildren = 1
			a.Children = ptrs(unsafe.Pointer(int64Array([]int64{1}, nil)))
		}, []string{"input column 0 (k): unexpected children or dictionary for BIGINT"}},
		{"child with dictionary", col(1), func(_, a *engine.CArray) { a.Dictionary = unsafe.Pointer(stringArray([]string{"x"}, nil)) }, []string{"input column 1 (s): unexpected children or dictionary for VARCHAR"}},
		{"child shorter than batch", col(2), func(_, a *engine.CArray) { a.Length = 3 }, []string{"input column 2 (n): length 3 shorter than the batch (4 rows at offset 0)"}},
		{"child shorter than batch at parent offset", rootOf, func(_, a *engine.CArray) { a.Offset = 1 }, []string{"input column 0 (k): length 4 shorter than the batch (4 rows at offset 1)"}},
		{"nulls in NOT NULL column", col(2), func(_, a *engine.CArray) {
			a.NullCount = 1
			a.Buffers = ptrs(bytesPtr([]byte{0x0b}), buffers(a)[1])
		}, []string{"input column 2 (n) is declared NOT NULL but holds 1 NULL values"}},
		{"null count without validity", col(0), func(_, a *engine.CArray) { buffers(a)[0] = nil }, []string{"input column 0 (k): null count 1 but no validity buffer"}},
		{"BOOLEAN values NULL", col(3), func(_, a *engine.CArray) { buffers(a)[1] = nil }, []string{"input column 3 (b): values buffer is NULL"}},
		{"BIGINT values NULL", col(0), func(_, a *engine.CArray) { buffers(a)[1] = nil }, []string{"input column 0 (k): values buffer is NULL"}},
		{"INT values NULL", col(2), func(_, a *engine.CArray) { buffers(a)[1] = nil }, []string{"input column 2 (n): values buffer is NULL"}},
		{"RowKind values NULL", col(4), func(_, a *engine.CArray) { buffers(a)[1] = nil }, []string{"input column 4 (RowKind): values buffer is NULL"}},
		{"VARCHAR offsets NULL", col(1), func(_, a *engine.CArray) { buffers(a)[1] = nil }, []string{"input column 1 (s): offsets buffer is NULL"}},
		{"VARCHAR negative first offset", col(1), func(_, a *engine.CArray) {
			offs := unsafe.Slice((*int32)(buffers(a)[1]), 5)
			offs[0] = -1
		}, []string{"input column 1 (s): negative offset -1 at row 0"}},
		{"VARCHAR offsets not monotonic", col(1), func(_, a *engine.CArray) {
			offs := unsafe.Slice((*int32)(buffers(a)[1]), 5)
			offs[3] = 0
		}, []string{"input column 1 (s): offsets not monotonic at row 2"}},
		{"VARCHAR data NULL", col(1), func(_, a *engine.CArray) { buffers(a)[2] = nil }, []string{"input column 1 (s): data buffer is NULL"}},
		// RowKind rules.
		{"RowKind with nulls", col(4), func(_, a *engine.CArray) {
			a.NullCount = 1
			a.Buffers = ptrs(bytesPtr([]byte{0x07}), buffers(a)[1])
		}, []string{"input column 4 (RowKind)"}},
		{"RowKind byte 4", col(4), func(_, a *engine.CArray) { unsafe.Slice((*byte)(buffers(a)[1]), 4)[2] = 4 }, []string{"input column 4 (RowKind): byte 4 at row 2 is not a RowKind"}},
		{"RowKind byte 255", col(4), func(_, a *engine.CArray) { unsafe.Slice((*byte)(buffers(a)[1]), 4)[3] = 255 }, []string{"byte 255 at row 3"}},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := validBatch()
			c.apply(root, c.target(root))
			var b engine.Batch
			err := testImporter(t).Import(root, &b)
			if err == nil {
				t.Fatalf("Import accepted the batch")
			}
			if !errors.Is(err, engine.ErrData) {
				t.Errorf("error %q does not wrap ErrData", err)
			}
			for _, m := range c.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
	t.Run("root NULL", func(t *testing.T) {
		var b engine.Batch
		err := testImporter(t).Import(nil, &b)
		if !errors.Is(err, engine.ErrInvalid) {
			t.Fatalf("Import(nil) = %v, want ErrInvalid", err)
		}
	})
	t.Run("root released", func(t *testing.T) {
		root := validBatch()
		root.Release = nil
		var b engine.Batch
		err := testImporter(t).Import(root, &b)
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), "input array is already released") {
			t.Fatalf("Import(released) = %v", err)
		}
	})
}

// checkBatch compares an imported batch with expected values read through the Column API.
func checkBatch(t *testing.T, b *engine.Batch, keys []any, strs []any, ints []int32, bools []any, kinds []byte) {
	t.Helper()
	if b.Len != len(kinds) {
		t.Fatalf("Len = %d, want %d", b.Len, len(kinds))
	}
	k, s, n, bo := &b.Cols[0], &b.Cols[1], &b.Cols[2], &b.Cols[3]
	kv := engine.Values[int64](k, b.Len)
	nv := engine.Values[int32](n, b.Len)
	for i := range b.Len {
		if keys[i] == nil {
			if !k.IsNull(i) {
				t.Errorf("row %d: k not NULL", i)
			}
		} else if k.IsNull(i) || kv[i] != keys[i].(int64) {
			t.Errorf("row %d: k = %d (null %v), want %v", i, kv[i], k.IsNull(i), keys[i])
		}
		if strs[i] == nil {
			if !s.IsNull(i) {
				t.Errorf("row %d: s not NULL", i)
			}
		} else if s.IsNull(i) || string(s.Bytes(i)) != strs[i].(string) {
			t.Errorf("row %d: s = %q, want %q", i, s.Bytes(i), strs[i])
		}
		if n.IsNull(i) || nv[i] != ints[i] {
			t.Errorf("row %d: n = %d, want %d", i, nv[i], ints[i])
		}
		if bools[i] == nil {
			if !bo.IsNull(i) {
				t.Errorf("row %d: b not NULL", i)
			}
		} else if bo.IsNull(i) || bo.Bool(i) != bools[i].(bool) {
			t.Errorf("row %d: b = %v, want %v", i, bo.Bool(i), bools[i])
		}
	}
	if string(b.Kinds) != string(kinds) {
		t.Errorf("Kinds = %v, want %v", b.Kinds, kinds)
	}
	retracts := false
	for _, k := range kinds {
		if k == 1 || k == 3 {
			retracts = true
		}
	}
	if b.Retracts != retracts {
		t.Errorf("Retracts = %v, want %v", b.Retracts, retracts)
	}
}

func TestImportValid(t *testing.T) {
	im := testImporter(t)
	var b engine.Batch // reused across cases, as the C ABI reuses it

	t.Run("plain with nulls", func(t *testing.T) {
		if err := im.Import(validBatch(), &b); err != nil {
			t.Fatal(err)
		}
		checkBatch(t, &b, []any{int64(10), int64(20), nil, int64(40)}, []any{"a", "", "xyz", nil},
			[]int32{1, -2, 3, math.MaxInt32}, []any{true, false, true, true}, []byte{0, 1, 2, 3})
	})

	t.Run("root offset and child offsets", func(t *testing.T) {
		// Elements: child offset 2 (junk before), the struct's offset 1 on top: rows are
		// elements [3, 6) of every child.
		k := int64Array([]int64{-1, -1, -1, 7, 8, 9, -1}, []bool{false, true, false, true, false, true, true})
		k.Offset, k.Length, k.NullCount = 2, 5, 2
		s := stringArray([]string{"junk", "junk", "j", "p", "", "qrstuvwxyz", "tail"}, nil)
		s.Offset, s.Length = 2, 5
		n := int32Array([]int32{0, 0, 0, 5, 6, 7, 0}, nil)
		n.Offset, n.Length = 2, 5
		bo := boolArray([]bool{true, true, true, false, true, false, true}, nil)
		bo.Offset, bo.Length = 2, 5
		kinds := kindArray(9, 9, 9, 0, 3, 0, 9) // junk outside the batch's window is not read
		kinds.Offset, kinds.Length = 2, 4
		root := structArray(3, k, s, n, bo, kinds)
		root.Offset = 1
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
		checkBatch(t, &b, []any{int64(7), nil, int64(9)}, []any{"p", "", "qrstuvwxyz"}, []int32{5, 6, 7},
			[]any{false, true, false}, []byte{0, 3, 0})
	})

	t.Run("zero-length batch with NULL buffers", func(t *testing.T) {
		empty := func(nbuf int) *engine.CArray {
			bs := make([]unsafe.Pointer, nbuf)
			return &engine.CArray{NBuffers: int64(nbuf), Buffers: ptrs(bs...), Release: live()}
		}
		root := structArray(0, empty(2), empty(3), empty(2), empty(2), empty(2))
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
		if b.Len != 0 || len(b.Kinds) != 0 || b.Retracts {
			t.Fatalf("empty batch: Len %d, Kinds %v, Retracts %v", b.Len, b.Kinds, b.Retracts)
		}
	})

	t.Run("zero-length batch at an offset", func(t *testing.T) {
		// The children keep their nulls (null_count 1, validity buffer present); the batch
		// selects none of their rows.
		root := validBatch()
		root.Offset, root.Length = 4, 0
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
		if b.Len != 0 || len(b.Kinds) != 0 {
			t.Fatalf("Len %d Kinds %v", b.Len, b.Kinds)
		}
	})

	t.Run("VARCHAR of empty strings without a data buffer", func(t *testing.T) {
		root := validBatch()
		s := children(root)[1]
		offs := make([]int32, 5)
		s.NullCount = 0
		s.Buffers = ptrs(nil, unsafe.Pointer(&offs[0]), nil)
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			if b.Cols[1].IsNull(i) || len(b.Cols[1].Bytes(i)) != 0 {
				t.Errorf("row %d: %q", i, b.Cols[1].Bytes(i))
			}
		}
	})

	t.Run("null count unknown", func(t *testing.T) {
		root := validBatch()
		children(root)[0].NullCount = -1 // the validity buffer decides
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
		if !b.Cols[0].IsNull(2) || b.Cols[0].IsNull(0) {
			t.Errorf("nulls from the bitmap not honoured")
		}
	})

	t.Run("validity buffer without nulls is ignored", func(t *testing.T) {
		root := validBatch()
		n := children(root)[2] // NOT NULL INT with an all-valid bitmap and null_count 0
		n.Buffers = ptrs(bytesPtr([]byte{0xff}), buffers(n)[1])
		k := children(root)[0]
		k.NullCount = 0 // the producer says no nulls: the bitmap is not consulted
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
		if b.Cols[0].IsNull(2) || b.Cols[2].Valid != nil {
			t.Errorf("a validity buffer with null_count 0 was used")
		}
	})

	t.Run("child longer than the batch", func(t *testing.T) {
		root := validBatch()
		root.Length = 2
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
		checkBatch(t, &b, []any{int64(10), int64(20)}, []any{"a", ""}, []int32{1, -2}, []any{true, false}, []byte{0, 1})
	})

	t.Run("all names unset", func(t *testing.T) {
		anon := &engine.Importer{Types: im.Types}
		root := validBatch()
		children(root)[1].NBuffers = 2
		err := anon.Import(root, &b)
		if err == nil || !strings.Contains(err.Error(), "input column 1: buffer count") {
			t.Fatalf("unnamed column error: %v", err)
		}
	})
}

// TestImportTypes covers the fixed widths of every type across the boundary.
func TestImportTypes(t *testing.T) {
	for _, c := range []struct {
		typ   string
		width int
	}{
		{"TINYINT", 1}, {"SMALLINT", 2}, {"INT", 4}, {"DATE", 4}, {"FLOAT", 4}, {"BIGINT", 8}, {"DOUBLE", 8},
		{"TIMESTAMP(3)", 8}, {"TIMESTAMP(0)", 8}, {"TIMESTAMP(6)", 12}, {"TIMESTAMP(9)", 12}, {"DECIMAL(38,2)", 16}, {"DECIMAL(5,1)", 16},
	} {
		t.Run(c.typ, func(t *testing.T) {
			ty := mustType(t, c.typ)
			if ty.Width() != c.width {
				t.Fatalf("Width() = %d, want %d", ty.Width(), c.width)
			}
			const rows, off = 3, 2
			data := make([]byte, (rows+off)*c.width)
			for i := range data {
				data[i] = byte(i)
			}
			col := fixedArray(data, rows+off, nil)
			col.Offset = off
			col.Length = rows
			im := &engine.Importer{Types: []engine.Type{ty}, Names: []string{"v"}}
			var b engine.Batch
			if err := im.Import(structArray(rows, col, kindArray(0, 0, 0)), &b); err != nil {
				t.Fatal(err)
			}
			for i := range rows {
				got := b.Cols[0].Fixed(i)
				want := data[(off+i)*c.width : (off+i+1)*c.width]
				if string(got) != string(want) {
					t.Errorf("row %d: %x, want %x", i, got, want)
				}
			}
		})
	}
}

// An import allocates nothing once its Batch and Importer have been used: it runs once per call
// into the library.
func TestImportAllocatesNothing(t *testing.T) {
	im := testImporter(t)
	var b engine.Batch
	root := validBatch()
	if err := im.Import(root, &b); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := im.Import(root, &b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("%v allocations per import", n)
	}
}

// TestImportBinary: VARBINARY (BYTES) columns are laid out as VARCHAR's, as Arrow's binary "z",
// bytes taken as they are (no UTF-8 check), and validated by the same rules.
func TestImportBinary(t *testing.T) {
	ty := mustType(t, "BYTES")
	if ty.ID != engine.Binary || ty.ArrowFormat() != "z" || ty.String() != "BYTES" || !ty.Variable() || ty.Compact() {
		t.Fatalf("BYTES parsed as %+v (%s, %q)", ty, ty, ty.ArrowFormat())
	}
	im := &engine.Importer{Types: []engine.Type{ty}, Names: []string{"m"}}
	var b engine.Batch
	root := structArray(3, stringArray([]string{"\x00\xff", "", "x"}, []bool{true, false, true}), kindArray(0, 0, 0))
	if err := im.Import(root, &b); err != nil {
		t.Fatal(err)
	}
	if got := []string{string(b.Cols[0].Bytes(0)), string(b.Cols[0].Bytes(2))}; got[0] != "\x00\xff" || got[1] != "x" || !b.Cols[0].IsNull(1) {
		t.Fatalf("got %q, NULL %v", got, b.Cols[0].IsNull(1))
	}
	root = structArray(3, stringArray([]string{"a", "b", "c"}, nil), kindArray(0, 0, 0))
	children(root)[0].NBuffers = 2
	if err := im.Import(root, &b); !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), "buffer count 2, want 3 for BYTES") {
		t.Fatalf("two buffers: %v", err)
	}
}
