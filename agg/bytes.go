package agg

import (
	"bytes"
	"cmp"
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
)

// VARCHAR aggregates: MIN and MAX, with and without retraction. Flink compares strings with
// BinaryStringData.compareTo: unsigned byte-wise over the UTF-8 bytes, then the shorter first —
// bytes.Compare — unless both strings still hold the Java String they were built from, when it
// is String.compareTo, UTF-16 order (javaCompare). Strings that crossed a network exchange or a
// state backend never do; rows built in the JVM and fed straight to the operator do, and so do
// the values Flink's heap state keeps from them until it is restored. The accumulators therefore
// remember, per stored value, whether it came from such a row (the spec's java_strings column),
// in memory only: a restored value reads as bytes, as Flink's deserialized state does. Equality
// (the equaliser, MapView keys, `value.equals(max)`) is byte equality either way. The result type
// is STRING (StringMin/MaxAggFunction, or the argument type with retraction); Ferry's VARCHAR
// carries no length, so it is the argument type.

// javaCompare is String.compareTo on the strings of UTF-8 a and b: UTF-16 code-unit order. It
// differs from byte order only where the first difference is a code point in U+E000..U+FFFF
// (lead byte 0xEE or 0xEF) against a supplementary one (lead byte 0xF0..0xF4), which UTF-16
// writes as a surrogate pair (0xD800..0xDBFF) and so sorts first.
func javaCompare(a, b []byte) int {
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

// compareStrings is BinaryStringData.compareTo of a and b, each flagged when it holds its Java
// String.
func compareStrings(a []byte, aJava bool, b []byte, bJava bool) int {
	if aJava && bJava {
		return javaCompare(a, b)
	}
	return bytes.Compare(a, b)
}

// javaFlags reads the java_strings column col of a batch; col < 0: no row holds a Java String.
type javaFlags struct{ col *engine.Column }

func newJavaFlags(in *engine.Batch, col int) javaFlags {
	if col < 0 {
		return javaFlags{}
	}
	return javaFlags{&in.Cols[col]}
}

func (f javaFlags) at(i int) bool { return f.col != nil && f.col.Bool(i) }

// varOutput is implemented by accumulators whose output column is VARCHAR: varBytes is the
// total UTF-8 size of the values write will put in output rows pick, for OutBatch.Init.
type varOutput interface {
	varBytes(pick []int32) int
}

// strRef locates one string in a strHeap; has is false for NULL (or a free slot).
type strRef struct {
	off int64
	n   int32
	has bool
}

// strHeap is a pointer-free arena of byte strings. Strings are only appended while a batch is
// folded, so the references recorded for its rows stay valid until its output is written;
// replaced and removed strings become garbage, reclaimed by compact before the next fold.
type strHeap struct {
	buf     []byte
	garbage int64
}

func (h *strHeap) add(b []byte) strRef {
	off := int64(len(h.buf))
	h.buf = append(h.buf, b...)
	return strRef{off: off, n: int32(len(b)), has: true}
}

func (h *strHeap) get(r strRef) []byte { return h.buf[r.off : r.off+int64(r.n)] }

// drop turns the string of r, if any, into garbage.
func (h *strHeap) drop(r strRef) {
	if r.has {
		h.garbage += int64(r.n)
	}
}

// compact copies the live strings of refs (has set) into a fresh arena when at least half the
// arena is garbage. Only call it where no recorded reference is still to be read.
func (h *strHeap) compact(refs []strRef) {
	if h.garbage <= 1<<16 || 2*h.garbage <= int64(len(h.buf)) {
		return
	}
	buf := make([]byte, 0, int64(len(h.buf))-h.garbage)
	for i := range refs {
		if r := &refs[i]; r.has {
			off := int64(len(buf))
			buf = append(buf, h.buf[r.off:r.off+int64(r.n)]...)
			r.off = off
		}
	}
	h.buf, h.garbage = buf, 0
}

func (h *strHeap) putString(dst []byte, r strRef) []byte {
	dst = putVarint(dst, int64(r.n))
	return append(dst, h.get(r)...)
}

// getString reads a length-prefixed string (putString) and returns it aliasing src.
func getString(src []byte) ([]byte, []byte, error) {
	n, src, err := getVarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n < 0 || n > int64(len(src)) || n > 1<<31-1 {
		return nil, nil, fmt.Errorf("%w: string length %d invalid", engine.ErrData, n)
	}
	return src[:n], src[n:], nil
}

// strRowValues is rowValues for VARCHAR results: per row, references to the value before (2i)
// and after (2i+1) folding, into the accumulator's heap.
type strRowValues struct {
	refs []strRef
}

func (v *strRowValues) reset(n int) { v.refs = resize(v.refs, 2*n) }

func (v *strRowValues) record(i int, h *strHeap, pv, nv strRef, changed []bool) {
	v.refs[2*i], v.refs[2*i+1] = pv, nv
	if pv != nv && (pv.has != nv.has || !bytes.Equal(h.get(pv), h.get(nv))) {
		changed[i] = true
	}
}

// differIn compares entries a and b, whose bytes are in h, as record compares a row's before
// and after.
func (v *strRowValues) differIn(h *strHeap, a, b int32) bool {
	pa, pb := v.refs[a], v.refs[b]
	return pa != pb && (pa.has != pb.has || !bytes.Equal(h.get(pa), h.get(pb)))
}

func (v *strRowValues) varBytes(pick []int32) int {
	n := 0
	for _, p := range pick {
		if r := v.refs[p]; r.has {
			n += int(r.n)
		}
	}
	return n
}

func (v *strRowValues) write(h *strHeap, out *engine.OutColumn, pick []int32) {
	pos := int32(0)
	for j, p := range pick {
		out.Offs[j] = pos
		r := v.refs[p]
		if !r.has {
			out.SetNull(j)
			continue
		}
		pos += int32(copy(out.Data[pos:], h.get(r)))
	}
	out.Offs[len(pick)] = pos
}

// strMinMaxAcc is MIN or MAX over VARCHAR without retraction (StringMin/MaxAggFunction): a new
// argument replaces the value when it compares strictly smaller (larger); retractions are
// ignored. Each group's value is a reference into one heap.
type strMinMaxAcc struct {
	col     int
	javaCol int // the spec's java_strings column, or -1
	max     bool
	val     []strRef // per group
	java    []bool   // per group: val came from a row holding a Java String
	heap    strHeap
	strRowValues
}

func (a *strMinMaxAcc) Grow(n int) { a.val, a.java = extend(a.val, n), extend(a.java, n) }

func (a *strMinMaxAcc) Reset(g int32) {
	a.heap.drop(a.val[g])
	a.val[g], a.java[g] = strRef{}, false
}

func (a *strMinMaxAcc) Bytes() int64 { return int64(cap(a.val))*16 + int64(cap(a.heap.buf)) }

func (a *strMinMaxAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.heap.compact(a.val)
	a.strRowValues.reset(in.Len)
	col := &in.Cols[a.col]
	act = act[:in.Len]
	gids = gids[:in.Len]
	java := newJavaFlags(in, a.javaCol)
	want := -1 // MIN: replace when v compares below val
	if a.max {
		want = 1
	}
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv := a.val[g]
		if act[i] > 0 && !col.IsNull(i) {
			v, vJava := col.Bytes(i), java.at(i)
			if !pv.has || compareStrings(v, vJava, a.heap.get(pv), a.java[g]) == want {
				a.heap.drop(pv)
				a.val[g], a.java[g] = a.heap.add(v), vJava
			}
		}
		a.record(i, &a.heap, pv, a.val[g], changed)
	}
}

