package main

// The C ABI path: libferry.so is dlopen'ed (only when this mode runs, so the Go-direct path and
// the smoke test do not need it) and driven the way a C host drives it: input ArrowArray trees
// in C memory, built once per input source and re-armed per call, one ferry_operator_process
// call per batch (and ferry_operator_next while it reports more output), the output released
// right away. The whole batch loop runs in C (perf_run), so
// the timed work is what a C or JNI host pays, with one Go->C transition per group of batches.
//
// libferry.so carries its own Go runtime, separate from this program's. That is a layout Go does
// not support officially (golang/go#18976, #22192); loading it with dlopen after this runtime is
// up avoids the initialisation race, and on linux/amd64 the two runtimes keep to themselves here.
// The library's heap and allocations are invisible to this runtime's MemStats.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -O2 -Wall
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "ferry.h"

typedef struct {
  void* dl;
  int32_t (*abi_version)(void);
  __typeof__(ferry_operator_open)* open;
  __typeof__(ferry_operator_process)* process;
  __typeof__(ferry_operator_next)* next;
  __typeof__(ferry_operator_close)* close;
  int64_t (*outstanding)(void);
} perf_lib;

// perf_load opens the library and resolves the functions; it returns NULL or dlerror's text.
static const char* perf_load(perf_lib* l, const char* path) {
  l->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (l->dl == NULL) return dlerror();
  void** slots[] = {(void**)&l->abi_version, (void**)&l->open, (void**)&l->process,
                    (void**)&l->next, (void**)&l->close, (void**)&l->outstanding};
  const char* names[] = {"ferry_abi_version", "ferry_operator_open", "ferry_operator_process",
                         "ferry_operator_next", "ferry_operator_close",
                         "ferry_output_bytes_outstanding"};
  for (int i = 0; i < 6; i++) {
    *slots[i] = dlsym(l->dl, names[i]);
    if (*slots[i] == NULL) return dlerror();
  }
  return NULL;
}

static int32_t perf_abi_version(const perf_lib* l) { return l->abi_version(); }
static int64_t perf_outstanding(const perf_lib* l) { return l->outstanding(); }

static int32_t perf_open(const perf_lib* l, const char* spec, FerryHandle* h, struct FerryError* e) {
  return l->open(spec, NULL, 0, NULL, h, e);
}

static int32_t perf_close(const perf_lib* l, FerryHandle h, struct FerryError* e) {
  return l->close(h, e);
}

static void perf_release_error(struct FerryError* e) {
  if (e->release != NULL) e->release(e);
}

#define PERF_MAX_COLS 8

// An input batch: a struct array over column buffers the host owns. Its release callbacks only
// mark the arrays released, so the same tree is re-armed for the next call.
typedef struct {
  struct ArrowArray root;
  struct ArrowArray kids[PERF_MAX_COLS];
  struct ArrowArray* kidp[PERF_MAX_COLS];
  const void* rootbufs[1];
  const void* bufs[PERF_MAX_COLS][3];
  int64_t nkids;
  int64_t releases;
} perf_input;

static void perf_kid_release(struct ArrowArray* a) { a->release = NULL; }

static void perf_root_release(struct ArrowArray* a) {
  perf_input* in = (perf_input*)a->private_data;
  for (int64_t i = 0; i < in->nkids; i++) {
    if (in->kids[i].release != NULL) in->kids[i].release(&in->kids[i]);
  }
  in->releases++;
  a->release = NULL;
}

static perf_input* perf_input_new(int64_t nkids) {
  perf_input* in = calloc(1, sizeof(perf_input));
  if (in == NULL) return NULL;
  in->nkids = nkids;
  in->root.n_buffers = 1;
  in->root.buffers = in->rootbufs;
  in->root.n_children = nkids;
  in->root.children = in->kidp;
  in->root.private_data = in;
  for (int64_t i = 0; i < nkids; i++) {
    in->kidp[i] = &in->kids[i];
    in->kids[i].buffers = in->bufs[i];
  }
  return in;
}

// perf_input_col sets child i: length elements, buffers {NULL validity, b1, b2}.
static void perf_input_col(perf_input* in, int64_t i, int64_t length, int64_t nbuffers,
                           void* b1, void* b2) {
  in->kids[i].length = length;
  in->kids[i].n_buffers = nbuffers;
  in->bufs[i][0] = NULL;
  in->bufs[i][1] = b1;
  in->bufs[i][2] = b2;
}

