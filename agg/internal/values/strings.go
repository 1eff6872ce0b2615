package values

import (
	"bytes"
	"cmp"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// VARCHAR values, as the aggregates keep them (MIN and MAX, with and without retraction,
// FIRST_VALUE, LAST_VALUE, LISTAGG, SINGLE_VALUE). Flink compares strings with
// BinaryStringData.compareTo: unsigned byte-wise over the UTF-8 bytes, then the shorter first —
// bytes.Compare — unless both strings still hold the Java String they were built from, when it
// is String.compareTo, UTF-16 order (JavaCompare). Strings that crossed a network exchange or a
// state backend never do; rows built in the JVM and fed straight to the operator do, and so do
// the values Flink's heap state keeps from them until it is restored. The accumulators therefore
// remember, per stored value, whether it came from such a row (the spec's java_strings column),
// in memory only: a restored value reads as bytes, as Flink's deserialized state does. Equality
// (the equaliser, MapView keys, `value.equals(max)`) is byte equality either way. The result type
// is STRING (StringMin/MaxAggFunction, or the argument type with retraction); Ferry's VARCHAR
// carries no length, so it is the argument type.

// JavaCompare is String.compareTo on the strings of UTF-8 a and b: UTF-16 code-unit order. It
// differs from byte order only where the first difference is a code point in U+E000..U+FFFF
// (lead byte 0xEE or 0xEF) against a supplementary one (lead byte 0xF0..0xF4), which UTF-16
// writes as a surrogate pair (0xD800..0xDBFF) and so sorts first.
func JavaCompare(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	switch {
	case i == n:
		return cmp.Compare(len(a), len(b))
	case a[i] >= 0xEE && a[i] <= 0xEF && b[i] >= 0xF0:
		return 1
	case b[i] >= 0xEE && b[i] <= 0xEF && a[i] >= 0xF0:
		return -1
	}
	return cmp.Compare(a[i], b[i])
}

// CompareStrings is BinaryStringData.compareTo of a and b, each flagged when it holds its Java
// String.
func CompareStrings(a []byte, aJava bool, b []byte, bJava bool) int {
	if aJava && bJava {
		return JavaCompare(a, b)
	}
	return bytes.Compare(a, b)
}

// JavaFlags reads the java_strings column of a batch: whether a row holds its argument as a
// Java String.
type JavaFlags struct{ col *engine.Column }

// NewJavaFlags reads column col of in; col < 0: no row holds a Java String.
func NewJavaFlags(in *engine.Batch, col int) JavaFlags {
	if col < 0 {
		return JavaFlags{}
	}
	return JavaFlags{&in.Cols[col]}
}

// At reports whether row i holds a Java String.
func (f JavaFlags) At(i int) bool { return f.col != nil && f.col.Bool(i) }

// StrRef is a VARCHAR value: a string in the owning StrOps' arena, or (refBatch) in the data of
// the column the ops are bound to, until Keep copies it. refHas is clear for NULL. refJava marks
// a value built from a row that held its Java String, which compares in UTF-16 order against
// another such value (CompareStrings); equality is byte equality either way. Three fields keep
// it in registers: Go spills structs of more than four fields to memory on every call.
type StrRef struct {
	off   int64
	n     int32
	flags uint8
}

const (
	refHas   = 1 << iota // not NULL
	refJava              // from a row holding its Java String
	refBatch             // in the bound column, not the arena
)

// Has reports whether r is not NULL.
func (r StrRef) Has() bool { return r.flags&refHas != 0 }

// Java reports whether r comes from a row that held its Java String.
func (r StrRef) Java() bool { return r.flags&refJava != 0 }

func (r StrRef) batch() bool { return r.flags&refBatch != 0 }

// javaBit is refJava when java holds.
func javaBit(java bool) uint8 {
	if java {
		return refJava
	}
	return 0
}

// Arena is a pointer-free arena of byte strings. Strings are only appended while a batch is
// processed, so the references recorded for its rows stay valid until its output is written;
// replaced and removed strings become garbage, reclaimed by compaction before the next call.
type Arena struct {
	buf     []byte
	garbage int64
}

// add copies b into the arena; java is the refJava flag to keep.
func (h *Arena) add(b []byte, java uint8) StrRef {
	off := int64(len(h.buf))
	h.buf = append(h.buf, b...)
	return StrRef{off: off, n: int32(len(b)), flags: refHas | java}
}

func (h *Arena) get(r StrRef) []byte { return h.buf[r.off : r.off+int64(r.n)] }

// Add copies b into the arena as a value that holds its Java String when java is set (see
// StrRef).
func (h *Arena) Add(b []byte, java bool) StrRef { return h.add(b, javaBit(java)) }

// Get returns the bytes of r, which the arena owns and which must not be NULL.
func (h *Arena) Get(r StrRef) []byte { return h.get(r) }

// Len is the arena's length: where the next string starts. A kernel building a string from
// parts (LISTAGG's concatenation) notes it, Appends the parts and takes the string with Since,
// or drops the parts with Truncate.
func (h *Arena) Len() int64 { return int64(len(h.buf)) }

// Append appends b to the string being built. b may alias the arena: append copies from the
// old array when it moves.
func (h *Arena) Append(b []byte) { h.buf = append(h.buf, b...) }

// Since returns the string appended since mark (an earlier Len): not NULL, without a Java
// String.
func (h *Arena) Since(mark int64) StrRef {
	return StrRef{off: mark, n: int32(int64(len(h.buf)) - mark), flags: refHas}
}

// Truncate drops what was appended since mark.
func (h *Arena) Truncate(mark int64) { h.buf = h.buf[:mark] }

// Garbage is the size of the strings dropped and not yet reclaimed by a compaction.
func (h *Arena) Garbage() int64 { return h.garbage }

// StrOps is Ops for VARCHAR. It owns the arena that holds every string its accumulator
// keeps (current values, MIN/MAX extremes, multiset keys), each stored value owning its own
// copy, so garbage accounting is exact.
type StrOps struct {
	heap    Arena
	next    Arena          // compaction target
	col     *engine.Column // bound column
	java    JavaFlags      // bound java_strings flags
	javaCol int            // the call's java_strings column, or -1
}

// NewStrOps returns the ops of a call whose java_strings column is javaCol (-1: none).
func NewStrOps(javaCol int) *StrOps { return &StrOps{javaCol: javaCol} }

// Arena is the arena of the values the ops own, for kernels that build strings in it.
func (o *StrOps) Arena() *Arena { return &o.heap }

// JavaCol is the call's java_strings column, or -1.
func (o *StrOps) JavaCol() int { return o.javaCol }

func (o *StrOps) Bind(in *engine.Batch, col int, argument bool) {
	o.col, o.java = &in.Cols[col], JavaFlags{}
	if argument {
		o.java = NewJavaFlags(in, o.javaCol)
	}
}

func (o *StrOps) Unbind() { o.col, o.java = nil, JavaFlags{} }

func (o *StrOps) At(i int) StrRef {
	c := o.col
	j := c.Offset + i
	r := StrRef{off: int64(c.Offs[j]), n: c.Offs[j+1] - c.Offs[j], flags: refHas | refBatch}
	if o.java.col != nil {
		r.flags |= javaBit(o.java.At(i))
	}
	return r
}

// bytesOf returns the bytes of v, which must not be NULL.
func (o *StrOps) bytesOf(v StrRef) []byte {
	if v.batch() {
		return o.col.Data[v.off : v.off+int64(v.n)]
	}
	return o.heap.get(v)
}

func (o *StrOps) Keep(v StrRef) StrRef {
	if !v.Has() {
		return v
	}
	return o.heap.add(o.bytesOf(v), v.flags&refJava) // append copies from the old array if it moves
}

func (o *StrOps) KeepFrom(from Ops[StrRef], v StrRef) StrRef {
	if !v.Has() {
		return v
	}
	return o.heap.add(from.(*StrOps).bytesOf(v), v.flags&refJava)
}

func (o *StrOps) Drop(v StrRef) {
	if v.flags&(refHas|refBatch) == refHas {
		o.heap.garbage += int64(v.n)
	}
}

func (o *StrOps) Less(a, b StrRef) bool { return o.Compare(a, b) < 0 }

func (o *StrOps) Compare(a, b StrRef) int {
	return CompareStrings(o.bytesOf(a), a.Java(), o.bytesOf(b), b.Java())
}

func (o *StrOps) Equal(a, b StrRef) bool { return bytes.Equal(o.bytesOf(a), o.bytesOf(b)) }

// Same is called only for two references that differ; kept out of line so that the kernels'
// per-row recording inlines.
//
//go:noinline
func (o *StrOps) Same(a, b StrRef) bool { return o.Equal(a, b) }

func (o *StrOps) Hash(g int32, v StrRef) uint64 { return HashBytes(g, o.bytesOf(v)) }

func (o *StrOps) Put(dst []byte, v StrRef) []byte {
	b := o.bytesOf(v)
	return append(PutVarint(dst, int64(len(b))), b...)
}

// Get reads a length-prefixed string (Put) into the arena; restored values hold no Java
// String, as Flink's deserialized state does not.
func (o *StrOps) Get(src []byte) (StrRef, []byte, error) {
	b, rest, err := getString(src)
	if err != nil {
		return StrRef{}, nil, err
	}
	return o.heap.add(b, 0), rest, nil
}

func (o *StrOps) Sparse() bool { return true }

func (o *StrOps) VarBytes(vals []StrRef, nulls []bool, pick []int32) int {
	n := 0
	if pick == nil {
		for j, r := range vals {
			if !nulls[j] {
				n += int(r.n)
			}
		}
		return n
	}
	for _, p := range pick {
		if !nulls[p] {
			n += int(vals[p].n)
		}
	}
	return n
}

func (o *StrOps) Write(out *engine.OutColumn, vals []StrRef, nulls []bool, pick []int32) {
	rows := len(pick)
	if pick == nil {
		rows = len(vals)
	}
	pos := int32(0)
	for j := range rows {
		p := j
		if pick != nil {
			p = int(pick[j])
		}
		out.Offs[j] = pos
		if nulls[p] {
			out.SetNull(j)
			continue
		}
		pos += int32(copy(out.Data[pos:], o.bytesOf(vals[p])))
	}
	out.Offs[rows] = pos
}

// CompactDue: at least half of an arena past 64 KiB is garbage.
func (o *StrOps) CompactDue() bool {
	return o.heap.garbage > 1<<16 && 2*o.heap.garbage > int64(len(o.heap.buf))
}

func (o *StrOps) CompactStart() {
	o.next = Arena{buf: make([]byte, 0, int64(len(o.heap.buf))-o.heap.garbage)}
}

func (o *StrOps) Move(v StrRef) StrRef {
	if v.flags&(refHas|refBatch) != refHas {
		return v
	}
	return o.next.add(o.heap.get(v), v.flags&refJava)
}

func (o *StrOps) CompactEnd() { o.heap, o.next = o.next, Arena{} }

func (o *StrOps) Bytes() int64 { return int64(cap(o.heap.buf)) }

// getString reads a length-prefixed string (StrOps.Put) and returns it aliasing src.
func getString(src []byte) ([]byte, []byte, error) {
	n, src, err := GetVarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 || n > int64(len(src)) || n > 1<<31-1 {
		return nil, nil, fmt.Errorf("%w: string length %d invalid", engine.ErrData, n)
	}
	return src[:n], src[n:], nil
}
