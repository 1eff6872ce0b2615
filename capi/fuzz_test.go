//go:build ferrytest

package main

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/ferrystream/ferry/engine"
)

// FuzzProcess turns fuzz bytes into a possibly malformed ArrowArray tree in C memory and feeds
// it to ferry_operator_process.
//
// The harness only builds trees whose memory an honest producer could have: whenever a header
// claims length L at offset O, the buffers attached really hold O+L elements, and a VARCHAR data
// buffer holds as many bytes as the largest offset in its offsets buffer. Header values outside
// that (negative, or beyond 2^40 elements) are only ever combined with small buffers, and those
// Ferry must reject before reading. Every buffer, pointer array and struct ends exactly at an
// inaccessible page (ftest_guarded_alloc), so a read past what a header vouches for faults and
// crashes the fuzz run instead of reading a neighbour's bytes.
//
// Assertions per input: the status is FERRY_OK, FERRY_EDATA or FERRY_EINVAL, never a panic
// (FERRY_EINTERNAL would poison the library); the input tree is released exactly once (not at
// all if it arrived released); inputs the harness knows to be malformed fail with FERRY_EDATA
// and inputs it knows to be well-formed succeed; any output imports into arrow-go against the
// output schema; outstanding output bytes return to 0.

// The fuzzed operator's input: every layout Ferry validates differently.
var fuzzTypes = []struct {
	name, typ string
	width     int // bytes per element; 0 VARCHAR, -1 BOOLEAN (bits)
	nbuffers  int64
}{
	{"k", "BIGINT", 8, 2},
	{"s", "VARCHAR", 0, 3},
	{"i", "INT NOT NULL", 4, 2},
	{"b", "BOOLEAN", -1, 2},
	{"d", "DECIMAL(38,2)", 16, 2},
	{"t", "TIMESTAMP(9)", 12, 2},
	{"x", "DOUBLE", 8, 2},
	{"$row_kind", "", 1, 2}, // RowKind
}

const (
	fuzzCols    = 7 // declared columns; fuzzTypes[7] is the RowKind column
	fuzzMaxSane = 4096
)

func fuzzSpec(retracting bool) string {
	var in []string
	for _, f := range fuzzTypes[:fuzzCols] {
		in = append(in, fmt.Sprintf(`{"name":%q,"type":%q}`, f.name, f.typ))
	}
	r := strconv.FormatBool(retracting)
	return `{"kind":"group_aggregate","name":"Fuzz","inputs":[{"fields":[` + strings.Join(in, ",") + `],"keys":[0,1,3,4,5]}],` +
		`"max_parallelism":128,"params":{` +
		`"aggs":[{"func":"COUNT"},{"func":"SUM","args":[2],"retract":` + r + `},{"func":"MAX","args":[6],"retract":` + r + `},` +
		`{"func":"AVG","args":[0]},{"func":"MIN","args":[2],"retract":` + r + `},{"func":"COUNT","args":[1]}],` +
		`"need_retraction":` + r + `,"generate_update_before":` + r + `}}`
}

// Column flags of a fuzz plan.
const (
	colNullPtr    = 1 << 0 // the parent's children entry is NULL
	colReleased   = 1 << 1 // the child arrives released
	colDictionary = 1 << 2 // a dictionary is attached
	colGrandchild = 1 << 3 // n_children = 1 with a real child
	colValidity   = 1 << 4 // a validity buffer is attached
	colRawContent = 1 << 5 // VARCHAR offsets and RowKind bytes taken raw from the content
	colNulls      = 1 << 6 // validity bits taken from the content (else all valid)
	colBufMask    = 1 << 7 // some buffer pointers are NULL (bufmask)
)

// Root flags.
const (
	rootBuffersNull  = 1 << 0
	rootChildrenNull = 1 << 1
	rootDictionary   = 1 << 2
	rootReleased     = 1 << 3
	rootValidity     = 1 << 4
	rootInsertOnly   = 1 << 6 // use the insert-only spec
)

// Header fields a mutation can corrupt.
const (
	mutNone = iota
	mutLength
	mutNullCount
	mutOffset
	mutNBuffers
	mutNChildren
	mutFields
)

const (
	selRaw = 11
	sels   = 13
)