static void perf_arm(perf_input* in, int64_t offset, int64_t length) {
  in->root.offset = offset;
  in->root.length = length;
  in->root.release = perf_root_release;
  for (int64_t i = 0; i < in->nkids; i++) in->kids[i].release = perf_kid_release;
}

// perf_run processes count batches of size rows of in (whose children hold rows rows), from
// row *pos on, wrapping to 0 when a batch would run past the end. It adds the output rows to
// *out_rows. It returns FERRY_OK, a ferry status, or -1 when an input was not consumed.
static int32_t perf_run(const perf_lib* l, FerryHandle h, perf_input* in, int64_t rows,
                        int64_t size, int64_t count, int64_t* pos, int64_t* out_rows,
                        struct FerryError* err) {
  for (int64_t i = 0; i < count; i++) {
    if (*pos + size > rows) *pos = 0;
    perf_arm(in, *pos, size);
    struct ArrowArray out;
    memset(&out, 0, sizeof out);
    int32_t more = 0;
    struct ArrowArray* const batches[] = {&in->root};
    int32_t rc = l->process(h, 1, batches, 0, NULL, 0, &out, &more, err);
    if (rc != FERRY_OK) return rc;
    if (in->root.release != NULL) return -1;
    for (;;) {
      if (out.release != NULL) {
        *out_rows += out.length;
        out.release(&out);
      }
      if (!more) break;
      memset(&out, 0, sizeof out);
      rc = l->next(h, &out, &more, err);
      if (rc != FERRY_OK) return rc;
    }
    *pos += size;
  }
  return FERRY_OK;
}
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"unsafe"
)

// cLib is a loaded libferry.so. It is never unloaded: a Go runtime cannot be.
type cLib struct{ l *C.perf_lib }

var loadedLib *cLib