func (a *strMinMaxAcc) differ(p, q int32) bool { return a.differIn(&a.heap, p, q) }

func (a *strMinMaxAcc) write(out *engine.OutColumn, pick []int32) {
	a.strRowValues.write(&a.heap, out, pick)
}

func (a *strMinMaxAcc) Save(dst []byte, g int32) []byte {
	r := a.val[g]
	dst = putBool(dst, r.has)
	if r.has {
		dst = a.heap.putString(dst, r)
	}
	return dst
}

func (a *strMinMaxAcc) Load(src []byte, g int32) ([]byte, error) {
	has, src, err := getBool(src)
	if err != nil || !has {
		return src, err
	}
	var v []byte
	if v, src, err = getString(src); err != nil {
		return nil, err
	}
	a.val[g] = a.heap.add(v)
	return src, nil
}

// strMinMaxRetractAcc is Min/MaxWithRetractAggFunction over VARCHAR, step for step as
// minMaxRetractAcc: the current extreme (a copy in the accumulator's heap, since it need not be
// in the multiset), mapSize, and a string→count multiset whose counts may go negative.
type strMinMaxRetractAcc struct {
	col     int
	javaCol int // the spec's java_strings column, or -1
	max     bool
	ext     []strRef // current min (or max); has false for NULL
	extJava []bool   // ext came from a row holding a Java String
	mapSize []int64
	heap    strHeap // the ext strings
	counts  strCounts
	strRowValues
}

func (a *strMinMaxRetractAcc) Grow(n int) {
	a.ext, a.extJava, a.mapSize = extend(a.ext, n), extend(a.extJava, n), extend(a.mapSize, n)
	a.counts.growGroups(n)
}