type fuzzCol struct {
	flags, extra, coff, mut, sel byte
	raw                          int64
	bufmask                      byte
	cstart                       byte // where the column starts reading the content (mod its length)
}

type fuzzPlan struct {
	rows, rootOff, rootMut, rootSel byte
	rootRaw                         int64
	rootFlags                       byte
	cols                            [fuzzCols + 1]fuzzCol
	content                         []byte
}

func (p fuzzPlan) encode() []byte {
	var b []byte
	i64 := func(v int64) { b = binary.LittleEndian.AppendUint64(b, uint64(v)) }
	b = append(b, p.rows, p.rootOff, p.rootMut, p.rootSel)
	if p.rootSel%sels == selRaw {
		i64(p.rootRaw)
	}
	b = append(b, p.rootFlags)
	for _, c := range p.cols {
		b = append(b, c.flags, c.extra, c.coff, c.mut, c.sel, c.cstart)
		if c.sel%sels == selRaw {
			i64(c.raw)
		}
		if c.flags&colBufMask != 0 {
			b = append(b, c.bufmask)
		}
	}
	return append(b, p.content...)
}

type byteReader struct {
	b []byte
	i int
}

func (r *byteReader) u8() byte {
	if r.i >= len(r.b) {
		return 0
	}
	r.i++
	return r.b[r.i-1]
}

func (r *byteReader) i64() int64 {
	var v uint64
	for k := range 8 {
		v |= uint64(r.u8()) << (8 * k)
	}
	return int64(v)
}

func decodePlan(data []byte) fuzzPlan {
	r := &byteReader{b: data}
	var p fuzzPlan
	p.rows, p.rootOff, p.rootMut, p.rootSel = r.u8(), r.u8(), r.u8(), r.u8()
	if p.rootSel%sels == selRaw {
		p.rootRaw = r.i64()
	}
	p.rootFlags = r.u8()
	for i := range p.cols {
		c := &p.cols[i]
		c.flags, c.extra, c.coff, c.mut, c.sel, c.cstart = r.u8(), r.u8(), r.u8(), r.u8(), r.u8(), r.u8()
		if c.sel%sels == selRaw {
			c.raw = r.i64()
		}
		if c.flags&colBufMask != 0 {
			c.bufmask = r.u8()
		}
	}
	if r.i < len(data) {
		p.content = data[r.i:]
	}
	return p
}

// mutated returns the corrupted value of a header field whose honest value is honest. Values in
// (fuzzMaxSane, 2^40] are moved above 2^40: the harness cannot back them with memory, and Ferry
// cannot tell them from honest ones (it reads what a header vouches for).
func mutated(honest int64, sel byte, raw int64) int64 {
	var v int64
	switch sel % sels {
	case 0:
		v = -1
	case 1:
		v = -2
	case 2:
		v = math.MinInt64
	case 3:
		v = 1<<40 + 1
	case 4:
		v = 1 << 62
	case 5:
		v = math.MaxInt64
	case 6:
		v = honest + 1
	case 7:
		v = honest - 1
	case 8:
		v = 0
	case 9:
		v = honest + 2
	case 10:
		v = 1
	case selRaw:
		v = raw
	case 12:
		v = honest + 5
	}
	if v > fuzzMaxSane && v <= 1<<40 {
		v = 1<<40 + 1 + v&0xff
	}
	return v
}

// content cycles through the plan's content bytes (zeros when there are none).
type content struct {
	b []byte
	i int
}

func (c *content) next() byte {
	if len(c.b) == 0 {
		return 0
	}
	v := c.b[c.i%len(c.b)]
	c.i++
	return v
}

// fuzzTree is a built input tree and what the harness knows about it.
type fuzzTree struct {
	root     *cArray
	trackers []*cTracker // every tracked array reachable from the root
	released bool        // the root arrived released
	// mustFail: malformed in a way Ferry is specified to detect. mustPass: well-formed.
	mustFail, mustPass bool
	why                string
	kinds              []byte // RowKind bytes of the batch's rows (when sane)
	rows               int64  // the batch's row count (root length) as built
}

type fuzzBuilder struct {
	g  *guardArena
	ct content
	t  *fuzzTree
}

