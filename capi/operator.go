package main

/*
#include <stdlib.h>
#include "ferry.h"
#include "cabi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/session"
)

// maxSchemas bounds n_schemas of ferry_operator_open: a larger count is refused before any
// pointer of the array is read.
const maxSchemas = 64

// operator is the object behind an operator handle: the session plus the C memory of its
// output in flight and the scratch of exporting it. Everything here is used inside the
// session's calls, one at a time.
type operator struct {
	s     *session.Session
	alloc cAllocator
	hooks testHooks // test-only fault injection (ferrytest builds)
	// poisoned is the message of the panic that poisoned the operator (opCall), nil while healthy.
	poisoned atomic.Pointer[string]

	nulls []C.int64_t
	nbufs []C.int32_t
	bufs  []unsafe.Pointer
}

// cAllocator hands out the C memory of one output batch at a time.
type cAllocator struct {
	ptr unsafe.Pointer
	n   int
}

func (a *cAllocator) Alloc(n int) []byte {
	a.discard()
	p := C.ferry_slab_alloc(C.int64_t(n))
	if p == nil {
		return nil
	}
	a.ptr, a.n = p, n
	return unsafe.Slice((*byte)(p), n)
}

// discard frees a slab that was not handed out.
func (a *cAllocator) discard() {
	if a.ptr != nil {
		C.ferry_slab_free(a.ptr, C.int64_t(a.n))
		a.ptr = nil
	}
}

// poison records the panic value r recovered in the export name on this operator and returns
// the message for the caller's error; it writes the message and the panicking stack to standard
// error. Call it from the deferred function that recovered, so the stack is the panic's.
func (o *operator) poison(name string, r any) string {
	msg := fmt.Sprintf("%s: internal error (Go panic): %v; the operator is poisoned: every later call on it fails, close it and open a new one", name, r)
	if o.poisoned.CompareAndSwap(nil, &msg) {
		fmt.Fprintf(os.Stderr, "ferry: %s\n%s\n", msg, debug.Stack())
	}
	return msg
}

// lookup resolves an operator handle.
func lookup(h C.FerryHandle) (*operator, error) {
	obj, err := handles.get(uint64(h), kindOperator)
	if err != nil {
		return nil, err
	}
	return obj.(*operator), nil
}

//export ferry_operator_open
func ferry_operator_open(specJSON, secretsJSON *C.ferry_cchar, nSchemas C.int32_t, schemas *C.ferry_cschema, out *C.FerryHandle, cerr *C.struct_FerryError) C.int32_t {
	var given []*C.struct_ArrowSchema
	if schemas != nil && nSchemas > 0 && nSchemas <= maxSchemas {
		given = unsafe.Slice((**C.struct_ArrowSchema)(unsafe.Pointer(schemas)), int(nSchemas))
	}
	defer func() {
		for _, s := range given {
			C.ferry_release_schema(s)
		}
	}()
	return call("ferry_operator_open", cerr, func() error {
		switch {
		case specJSON == nil || out == nil:
			return fmt.Errorf("%w: spec_json and out must not be NULL", engine.ErrInvalid)
		case nSchemas < 0 || nSchemas > maxSchemas || (nSchemas > 0 && schemas == nil):
			return fmt.Errorf("%w: n_schemas %d with input_schemas %p: want 0, or up to %d schemas", engine.ErrInvalid, nSchemas, schemas, maxSchemas)
		}
		spec, err := engine.ParseSpec([]byte(C.GoString(specJSON)))
		if err != nil {
			return err
		}
		hooks, err := parseTestHooks(spec.Test)
		if err != nil {
			return err
		}
		var secrets []byte
		if secretsJSON != nil {
			secrets = []byte(C.GoString(secretsJSON))
		}
		views := make([]*engine.CSchema, len(given))
		for i, s := range given {
			views[i] = (*engine.CSchema)(unsafe.Pointer(s))
		}
		o := &operator{hooks: hooks}
		s, err := session.Open(spec, secrets, views, session.Host{Alloc: &o.alloc, Discard: o.alloc.discard, Export: o.export, Blob: exportBlob})
		if err != nil {
			return err
		}
		o.s = s
		*out = C.FerryHandle(handles.add(kindOperator, o))
		return nil
	})
}

//export ferry_operator_output_schema
func ferry_operator_output_schema(h C.FerryHandle, out *C.struct_ArrowSchema, cerr *C.struct_FerryError) C.int32_t {
	return opCall("ferry_operator_output_schema", h, cerr, func(o *operator) error {
		if out == nil {
			return fmt.Errorf("%w: out must not be NULL", engine.ErrInvalid)
		}
		fields, err := o.s.Output()
		if err != nil {
			return err
		}
		n := len(fields) + 1
		formats := make([]*C.char, n)
		names := make([]*C.char, n)
		flags := make([]C.int64_t, n)
		defer func() {
			for i := range n {
				C.free(unsafe.Pointer(formats[i]))
				C.free(unsafe.Pointer(names[i]))
			}
		}()
		for i, f := range fields {
			formats[i], names[i] = C.CString(f.Type.ArrowFormat()), C.CString(f.Name)
			if f.Type.Nullable {
				flags[i] = C.ARROW_FLAG_NULLABLE
			}
		}
		formats[n-1], names[n-1] = C.CString("c"), C.CString("$row_kind")
		if C.ferry_export_schema(out, C.int32_t(n), &formats[0], &names[0], &flags[0]) != 0 {
			return fmt.Errorf("%w: cannot allocate the output schema", engine.ErrMemory)
		}
		return nil
	})
}

// output runs one call that produces output chunks into out and reports in *more whether more
// follow; *more is 0 on every error.
func output(name string, h C.FerryHandle, out *C.struct_ArrowArray, more *C.int32_t, cerr *C.struct_FerryError, call func(o *operator) (bool, error)) C.int32_t {
	if more != nil {
		*more = 0
	}
	return opCall(name, h, cerr, func(o *operator) error {
		if out == nil || more == nil {
			return fmt.Errorf("%w: out and more must not be NULL", engine.ErrInvalid)
		}
		m, err := call(o)
		if m {
			*more = 1
		}
		return err
	})
}

// maxRuns bounds n_runs of ferry_operator_process (the JVM wrapper sends at most one run per row
// of a batch): a larger count is refused before the run list is read.
const maxRuns = 1 << 24

//export ferry_operator_process
func ferry_operator_process(h C.FerryHandle, nBatches C.int32_t, batches *C.ferry_carray, nRuns C.int32_t, runs *C.ferry_cint32, nowMs C.int64_t, out *C.struct_ArrowArray, more *C.int32_t, cerr *C.struct_FerryError) C.int32_t {
	var given []*C.struct_ArrowArray
	if batches != nil && nBatches > 0 && nBatches <= maxSchemas {
		given = unsafe.Slice((**C.struct_ArrowArray)(unsafe.Pointer(batches)), int(nBatches))
	}
	defer func() {
		for _, b := range given {
			C.ferry_release_array(b)
		}
	}()
	return output("ferry_operator_process", h, out, more, cerr, func(o *operator) (bool, error) {
		switch {
		case nBatches <= 0 || nBatches > maxSchemas || batches == nil:
			return false, fmt.Errorf("%w: n_batches %d with batches %p: want one batch pointer per input (at most %d)", engine.ErrInvalid, nBatches, batches, maxSchemas)
		case nRuns < 0 || nRuns > maxRuns || (nRuns > 0 && runs == nil):
			return false, fmt.Errorf("%w: n_runs %d with runs %p: want 0 to %d (input, rows) pairs", engine.ErrInvalid, nRuns, runs, maxRuns)
		}
		// Views of the caller's arrays, no copies: the session decodes them under its lock (a
		// concurrent call on the handle must fail there, not race on shared scratch here).
		var pairs []int32
		if nRuns > 0 {
			pairs = unsafe.Slice((*int32)(unsafe.Pointer(runs)), 2*int(nRuns))
		}
		views := unsafe.Slice((**engine.CArray)(unsafe.Pointer(batches)), int(nBatches))
		o.hooks.inject("process")
		return o.s.Process(views, pairs, int64(nowMs), out)
	})
}

//export ferry_operator_advance
func ferry_operator_advance(h C.FerryHandle, watermarkMs, nowMs C.int64_t, out *C.struct_ArrowArray, more *C.int32_t, cerr *C.struct_FerryError) C.int32_t {
	return output("ferry_operator_advance", h, out, more, cerr, func(o *operator) (bool, error) {
		return o.s.Advance(int64(watermarkMs), int64(nowMs), out)
	})
}

//export ferry_operator_flush
func ferry_operator_flush(h C.FerryHandle, nowMs C.int64_t, out *C.struct_ArrowArray, more *C.int32_t, cerr *C.struct_FerryError) C.int32_t {
	return output("ferry_operator_flush", h, out, more, cerr, func(o *operator) (bool, error) {
		return o.s.Flush(int64(nowMs), out)
	})
}

//export ferry_operator_next
func ferry_operator_next(h C.FerryHandle, out *C.struct_ArrowArray, more *C.int32_t, cerr *C.struct_FerryError) C.int32_t {
	return output("ferry_operator_next", h, out, more, cerr, func(o *operator) (bool, error) {
		return o.s.Next(out)
	})
}

// export hands the filled output batch b to dst, the caller's zero-initialised ArrowArray
// (session.Host.Export).
func (o *operator) export(dst any, b *engine.OutBatch) error {
	out := dst.(*C.struct_ArrowArray)
	n := len(b.Cols)
	o.nulls = resize(o.nulls, n)
	o.nbufs = resize(o.nbufs, n)
	o.bufs = resize(o.bufs, 3*n)
	for i := range b.Cols {
		c := &b.Cols[i]
		o.nulls[i] = C.int64_t(c.NullCount)
		o.bufs[3*i] = ptr(c.Valid)
		if c.Type.Variable() {
			o.nbufs[i] = 3
			o.bufs[3*i+1] = unsafe.Pointer(unsafe.SliceData(c.Offs))
			o.bufs[3*i+2] = ptr(c.Data)
		} else {
			o.nbufs[i] = 2
			o.bufs[3*i+1] = ptr(c.Data)
			o.bufs[3*i+2] = nil
		}
	}
	slab, size := o.alloc.ptr, o.alloc.n
	o.alloc.ptr = nil // ferry_export_batch owns it from here
	if C.ferry_export_batch(out, slab, C.int64_t(size), C.int64_t(b.Len), C.int32_t(n), &o.nulls[0], &o.nbufs[0], &o.bufs[0]) != 0 {
		return fmt.Errorf("%w: cannot allocate the output batch structs", engine.ErrMemory)
	}
	return nil
}

func ptr(b []byte) unsafe.Pointer {
	if b == nil {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

//export ferry_operator_snapshot
func ferry_operator_snapshot(h C.FerryHandle, keyGroup C.int32_t, blob *C.struct_FerryBlob, cerr *C.struct_FerryError) C.int32_t {
	return opCall("ferry_operator_snapshot", h, cerr, func(o *operator) error {
		if blob == nil {
			return fmt.Errorf("%w: blob must not be NULL", engine.ErrInvalid)
		}
		o.hooks.inject("snapshot")
		_, err := o.s.Snapshot(int(keyGroup), blob)
		return err
	})
}

//export ferry_operator_freeze
func ferry_operator_freeze(h C.FerryHandle, view *C.int64_t, cerr *C.struct_FerryError) C.int32_t {
	return opCall("ferry_operator_freeze", h, cerr, func(o *operator) error {
		if view == nil {
			return fmt.Errorf("%w: view must not be NULL", engine.ErrInvalid)
		}
		id, err := o.s.Freeze()
		*view = C.int64_t(id)
		return err
	})
}

//export ferry_operator_snapshot_view
func ferry_operator_snapshot_view(h C.FerryHandle, view C.int64_t, keyGroup C.int32_t, blob *C.struct_FerryBlob, cerr *C.struct_FerryError) C.int32_t {
	return opCall("ferry_operator_snapshot_view", h, cerr, func(o *operator) error {
		if blob == nil {
			return fmt.Errorf("%w: blob must not be NULL", engine.ErrInvalid)
		}
		_, err := o.s.SnapshotView(int64(view), int(keyGroup), blob)
		return err
	})
}

//export ferry_operator_release_view
func ferry_operator_release_view(h C.FerryHandle, view C.int64_t, cerr *C.struct_FerryError) C.int32_t {
	return opCall("ferry_operator_release_view", h, cerr, func(o *operator) error {
		o.s.ReleaseView(int64(view))
		return nil
	})
}

// exportBlob copies a snapshot chunk into dst, the caller's zero-initialised FerryBlob
// (session.Host.Blob).
func exportBlob(dst any, chunk []byte) error {
	p := C.ferry_blob_alloc(dst.(*C.struct_FerryBlob), C.int64_t(len(chunk)))
	if p == nil {
		return fmt.Errorf("%w: cannot allocate a %d-byte state blob", engine.ErrMemory, len(chunk))
	}
	copy(unsafe.Slice((*byte)(p), len(chunk)), chunk)
	return nil
}

//export ferry_operator_restore
func ferry_operator_restore(h C.FerryHandle, keyGroup C.int32_t, data *C.ferry_cuint8, length C.int64_t, cerr *C.struct_FerryError) C.int32_t {
	return opCall("ferry_operator_restore", h, cerr, func(o *operator) error {
		if length < 0 || (data == nil && length > 0) {
			return fmt.Errorf("%w: data is NULL or length %d negative", engine.ErrInvalid, length)
		}
		var blob []byte
		if length > 0 {
			blob = unsafe.Slice((*byte)(unsafe.Pointer(data)), int(length))
		}
		o.hooks.inject("restore")
		return o.s.Restore(int(keyGroup), blob)
	})
}

//export ferry_operator_import
func ferry_operator_import(h C.FerryHandle, schema *C.struct_ArrowSchema, batch *C.struct_ArrowArray, cerr *C.struct_FerryError) C.int32_t {
	defer C.ferry_release_schema(schema)
	defer C.ferry_release_array(batch)
	return opCall("ferry_operator_import", h, cerr, func(o *operator) error {
		if schema == nil || batch == nil {
			return fmt.Errorf("%w: schema and batch must not be NULL", engine.ErrInvalid)
		}
		return o.s.Import((*engine.CSchema)(unsafe.Pointer(schema)), (*engine.CArray)(unsafe.Pointer(batch)))
	})
}

//export ferry_operator_export
func ferry_operator_export(h C.FerryHandle, out *C.struct_ArrowArray, more *C.int32_t, cerr *C.struct_FerryError) C.int32_t {
	return output("ferry_operator_export", h, out, more, cerr, func(o *operator) (bool, error) {
		return o.s.Export(out)
	})
}

//export ferry_operator_stats
func ferry_operator_stats(h C.FerryHandle, out *C.struct_FerryOperatorStats, cerr *C.struct_FerryError) C.int32_t {
	return opCall("ferry_operator_stats", h, cerr, func(o *operator) error {
		if out == nil {
			return fmt.Errorf("%w: output must not be NULL", engine.ErrInvalid)
		}
		st, err := o.s.Stats()
		if err != nil {
			return err
		}
		out.keys, out.state_bytes, out.next_timer_ms = C.int64_t(st.Keys), C.int64_t(st.StateBytes), C.int64_t(st.NextTimerMs)
		return nil
	})
}

// abandon frees a poisoned operator's session as far as that goes: a panic while freeing it is
// the first panic's consequence, so it is dropped with the rest.
func abandon(s *session.Session) {
	defer func() { _ = recover() }()
	s.Abandon()
}

//export ferry_operator_close
func ferry_operator_close(h C.FerryHandle, cerr *C.struct_FerryError) C.int32_t {
	var o *operator // a panic in Close poisons the operator: a second close abandons it
	return run("ferry_operator_close", cerr, &o, func() error {
		var err error
		if o, err = lookup(h); err != nil {
			return err
		}
		if o.poisoned.Load() != nil {
			abandon(o.s) // the panic left its call flags set: Close would refuse
		} else if err := o.s.Close(); err != nil {
			return err
		}
		o.alloc.discard()
		_, err = handles.remove(uint64(h), kindOperator)
		return err
	})
}
