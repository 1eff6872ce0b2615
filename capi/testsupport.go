//go:build ferrytest

package main

// Test support: cgo helpers for the capi tests, which cannot import "C" themselves (_test.go
// files of a cgo package may not use cgo). Everything here is unexported and the C helpers are
// static, so the c-shared library exports nothing new (build.sh checks `nm -D`). The helpers
// allocate C memory the way a host (the JVM wrapper, the C harness) would: zeroed structs,
// buffers and pointer arrays in malloc'd memory, release callbacks written in C that count
// their calls.

/*
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ferry.h"
#include "cabi.h"

// Bookkeeping of a test-built ArrowArray: how often its release callback ran and which
// children it releases. The child list is the builder's own, not the (possibly forged)
// n_children/children of the header, so releasing a malformed tree stays memory-safe.
typedef struct {
  int64_t releases;
  int64_t nkids;
  struct ArrowArray** kids;
} ftest_apriv;

static void ftest_array_release(struct ArrowArray* a) {
  ftest_apriv* p = (ftest_apriv*)a->private_data;
  __atomic_add_fetch(&p->releases, 1, __ATOMIC_SEQ_CST);
  for (int64_t i = 0; i < p->nkids; i++) {
    struct ArrowArray* c = p->kids[i];
    if (c && c->release) c->release(c);
  }
  a->release = NULL;
}

static void ftest_array_track(struct ArrowArray* a, ftest_apriv* p) {
  a->private_data = p;
  a->release = ftest_array_release;
}

// A counting wrapper around a foreign producer's release callback (arrow-go exports).
typedef struct {
  void (*array_release)(struct ArrowArray*);
  void (*schema_release)(struct ArrowSchema*);
  void* priv;
  int64_t releases;
} ftest_wrap;

static void ftest_wrapped_array_release(struct ArrowArray* a) {
  ftest_wrap* w = (ftest_wrap*)a->private_data;
  __atomic_add_fetch(&w->releases, 1, __ATOMIC_SEQ_CST);
  a->private_data = w->priv;
  a->release = w->array_release;
  if (a->release) a->release(a);
  a->release = NULL;
}

static void ftest_wrap_array(struct ArrowArray* a, ftest_wrap* w) {
  w->array_release = a->release;
  w->priv = a->private_data;
  a->private_data = w;
  a->release = ftest_wrapped_array_release;
}

static void ftest_wrapped_schema_release(struct ArrowSchema* s) {
  ftest_wrap* w = (ftest_wrap*)s->private_data;
  __atomic_add_fetch(&w->releases, 1, __ATOMIC_SEQ_CST);
  s->private_data = w->priv;
  s->release = w->schema_release;
  if (s->release) s->release(s);
  s->release = NULL;
}

static void ftest_wrap_schema(struct ArrowSchema* s, ftest_wrap* w) {
  w->schema_release = s->release;
  w->priv = s->private_data;
  s->private_data = w;
  s->release = ftest_wrapped_schema_release;
}

static int64_t ftest_load(int64_t* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }

// A schema whose release callback only counts (fields are filled by the test).
static void ftest_schema_release(struct ArrowSchema* s) {
  int64_t* n = (int64_t*)s->private_data;
  __atomic_add_fetch(n, 1, __ATOMIC_SEQ_CST);
  for (int64_t i = 0; s->children && i < s->n_children; i++) {
    struct ArrowSchema* c = s->children[i];
    if (c && c->release) c->release(c);
  }
  s->release = NULL;
}

static void ftest_child_schema_release(struct ArrowSchema* s) { s->release = NULL; }

static void ftest_schema_track(struct ArrowSchema* s, int64_t* counter, int child) {
  s->private_data = counter;
  s->release = child ? ftest_child_schema_release : ftest_schema_release;
}

// Guarded allocation for the fuzz harness: size bytes that end exactly where a PROT_NONE page
// begins, so a read one byte past the end faults instead of reading a neighbour's memory. The
// memory is zeroed. *base and *total are what ftest_guarded_free needs.
static void* ftest_guarded_alloc(size_t size, void** base, size_t* total) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t body = (size + page - 1) / page * page;
  if (body == 0) body = page;
  size_t n = body + page;
  char* m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  if (mprotect(m + body, page, PROT_NONE) != 0) {
    munmap(m, n);
    return NULL;
  }
  *base = m;
  *total = n;
  return m + body - size;
}

static void ftest_guarded_free(void* base, size_t total) { munmap(base, total); }

static void ftest_release_blob(struct FerryBlob* b) {
  if (b && b->release) b->release(b);
}

static void ftest_release_error(struct FerryError* e) {
  if (e && e->release) e->release(e);
}
*/
import "C"