func (b *fuzzBuilder) fail(why string) {
	if !b.t.mustFail {
		b.t.mustFail, b.t.why = true, why
	}
}

func (b *fuzzBuilder) spoil() { b.t.mustPass = false }

func (b *fuzzBuilder) array() *cArray { return (*cArray)(b.g.alloc(sizeofArray)) }

func (b *fuzzBuilder) track(a *cArray, kids []*cArray) {
	tr := (*cTracker)(b.g.alloc(int(unsafe.Sizeof(cTracker{}))))
	var kp **cArray
	if len(kids) > 0 {
		kp = (**cArray)(b.g.alloc(len(kids) * 8))
		copy(unsafe.Slice(kp, len(kids)), kids)
	}
	trackArray(a, tr, kp, len(kids))
	b.t.trackers = append(b.t.trackers, tr)
}

// ptrArray allocates n pointers (guarded), copies ps into its prefix.
func (b *fuzzBuilder) ptrArray(n int, ps []unsafe.Pointer) unsafe.Pointer {
	p := b.g.alloc(n * 8)
	copy(unsafe.Slice((*unsafe.Pointer)(p), n), ps)
	return p
}

// saneHeader reports whether a root header's length and offset are values the harness backs
// with memory. A mutated value is either at most fuzzMaxSane or beyond 2^40 (mutated).
func saneHeader(l, o int64) bool { return l >= 0 && o >= 0 && l <= fuzzMaxSane && o <= fuzzMaxSane }

// saneChild is saneHeader for a column: its honest length covers the root's offset and length
// (each up to fuzzMaxSane) plus a few extra elements, all of which the harness backs with memory.
// Only a mutated length or offset beyond 2^40 makes a column insane.
func saneChild(l, o int64) bool {
	return l >= 0 && o >= 0 && l <= 2*fuzzMaxSane+16 && o <= fuzzMaxSane
}

func insaneHeader(l, o, nulls, nbuf, nkids int64) string {
	switch {
	case l < 0 || o < 0:
		return "negative length/offset"
	case l > 1<<40 || o > 1<<40-l:
		return "offset+length beyond 2^40"
	case nulls < -1 || nulls > l:
		return "null_count out of range"
	case nbuf < 0 || nkids < 0:
		return "negative counts"
	}
	return ""
}