func loadLib(path string) (*cLib, error) {
	if loadedLib != nil {
		return loadedLib, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	cpath := C.CString(abs)
	defer C.free(unsafe.Pointer(cpath))
	l := (*C.perf_lib)(C.calloc(1, C.sizeof_perf_lib))
	if msg := C.perf_load(l, cpath); msg != nil {
		return nil, fmt.Errorf("loading %s: %s (run ./build.sh first)", abs, C.GoString(msg))
	}
	if v := C.perf_abi_version(l); v != C.FERRY_ABI_VERSION {
		return nil, fmt.Errorf("%s reports ABI %d, include/ferry.h is ABI %d", abs, v, C.FERRY_ABI_VERSION)
	}
	loadedLib = &cLib{l}
	return loadedLib, nil
}

// cInput is an input tree over column buffers in C memory.
type cInput struct {
	in    *C.perf_input
	rows  int
	bufs  []unsafe.Pointer
	aucts []int64 // the auction column, writable from Go (prepopulation)
}

// newCInput copies the workload's columns of b into C memory and builds the struct array.
func newCInput(w workload, b *bids) (*cInput, error) {
	cols := w.columns(b)
	in := C.perf_input_new(C.int64_t(len(cols) + 1))
	if in == nil {
		return nil, fmt.Errorf("out of C memory")
	}
	ci := &cInput{in: in, rows: b.n}
	ci.bufs = append(ci.bufs, unsafe.Pointer(in))
	cCopy := func(src unsafe.Pointer, n int) unsafe.Pointer {
		p := C.malloc(C.size_t(max(n, 1)))
		if n > 0 {
			C.memcpy(p, src, C.size_t(n))
		}
		ci.bufs = append(ci.bufs, p)
		return p
	}
	for i, c := range cols {
		if c.offs != nil {
			offs := cCopy(unsafe.Pointer(unsafe.SliceData(c.offs)), 4*len(c.offs))
			data := cCopy(unsafe.Pointer(unsafe.SliceData(c.bytes)), len(c.bytes))
			C.perf_input_col(in, C.int64_t(i), C.int64_t(b.n), 3, offs, data)
			continue
		}
		if c.dec != nil {
			p := cCopy(unsafe.Pointer(unsafe.SliceData(c.dec)), len(c.dec))
			C.perf_input_col(in, C.int64_t(i), C.int64_t(b.n), 2, p, nil)
			continue
		}
		p := cCopy(unsafe.Pointer(unsafe.SliceData(c.vals)), 8*len(c.vals))
		if i == 0 {
			ci.aucts = unsafe.Slice((*int64)(p), b.n)
		}
		C.perf_input_col(in, C.int64_t(i), C.int64_t(b.n), 2, p, nil)
	}
	kinds := cCopy(unsafe.Pointer(unsafe.SliceData(b.kinds)), len(b.kinds))
	C.perf_input_col(in, C.int64_t(len(cols)), C.int64_t(b.n), 2, kinds, nil)
	return ci, nil
}

func (ci *cInput) free() {
	for i := len(ci.bufs) - 1; i >= 0; i-- {
		C.free(ci.bufs[i])
	}
	ci.bufs = nil
}

// cDriver drives one operator handle through the C ABI.
type cDriver struct {
	lib  *cLib
	w    workload
	h    C.FerryHandle
	err  *C.struct_FerryError
	ring *cInput
	pre  *cInput
}

func newCDriver(lib *cLib, w workload, ring *bids) (*cDriver, error) {
	d := &cDriver{lib: lib, w: w, err: (*C.struct_FerryError)(C.calloc(1, C.sizeof_struct_FerryError))}
	spec := C.CString(w.specJSON())
	defer C.free(unsafe.Pointer(spec))
	if rc := C.perf_open(lib.l, spec, &d.h, d.err); rc != C.FERRY_OK {
		return nil, d.takeError("ferry_operator_open", rc)
	}
	var err error
	if d.ring, err = newCInput(w, ring); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *cDriver) takeError(what string, rc C.int32_t) error {
	if rc == -1 {
		return fmt.Errorf("%s: the input batch was not released", what)
	}
	msg := ""
	if d.err.message != nil {
		msg = C.GoString(d.err.message)
	}
	C.perf_release_error(d.err)
	return fmt.Errorf("%s: status %d: %s", what, int32(rc), msg)
}

func (d *cDriver) call(in *cInput, size, count int, pos *int) error {
	p, outRows := C.int64_t(*pos), C.int64_t(0)
	rc := C.perf_run(d.lib.l, d.h, in.in, C.int64_t(in.rows), C.int64_t(size), C.int64_t(count), &p, &outRows, d.err)
	*pos = int(p)
	if rc != C.FERRY_OK {
		return d.takeError("ferry_operator_process", rc)
	}
	if want := 2 * size * count; in == d.ring && int(outRows) != want {
		return fmt.Errorf("%d batches of %d rows gave %d output rows, want %d (-U, +U each)", count, size, outRows, want)
	}
	if want := size * count; in == d.pre && int(outRows) != want {
		return fmt.Errorf("prepopulate: %d rows gave %d output rows, want %d (+I each)", size*count, outRows, want)
	}
	return nil
}

func (d *cDriver) prepopulate(keys int, chunk *bids) error {
	var err error
	if d.pre, err = newCInput(d.w, chunk); err != nil {
		return err
	}
	perm := newPermutation(keys)
	for k := 0; k < keys; k += chunk.n {
		n := min(chunk.n, keys-k)
		for i := range n {
			d.pre.aucts[i] = firstAuctionID + perm.at(k+i)
		}
		pos := 0
		if err := d.call(d.pre, n, 1, &pos); err != nil {
			return err
		}
	}
	return nil
}

func (d *cDriver) run(size, count int, pos *int) error { return d.call(d.ring, size, count, pos) }

func (d *cDriver) groups() int { return -1 }

// outstanding is ferry_output_bytes_outstanding: output memory not yet released.
func (d *cDriver) outstanding() int64 { return int64(C.perf_outstanding(d.lib.l)) }

func (d *cDriver) close() {
	if d.h != 0 {
		C.perf_close(d.lib.l, d.h, d.err)
		C.perf_release_error(d.err)
		d.h = 0
	}
	for _, in := range []*cInput{d.ring, d.pre} {
		if in != nil {
			in.free()
		}
	}
	C.free(unsafe.Pointer(d.err))
}