func (a *strMinMaxRetractAcc) Reset(g int32) {
	a.heap.drop(a.ext[g])
	a.ext[g], a.extJava[g], a.mapSize[g] = strRef{}, false, 0
	a.counts.clearGroup(g)
}

func (a *strMinMaxRetractAcc) Bytes() int64 {
	return int64(cap(a.ext))*16 + int64(cap(a.mapSize))*8 + int64(cap(a.heap.buf)) + a.counts.bytes()
}

func (a *strMinMaxRetractAcc) value(g int32) strRef {
	if a.mapSize[g] > 0 {
		return a.ext[g]
	}
	return strRef{}
}

// beyond reports whether v would replace ext: ext.compareTo(v) > 0 for MIN, < 0 for MAX.
func (a *strMinMaxRetractAcc) beyond(ext []byte, extJava bool, v []byte, vJava bool) bool {
	c := compareStrings(ext, extJava, v, vJava)
	if a.max {
		return c < 0
	}
	return c > 0
}

func (a *strMinMaxRetractAcc) setExt(g int32, v []byte, java bool) {
	a.heap.drop(a.ext[g])
	a.ext[g], a.extJava[g] = a.heap.add(v), java
}

func (a *strMinMaxRetractAcc) clearExt(g int32) {
	a.heap.drop(a.ext[g])
	a.ext[g], a.extJava[g] = strRef{}, false
}

func (a *strMinMaxRetractAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.heap.compact(a.ext)
	a.counts.heap.compact(a.counts.key)
	a.strRowValues.reset(in.Len)
	col := &in.Cols[a.col]
	java := newJavaFlags(in, a.javaCol)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv := a.value(g)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if d > 0 {
				a.accumulate(g, col.Bytes(i), java.at(i))
			} else {
				a.retract(g, col.Bytes(i), java.at(i))
			}
		}
		a.record(i, &a.heap, pv, a.value(g), changed)
	}
}

func (a *strMinMaxRetractAcc) accumulate(g int32, v []byte, java bool) {
	if a.mapSize[g] == 0 || !a.ext[g].has || a.beyond(a.heap.get(a.ext[g]), a.extJava[g], v, java) {
		a.setExt(g, v, java)
	}
	m := &a.counts
	h := hashKey(g, v)
	e := m.find(g, v, h)
	var c int64 = 1
	if e >= 0 {
		c = m.cnt[e] + 1
	}
	switch {
	case c == 0: // a -1 brought back to 0
		m.remove(e)
	case e >= 0:
		m.cnt[e] = c
	default: // a new key object; an existing one stays (HashMap.put keeps the key)
		m.insert(g, v, java, h, c)
	}
	if c == 1 {
		a.mapSize[g]++
	}
}

func (a *strMinMaxRetractAcc) retract(g int32, v []byte, java bool) {
	m := &a.counts
	h := hashKey(g, v)
	e := m.find(g, v, h)
	var c int64 = -1
	if e >= 0 {
		c = m.cnt[e] - 1
	}
	if c != 0 {
		if e >= 0 {
			m.cnt[e] = c
		} else {
			m.insert(g, v, java, h, c)
		}
		return // negative counts are not part of mapSize
	}
	m.remove(e)
	a.mapSize[g]--
	if a.mapSize[g] == 0 {
		a.clearExt(g)
		return
	}
	if a.ext[g].has && bytes.Equal(v, a.heap.get(a.ext[g])) {
		a.rescan(g)
	}
}

// rescan is Flink's updateMin/updateMax: the extreme over every value of the group, negative
// counts included.
func (a *strMinMaxRetractAcc) rescan(g int32) {
	m := &a.counts
	best := int32(-1)
	for e := m.head[g]; e >= 0; e = m.next[e] {
		if best < 0 || a.beyond(m.heap.get(m.key[best]), m.java[best], m.heap.get(m.key[e]), m.java[e]) {
			best = e
		}
	}
	if best < 0 {
		a.mapSize[g] = 0
		a.clearExt(g)
		return
	}
	a.setExt(g, m.heap.get(m.key[best]), m.java[best])
}

func (a *strMinMaxRetractAcc) differ(p, q int32) bool { return a.differIn(&a.heap, p, q) }

func (a *strMinMaxRetractAcc) write(out *engine.OutColumn, pick []int32) {
	a.strRowValues.write(&a.heap, out, pick)
}

func (a *strMinMaxRetractAcc) Save(dst []byte, g int32) []byte {
	r := a.ext[g]
	dst = putBool(dst, r.has)
	if r.has {
		dst = a.heap.putString(dst, r)
	}
	dst = putVarint(dst, a.mapSize[g])
	m := &a.counts
	n := 0
	for e := m.head[g]; e >= 0; e = m.next[e] {
		n++
	}
	dst = putVarint(dst, int64(n))
	for e := m.head[g]; e >= 0; e = m.next[e] {
		dst = putVarint(m.heap.putString(dst, m.key[e]), m.cnt[e])
	}
	return dst
}