// column builds child ci of the batch; need is the element count the batch requires of it
// (root offset + rows), window its first row element relative to the child's offset.
func (b *fuzzBuilder) column(ci int, fc fuzzCol, need int64, window, rows int64, rootSane bool) *cArray {
	ft := fuzzTypes[ci]
	name := ft.name
	b.ct.i = int(fc.cstart)
	if fc.flags&(colNullPtr|colReleased|colDictionary|colGrandchild|colBufMask) != 0 || fc.mut%mutFields != mutNone {
		b.spoil()
	}
	if fc.flags&colNullPtr != 0 {
		b.fail(name + ": NULL child")
		return nil
	}
	a := b.array()
	v := view(a)
	l := need + int64(fc.extra%4)
	o := int64(fc.coff % 8)
	nb, nk := ft.nbuffers, int64(0)
	if fc.flags&colGrandchild != 0 {
		nk = 1
	}
	mut := fc.mut % mutFields
	switch mut {
	case mutLength:
		l = mutated(l, fc.sel, fc.raw)
	case mutOffset:
		o = mutated(o, fc.sel, fc.raw)
	case mutNBuffers:
		nb = mutated(nb, fc.sel, fc.raw)
	case mutNChildren:
		nk = mutated(nk, fc.sel, fc.raw)
	}
	sane := saneChild(l, o)
	e := o + l // elements the buffers hold
	size := func(n int64) int {
		if !sane {
			return 8
		}
		return int(n)
	}
	bufs := make([]unsafe.Pointer, 3)
	nulls := int64(0)
	hasValidity := fc.flags&(colValidity|colNulls) != 0
	if hasValidity {
		vb := b.g.alloc(size((e + 7) / 8))
		bits := unsafe.Slice((*byte)(vb), size((e+7)/8))
		for k := range bits {
			bits[k] = 0xff
			if fc.flags&colNulls != 0 {
				bits[k] = b.ct.next()
			}
		}
		if sane {
			for j := o; j < e; j++ {
				if bits[j>>3]&(1<<(j&7)) == 0 {
					nulls++
				}
			}
		}
		bufs[0] = vb
	}
	if nulls > 0 && rows > 0 {
		// Nulls somewhere in the child: fine for nullable columns; the NOT NULL INT and the
		// RowKind column reject them (Ferry does not look whether they fall inside the batch).
		if ci == 2 || ci == fuzzCols {
			b.spoil()
		}
	}
	switch {
	case ft.width == 0: // VARCHAR: offsets, then bytes
		ob := b.g.alloc(size((e + 1) * 4))
		offs := unsafe.Slice((*int32)(ob), size((e+1)*4)/4)
		maxOff := int32(0)
		for j := range offs {
			if fc.flags&colRawContent != 0 {
				offs[j] = int32(int16(uint16(b.ct.next()) | uint16(b.ct.next())<<8))
			} else if j > 0 {
				offs[j] = offs[j-1] + int32(b.ct.next()%10)
			}
			maxOff = max(maxOff, offs[j])
		}
		if fc.flags&colRawContent != 0 {
			b.spoil() // may be negative or non-monotonic: either is EDATA, or fine outside the batch
		}
		db := b.g.alloc(int(maxOff))
		data := unsafe.Slice((*byte)(db), int(maxOff))
		for k := range data {
			data[k] = b.ct.next()
		}
		bufs[1], bufs[2] = ob, db
	case ft.width < 0: // BOOLEAN
		vb := b.g.alloc(size((e + 7) / 8))
		for k, d := 0, unsafe.Slice((*byte)(vb), size((e+7)/8)); k < len(d); k++ {
			d[k] = b.ct.next()
		}
		bufs[1] = vb
	default:
		vb := b.g.alloc(size(e * int64(ft.width)))
		d := unsafe.Slice((*byte)(vb), size(e*int64(ft.width)))
		for k := range d {
			x := b.ct.next()
			if ci == fuzzCols && fc.flags&colRawContent == 0 {
				x %= 4 // a valid RowKind
			}
			d[k] = x
		}
		if ci == fuzzCols && sane && window >= 0 && window+rows <= l {
			b.t.kinds = slices.Clone(d[o+window : o+window+rows])
		}
		bufs[1] = vb
	}
	if mut == mutNullCount {
		nulls = mutated(nulls, fc.sel, fc.raw)
	}
	if fc.flags&colBufMask != 0 {
		for k := range bufs {
			if fc.bufmask&(1<<k) != 0 {
				bufs[k] = nil
			}
		}
	}
	// Pointer arrays of exactly n_buffers / n_children entries when those are plausible.
	nbAlloc := ft.nbuffers
	if nb >= 0 && nb <= 16 {
		nbAlloc = nb
	}
	list := slices.Clone(bufs)
	for int64(len(list)) < nbAlloc {
		list = append(list, b.g.alloc(8))
	}
	v.Buffers = b.ptrArray(int(nbAlloc), list)
	var kids []*cArray
	if nk >= 1 && nk <= 16 {
		ks := make([]unsafe.Pointer, nk)
		for k := range ks {
			g := b.array()
			view(g).NBuffers = 0
			b.track(g, nil)
			kids = append(kids, g)
			ks[k] = unsafe.Pointer(g)
		}
		v.Children = b.ptrArray(int(nk), ks)
	} else if nk != 0 {
		v.Children = b.ptrArray(1, nil)
	}
	v.Length, v.Offset, v.NullCount, v.NBuffers, v.NChildren = l, o, nulls, nb, nk
	if fc.flags&colDictionary != 0 {
		v.Dictionary = unsafe.Pointer(b.array())
		b.fail(name + ": dictionary")
	}

	if why := insaneHeader(l, o, nulls, nb, nk); why != "" {
		b.fail(name + ": " + why)
	} else if nb != ft.nbuffers {
		b.fail(name + ": wrong n_buffers")
	} else if nk != 0 {
		b.fail(name + ": children")
	} else if rootSane && l < need {
		b.fail(name + ": shorter than the batch")
	} else if nulls > 0 && bufs[0] == nil {
		b.fail(name + ": nulls without validity")
	}
	if nulls != 0 && hasValidity && rows > 0 && (ci == 2 || ci == fuzzCols) {
		b.spoil()
	}
	if fc.flags&colReleased != 0 {
		b.fail(name + ": released child")
		for _, k := range kids {
			b.untrack(k) // nobody releases the subtree of a released child
		}
		return a // release stays NULL: not tracked
	}
	b.track(a, kids)
	return a
}