import (
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// Aliases of the C types the exports take, for the test files.
type (
	cArray  = C.struct_ArrowArray
	cSchema = C.struct_ArrowSchema
	cError  = C.struct_FerryError
	cBlob   = C.struct_FerryBlob
	cHandle = C.FerryHandle
	cChar   = C.ferry_cchar
	cUint8  = C.ferry_cuint8
	cInt32  = C.int32_t
	cInt64  = C.int64_t
	cStats  = C.struct_FerryOperatorStats
	cMemory = C.struct_FerryRuntimeMemory
	// cSchemaPtr is an element of ferry_operator_open's input_schemas array.
	cSchemaPtr = C.ferry_cschema
	// cArrayPtr is an element of ferry_operator_process' batches array.
	cArrayPtr = C.ferry_carray
	// cRunWord is an element of ferry_operator_process' runs array.
	cRunWord = C.ferry_cint32
	cTracker = C.ftest_apriv
	cWrap    = C.ftest_wrap
)

// Status codes of include/ferry.h, as the tests compare them.
const (
	codeOK          = int32(C.FERRY_OK)
	codeInval       = int32(C.FERRY_EINVAL)
	codeData        = int32(C.FERRY_EDATA)
	codeState       = int32(C.FERRY_ESTATE)
	codeUnsupported = int32(C.FERRY_EUNSUPPORTED)
	codeNoMem       = int32(C.FERRY_ENOMEM)
	codeInternal    = int32(C.FERRY_EINTERNAL)
	codePoisoned    = int32(C.FERRY_EPOISONED)
	codeQuery       = int32(C.FERRY_EQUERY)
	codeExternal    = int32(C.FERRY_EEXTERNAL)
)

const (
	sizeofArray  = int(C.sizeof_struct_ArrowArray)
	sizeofSchema = int(C.sizeof_struct_ArrowSchema)
)

// cAlloc returns n zeroed bytes of C memory (at least one byte, so the pointer is never NULL).
func cAlloc(n int) unsafe.Pointer { return C.calloc(1, C.size_t(max(n, 1))) }

// cFree frees C memory from cAlloc or cString.
func cFree(p unsafe.Pointer) { C.free(p) }

// cString copies s into C memory; free it with cFree.
func cString(s string) *cChar { return (*cChar)(unsafe.Pointer(C.CString(s))) }

// goString copies a NUL-terminated C string.
func goString(p *cChar) string {
	if p == nil {
		return ""
	}
	return C.GoString((*C.char)(unsafe.Pointer(p)))
}

// takeError returns the code and message of *e and releases it (when set).
func takeError(e *cError) (int32, string) {
	code, msg := int32(e.code), ""
	if e.message != nil {
		msg = C.GoString(e.message)
	}
	C.ftest_release_error(e)
	return code, msg
}

// errorReleased reports whether *e is back to its zero state.
func errorReleased(e *cError) bool { return e.message == nil && e.release == nil && e.code == 0 }

// schemaList returns a C array of the given schema pointers, as ferry_operator_open's
// input_schemas (free with cFree).
func schemaList(schemas ...*cSchema) *cSchemaPtr {
	p := (**cSchema)(cAlloc(len(schemas) * int(unsafe.Sizeof(uintptr(0)))))
	copy(unsafe.Slice(p, len(schemas)), schemas)
	return (*cSchemaPtr)(unsafe.Pointer(p))
}

// arrayList returns a C array of the given batch pointers (nil entries stay NULL), as
// ferry_operator_process' batches (free with cFree).
func arrayList(arrays ...*cArray) *cArrayPtr {
	p := (**cArray)(cAlloc(len(arrays) * int(unsafe.Sizeof(uintptr(0)))))
	copy(unsafe.Slice(p, len(arrays)), arrays)
	return (*cArrayPtr)(unsafe.Pointer(p))
}

// runList returns the (input, rows) pairs as a C int32 array (free with cFree).
func runList(pairs ...int32) *cRunWord {
	p := (*int32)(cAlloc(4 * len(pairs)))
	copy(unsafe.Slice(p, len(pairs)), pairs)
	return (*cRunWord)(unsafe.Pointer(p))
}

// newCArray returns a zeroed ArrowArray in C memory (free with cFree).
func newCArray() *cArray { return (*cArray)(cAlloc(sizeofArray)) }

// newCSchema returns a zeroed ArrowSchema in C memory (free with cFree).
func newCSchema() *cSchema { return (*cSchema)(cAlloc(sizeofSchema)) }

// view exposes an ArrowArray through engine.CArray's Go field types.
func view(a *cArray) *engine.CArray { return (*engine.CArray)(unsafe.Pointer(a)) }

// releaseArray calls a's release callback when set (consumer side of the C Data Interface).
func releaseArray(a *cArray) { C.ferry_release_array(a) }

// releaseSchema calls s's release callback when set.
func releaseSchema(s *cSchema) { C.ferry_release_schema(s) }

// releaseBlob calls b's release callback when set.
func releaseBlob(b *cBlob) { C.ftest_release_blob(b) }

// blobBytes copies the data of a blob.
func blobBytes(b *cBlob) []byte {
	if b.data == nil {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(b.data), C.int(b.length))
}

// trackArray makes a's release callback count its calls in t (C memory the caller owns) and
// release kids, the builder's own child list.
func trackArray(a *cArray, t *cTracker, kids **cArray, nkids int) {
	t.kids = kids
	t.nkids = C.int64_t(nkids)
	C.ftest_array_track(a, t)
}

// trackerReleases is how often the release callback of a tracked array ran.
func trackerReleases(t *cTracker) int64 { return int64(C.ftest_load(&t.releases)) }

// wrapArray interposes a counting release callback in front of a's own (w: C memory the
// caller owns and frees after the array was released).
func wrapArray(a *cArray, w *cWrap) { C.ftest_wrap_array(a, w) }

// wrapSchema does the same for a schema.
func wrapSchema(s *cSchema, w *cWrap) { C.ftest_wrap_schema(s, w) }

// wrapReleases is how often a wrapped release callback ran.
func wrapReleases(w *cWrap) int64 { return int64(C.ftest_load(&w.releases)) }

// fillSchema sets the format and child list of a test-built schema and a counting release
// callback (counter: C memory the caller owns). Strings and pointer arrays belong to the caller.
func fillSchema(s *cSchema, format *cChar, kids []*cSchema, counter *cInt64, child bool) {
	s.format = (*C.char)(unsafe.Pointer(format))
	s.name = nil
	s.n_children = C.int64_t(len(kids))
	s.children = nil
	if len(kids) > 0 {
		p := (**cSchema)(cAlloc(len(kids) * int(unsafe.Sizeof(uintptr(0)))))
		copy(unsafe.Slice(p, len(kids)), kids)
		s.children = p
	}
	C.ftest_schema_track(s, (*C.int64_t)(counter), boolInt(child))
}

// freeSchemaChildren frees the pointer array fillSchema allocated.
func freeSchemaChildren(s *cSchema) {
	if s.children != nil {
		cFree(unsafe.Pointer(s.children))
		s.children = nil
	}
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// guardArena owns guarded C allocations (see ftest_guarded_alloc) and frees them together.
type guardArena struct {
	maps []guardMap
}

type guardMap struct {
	base unsafe.Pointer
	n    C.size_t
}

// alloc returns size zeroed bytes followed by an inaccessible page (size 0: a pointer to the
// inaccessible page itself, so any read through it faults).
func (g *guardArena) alloc(size int) unsafe.Pointer {
	var base unsafe.Pointer
	var n C.size_t
	p := C.ftest_guarded_alloc(C.size_t(size), &base, &n)
	if p == nil {
		panic("guarded allocation failed")
	}
	g.maps = append(g.maps, guardMap{base, n})
	return p
}

func (g *guardArena) free() {
	for _, m := range g.maps {
		C.ftest_guarded_free(m.base, m.n)
	}
	g.maps = g.maps[:0]
}

// loadInt64 reads a C int64 counter atomically.
func loadInt64(p *cInt64) int64 { return int64(C.ftest_load((*C.int64_t)(p))) }

// outstanding is ferry_output_bytes_outstanding as a Go int64.
func outstanding() int64 { return int64(ferry_output_bytes_outstanding()) }

// processOn calls ferry_operator_process on one batch, in (NULL allowed), as input `input` of
// n inputs, without runs; an input outside [0, n) takes the first slot with a run that names
// it, so the call is refused for the input.
func processOn(h cHandle, input, n int, in *cArray, now cInt64, out *cArray, more *cInt32, e *cError) cInt32 {
	ptrs := make([]*cArray, n)
	var runs *cRunWord
	var nRuns cInt32
	if input >= 0 && input < n {
		ptrs[input] = in
	} else {
		ptrs[0], nRuns = in, 1
		runs = runList(int32(input), int32(max(in.length, 1)))
		defer cFree(unsafe.Pointer(runs))
	}
	list := arrayList(ptrs...)
	defer cFree(unsafe.Pointer(list))
	return ferry_operator_process(h, cInt32(n), list, nRuns, runs, now, out, more, e)
}