func (a *strMinMaxRetractAcc) Load(src []byte, g int32) ([]byte, error) {
	has, src, err := getBool(src)
	if err != nil {
		return nil, err
	}
	var v []byte
	if has {
		if v, src, err = getString(src); err != nil {
			return nil, err
		}
		a.setExt(g, v, false)
	}
	if a.mapSize[g], src, err = getVarint(src); err != nil {
		return nil, err
	}
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src))/2 {
		return nil, fmt.Errorf("%w: value count %d out of range", engine.ErrData, n)
	}
	for range n {
		var c int64
		if v, src, err = getString(src); err != nil {
			return nil, err
		}
		if c, src, err = getVarint(src); err != nil {
			return nil, err
		}
		h := hashKey(g, v)
		if c == 0 || a.counts.find(g, v, h) >= 0 {
			return nil, fmt.Errorf("%w: invalid value count entry", engine.ErrData)
		}
		a.counts.insert(g, v, false, h, c)
	}
	return src, nil
}

// strCounts is valueCounts for strings: a pointer-free per-group multiset of byte strings with
// signed counts (the MapView<StringData, Long> of Min/MaxWithRetractAggFunction). Keys live in
// the multiset's own heap; key[e].has marks live entries.
type strCounts struct {
	groupEntries
	key    []strRef
	java   []bool   // the key came from a row holding a Java String
	hashes []uint64 // hashKey(group, key)
	cnt    []int64
	heap   strHeap
}

func newStrCounts() strCounts { return strCounts{groupEntries: newGroupEntries()} }

func (m *strCounts) hash(e int32) uint64 { return m.hashes[e] }

// find returns the entry of v (hash h = hashKey(g, v)) in group g, or -1.
func (m *strCounts) find(g int32, v []byte, h uint64) int32 {
	if m.used == 0 {
		return -1
	}
	mask := len(m.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return -1
		}
		if e := s - 1; m.hashes[e] == h && m.group[e] == g && string(m.heap.get(m.key[e])) == string(v) {
			return e
		}
	}
}

// insert adds v (flagged java when it holds a Java String) with count c to group g; v must not
// be present.
func (m *strCounts) insert(g int32, v []byte, java bool, h uint64, c int64) {
	e, appended := m.add(g, h, m.hash)
	if appended {
		m.key = append(m.key, m.heap.add(v))
		m.java = append(m.java, java)
		m.hashes = append(m.hashes, h)
		m.cnt = append(m.cnt, c)
	} else {
		m.key[e], m.java[e], m.hashes[e], m.cnt[e] = m.heap.add(v), java, h, c
	}
}

// remove deletes entry e and drops its key from the heap.
func (m *strCounts) remove(e int32) {
	m.groupEntries.remove(e, m.hash)
	m.heap.drop(m.key[e])
	m.key[e] = strRef{}
}

func (m *strCounts) clearGroup(g int32) {
	for m.head[g] >= 0 {
		m.remove(m.head[g])
	}
}

func (m *strCounts) bytes() int64 {
	return m.groupEntries.bytes() + int64(cap(m.key))*16 + int64(cap(m.java)) + int64(cap(m.hashes))*8 +
		int64(cap(m.cnt))*8 + int64(cap(m.heap.buf))
}

// varcharCall builds the accumulator of MIN or MAX over VARCHAR; its result type is the
// argument type, nullable.
func varcharCall(fn string, col, javaCol int, arg engine.Type, retract bool) (accumulator, engine.Type) {
	out := arg
	out.Nullable = true
	if retract {
		return &strMinMaxRetractAcc{col: col, javaCol: javaCol, max: fn == "MAX", counts: newStrCounts()}, out
	}
	return &strMinMaxAcc{col: col, javaCol: javaCol, max: fn == "MAX"}, out
}

// callVarBytes sets dst[j] to the output size of call j when its output is VARCHAR (varOutput),
// for OutBatch.Init. Output offsets are int32: a column over 2 GiB is an error, raised after
// the batch has changed state (a single MAX over long strings re-emitted by many rows).
func callVarBytes(calls []accumulator, pick []int32, dst []int) error {
	for j, c := range calls {
		if v, ok := c.(varOutput); ok {
			if dst[j] = v.varBytes(pick); dst[j] > math.MaxInt32 {
				return fmt.Errorf("%w: aggregate %d would produce %d bytes of output in one batch, more than 2 GiB; send smaller batches", engine.ErrData, j, dst[j])
			}
		}
	}
	return nil
}