func buildFuzzTree(p *fuzzPlan, g *guardArena) *fuzzTree {
	t := &fuzzTree{mustPass: true}
	b := &fuzzBuilder{g: g, ct: content{b: p.content}, t: t}
	rows := int64(p.rows % 65)
	off := int64(p.rootOff % 8)
	nb, nk, nulls := int64(1), int64(fuzzCols+1), int64(0)
	mut := p.rootMut % mutFields
	if mut != mutNone || p.rootFlags&(rootBuffersNull|rootChildrenNull|rootDictionary|rootReleased|rootValidity) != 0 {
		b.spoil()
	}
	l, o := rows, off
	switch mut {
	case mutLength:
		l = mutated(rows, p.rootSel, p.rootRaw)
	case mutOffset:
		o = mutated(off, p.rootSel, p.rootRaw)
	case mutNBuffers:
		nb = mutated(nb, p.rootSel, p.rootRaw)
	case mutNChildren:
		nk = mutated(nk, p.rootSel, p.rootRaw)
	case mutNullCount:
		nulls = mutated(0, p.rootSel, p.rootRaw)
	}
	rootSane := saneHeader(l, o)
	// Children are laid out for the root's final (possibly corrupted) offset and length when
	// those are plausible, else for the honest ones.
	need, window, batchRows := off+rows, off, rows
	if rootSane {
		need, window, batchRows = o+l, o, l
	}
	var kids []*cArray
	var entries []unsafe.Pointer
	for ci := range p.cols {
		c := b.column(ci, p.cols[ci], need, window, batchRows, rootSane)
		entries = append(entries, unsafe.Pointer(c))
		if c != nil && view(c).Release != nil {
			kids = append(kids, c)
		}
	}
	root := b.array()
	v := view(root)
	var validity unsafe.Pointer
	if p.rootFlags&rootValidity != 0 {
		n := 8
		if rootSane {
			n = int((o + l + 7) / 8)
		}
		validity = b.g.alloc(n)
		for k, d := 0, unsafe.Slice((*byte)(validity), n); k < n; k++ {
			d[k] = 0xff
		}
	}
	nbAlloc := int64(1)
	if nb >= 0 && nb <= 16 {
		nbAlloc = nb
	}
	v.Buffers = b.ptrArray(int(nbAlloc), []unsafe.Pointer{validity})
	nkAlloc := int64(fuzzCols + 1)
	if nk >= 0 && nk <= 16 {
		nkAlloc = nk
	}
	for int64(len(entries)) < nkAlloc {
		g := b.array()
		b.track(g, nil)
		kids = append(kids, g)
		entries = append(entries, unsafe.Pointer(g))
	}
	if nkAlloc < int64(len(entries)) {
		// Children beyond n_children are not reachable: leave them out of the release tree.
		for _, c := range entries[nkAlloc:] {
			if c != nil {
				kids = slices.DeleteFunc(kids, func(k *cArray) bool { return unsafe.Pointer(k) == c })
				b.untrack((*cArray)(c))
			}
		}
		entries = entries[:nkAlloc]
	}
	v.Children = b.ptrArray(int(nkAlloc), entries)
	v.Length, v.Offset, v.NullCount, v.NBuffers, v.NChildren = l, o, nulls, nb, nk
	if p.rootFlags&rootBuffersNull != 0 {
		v.Buffers = nil
	}
	if p.rootFlags&rootChildrenNull != 0 {
		v.Children = nil
		b.fail("root: children NULL")
	}
	if p.rootFlags&rootDictionary != 0 {
		v.Dictionary = unsafe.Pointer(b.array())
		b.fail("root: dictionary")
	}
	if why := insaneHeader(l, o, nulls, nb, nk); why != "" {
		b.fail("root: " + why)
	} else if nb != 1 {
		b.fail("root: wrong n_buffers")
	} else if nk != fuzzCols+1 {
		b.fail("root: wrong n_children")
	} else if v.Buffers == nil {
		b.fail("root: buffers NULL")
	} else if validity != nil && nulls > 0 {
		b.fail("root: null rows")
	}
	if p.rootFlags&rootReleased != 0 {
		t.released = true
		t.mustFail, t.why = true, "root released"
		// Nothing is reachable through a released root: nobody releases the children.
		for _, k := range kids {
			b.untrack(k)
		}
	} else {
		b.track(root, kids)
	}
	t.root = root
	t.rows = l
	if p.rootFlags&rootInsertOnly != 0 {
		for _, k := range t.kinds {
			if k == 1 || k == 3 {
				b.spoil() // retraction on an insert-only aggregate: EDATA
			}
		}
	}
	if t.kinds == nil && rootSane && l > 0 {
		b.spoil()
	}
	for _, k := range t.kinds {
		if k > 3 {
			b.spoil()
		}
	}
	if t.mustFail {
		t.mustPass = false
	}
	return t
}

// untrack drops a's tracker (and those of its subtree) from the release expectations.
func (b *fuzzBuilder) untrack(a *cArray) {
	if a == nil || view(a).Release == nil {
		return
	}
	tr := (*cTracker)(view(a).PrivateData)
	for _, k := range unsafe.Slice(tr.kids, tr.nkids) {
		b.untrack(k)
	}
	b.t.trackers = slices.DeleteFunc(b.t.trackers, func(x *cTracker) bool { return x == tr })
}

var fuzzOnce struct {
	sync.Once
	specs  [2]*cChar // retracting, insert-only
	schema *arrow.Schema
}

// fuzzStderrEnv names a file fuzz workers append their standard error to. go test discards a
// worker's output, so without it the trace of a crash that kills the worker (a fault in C, a Go
// runtime fatal error) is lost and only "exit status 2" reaches the log.
const fuzzStderrEnv = "FERRY_FUZZ_STDERR"

func fuzzSetup(t testing.TB) {
	fuzzOnce.Do(func() {
		if path := os.Getenv(fuzzStderrEnv); path != "" {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatalf("%s: %v", fuzzStderrEnv, err)
			}
			if err := syscall.Dup2(int(f.Fd()), 2); err != nil {
				t.Fatalf("%s: %v", fuzzStderrEnv, err)
			}
		}
		fuzzOnce.specs[0] = cString(fuzzSpec(true))
		fuzzOnce.specs[1] = cString(fuzzSpec(false))
		h, r := open(t, fuzzSpec(true), nil)
		if r.code != codeOK {
			t.Fatalf("fuzz spec: %v", r)
		}
		o := &testOp{t: t, h: h}
		fuzzOnce.schema = o.outputSchema()
		o.close()
	})
}

func runFuzzInput(t *testing.T, data []byte) {
	fuzzSetup(t)
	// A read past what a header vouches for hits a guard page. Made a panic, it fails this input
	// with a stack trace (Ferry's recover reports it as FERRY_EINTERNAL) instead of killing the
	// worker.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	// Each input is judged alone: a panic fails this input and the minimizer's reruns of it, not
	// every input the worker runs after it.
	defer engine.Unpoison()
	p := decodePlan(data)
	var g guardArena
	defer g.free()
	tree := buildFuzzTree(&p, &g)

	specIdx := 0
	if p.rootFlags&rootInsertOnly != 0 {
		specIdx = 1
	}
	var h cHandle
	var e cError
	if r := finish(t, "ferry_operator_open", int32(openCall(fuzzOnce.specs[specIdx], nil, &h, &e)), &e); r.code != codeOK {
		t.Fatalf("open: %v", r)
	}
	defer func() {
		if r := finish(t, "ferry_operator_close", int32(ferry_operator_close(h, &e)), &e); r.code != codeOK {
			t.Errorf("close: %v", r)
		}
	}()
	out := (*cArray)(g.alloc(sizeofArray))
	r := finish(t, "ferry_operator_process", int32(processCall(h, tree.root, 0, out, &e)), &e)

	switch r.code {
	case codeOK, codeData, codeInval:
	default:
		t.Fatalf("process returned %v (a panic poisons the library)", r)
	}
	want := int64(1)
	if tree.released {
		want = 0
	}
	for i, tr := range tree.trackers {
		if n := trackerReleases(tr); n != want {
			t.Errorf("tracked array %d released %d times, want %d", i, n, want)
		}
	}
	if view(tree.root).Release != nil {
		t.Errorf("input root not released")
	}
	if tree.mustFail && r.code != codeData {
		t.Errorf("malformed input (%s) returned %v, want FERRY_EDATA", tree.why, r)
	}
	if tree.mustPass && r.code != codeOK {
		t.Errorf("well-formed input rejected: %v", r)
	}
	if r.code != codeOK && out.release != nil {
		t.Errorf("failed call filled the output")
	}
	if out.release != nil {
		v := view(out)
		if v.Length <= 0 || v.NChildren != int64(len(fuzzOnce.schema.Fields())) {
			t.Errorf("malformed output header %+v", *v)
		}
		rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(out)), fuzzOnce.schema)
		if err != nil {
			t.Errorf("arrow-go rejects the output: %v", err)
			releaseArray(out)
		} else {
			_ = recordRows(rec) // reads every value
			rec.Release()
		}
	}
	if n := outstanding(); n != 0 {
		t.Errorf("outstanding output bytes %d after release", n)
	}
}

// fuzzSeeds are the classic malformations, as plans; TestFuzzCorpusFiles writes them to
// testdata/fuzz/FuzzProcess.
func fuzzSeeds() map[string]fuzzPlan {
	body := make([]byte, 96)
	for i := range body {
		body[i] = byte(i*37 + 11)
	}
	base := fuzzPlan{rows: 5, content: body}
	validity := base
	for i := range validity.cols {
		if i != 2 && i != fuzzCols {
			validity.cols[i].flags = colValidity | colNulls
		}
	}
	with := func(f func(p *fuzzPlan)) fuzzPlan {
		p := base
		p.content = slices.Clone(base.content)
		f(&p)
		return p
	}
	col := func(ci int, c fuzzCol) fuzzPlan { return with(func(p *fuzzPlan) { p.cols[ci] = c }) }
	special := func(p *fuzzPlan, ci int, flags byte, b ...byte) {
		p.cols[ci].flags = flags
		p.cols[ci].cstart = byte(len(p.content))
		p.content = append(p.content, b...)
	}
	rowKind9 := with(func(p *fuzzPlan) { special(p, fuzzCols, colRawContent, 0, 2, 9, 1, 0, 3, 9, 9) })
	return map[string]fuzzPlan{
		"valid":         base,
		"valid-nulls":   validity,
		"valid-offsets": with(func(p *fuzzPlan) { p.rootOff = 3; p.cols[1].coff = 5; p.cols[0].extra = 2 }),
		"valid-empty":   with(func(p *fuzzPlan) { p.rows = 0 }),
		"valid-64-rows": with(func(p *fuzzPlan) { p.rows = 64 }),
		"insert-only-retraction": with(func(p *fuzzPlan) {
			p.rootFlags = rootInsertOnly
			special(p, fuzzCols, 0, 0, 0, 2, 3, 0)
		}),
		"root-negative-length":       with(func(p *fuzzPlan) { p.rootMut, p.rootSel = mutLength, 0 }),
		"root-offset-overflow":       with(func(p *fuzzPlan) { p.rootMut, p.rootSel = mutOffset, 5 }),
		"root-huge-children":         with(func(p *fuzzPlan) { p.rootMut, p.rootSel = mutNChildren, 4 }),
		"root-missing-children":      with(func(p *fuzzPlan) { p.rootFlags = rootChildrenNull }),
		"root-wrong-n-buffers":       with(func(p *fuzzPlan) { p.rootMut, p.rootSel = mutNBuffers, 8 }),
		"root-released":              with(func(p *fuzzPlan) { p.rootFlags = rootReleased }),
		"root-null-rows":             with(func(p *fuzzPlan) { p.rootFlags = rootValidity; p.rootMut, p.rootSel = mutNullCount, 10 }),
		"root-length-plus-one":       with(func(p *fuzzPlan) { p.rootMut, p.rootSel = mutLength, 6 }),
		"child-negative-length":      col(0, fuzzCol{mut: mutLength, sel: 1}),
		"child-null-count-gt-length": col(4, fuzzCol{mut: mutNullCount, sel: 4}),
		"child-null-count-no-bitmap": col(0, fuzzCol{flags: colValidity | colNulls | colBufMask, bufmask: 1}),
		"child-missing-values":       col(6, fuzzCol{flags: colBufMask, bufmask: 2}),
		"child-missing-offsets":      col(1, fuzzCol{flags: colBufMask, bufmask: 2}),
		"child-missing-varchar-data": col(1, fuzzCol{flags: colBufMask, bufmask: 4}),
		"child-null":                 col(3, fuzzCol{flags: colNullPtr}),
		"child-released":             col(5, fuzzCol{flags: colReleased}),
		"child-dictionary":           col(1, fuzzCol{flags: colDictionary}),
		"child-grandchild":           col(0, fuzzCol{flags: colGrandchild}),
		"child-offset-overflow":      col(2, fuzzCol{mut: mutOffset, sel: selRaw, raw: math.MaxInt64 - 2}),
		"child-huge-length":          col(4, fuzzCol{mut: mutLength, sel: 3}),
		"child-huge-buffers":         col(0, fuzzCol{mut: mutNBuffers, sel: 5}),
		"varchar-2-buffers":          col(1, fuzzCol{mut: mutNBuffers, sel: 7}),
		"bigint-3-buffers":           col(0, fuzzCol{mut: mutNBuffers, sel: 6}),
		"varchar-non-monotonic":      with(func(p *fuzzPlan) { special(p, 1, colRawContent, 0, 0, 9, 0, 4, 0, 2, 0, 30, 0, 40, 0, 50, 0) }),
		"varchar-negative-offset":    with(func(p *fuzzPlan) { special(p, 1, colRawContent, 0xfe, 0xff, 3, 0, 4, 0, 9, 0, 9, 0, 9, 0) }),
		"valid-all-rowkinds":         with(func(p *fuzzPlan) { special(p, fuzzCols, colRawContent, 0, 1, 2, 3, 3) }),
		"rowkind-9":                  rowKind9,
		"rowkind-nulls":              col(fuzzCols, fuzzCol{flags: colNulls}),
		"not-null-column-nulls":      col(2, fuzzCol{flags: colNulls}),
		"child-shorter":              col(6, fuzzCol{mut: mutLength, sel: 7}),
	}
}

func FuzzProcess(f *testing.F) {
	seeds := fuzzSeeds()
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		f.Add(seeds[name].encode())
	}
	f.Fuzz(runFuzzInput)
}

// TestFuzzSeedsClassified runs every seed and checks the harness classified the named
// malformations as such (so the seeds exercise what their names say).
func TestFuzzSeedsClassified(t *testing.T) {
	seeds := fuzzSeeds()
	for _, name := range slices.Sorted(maps.Keys(seeds)) {
		p := seeds[name]
		t.Run(name, func(t *testing.T) {
			if q := decodePlan(p.encode()); !slices.Equal(q.encode(), p.encode()) {
				t.Fatalf("plan encoding does not round-trip")
			}
			var g guardArena
			tree := buildFuzzTree(&p, &g)
			g.free()
			valid := strings.HasPrefix(name, "valid")
			if valid && !tree.mustPass {
				t.Errorf("seed should be well-formed")
			}
			if !valid && tree.mustPass {
				t.Errorf("seed should not be classified well-formed")
			}
			runFuzzInput(t, p.encode())
		})
	}
}

// TestFuzzCorpusFiles checks testdata/fuzz/FuzzProcess holds every seed in the Go fuzz corpus
// format; FERRY_WRITE_FUZZ_CORPUS=1 (re)writes the files.
func TestFuzzCorpusFiles(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzProcess")
	for name, p := range fuzzSeeds() {
		file := filepath.Join(dir, "seed-"+name)
		want := "go test fuzz v1\n[]byte(" + strconv.Quote(string(p.encode())) + ")\n"
		if os.Getenv("FERRY_WRITE_FUZZ_CORPUS") != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("corpus file missing (FERRY_WRITE_FUZZ_CORPUS=1 writes it): %v", err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s is stale (FERRY_WRITE_FUZZ_CORPUS=1 rewrites it)", file)
		}
	}
}
