package main

/*
#include <stdlib.h>
#include "ferry.h"
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/snapshot"
)

// operatorKinds maps a spec kind to its constructor.
var operatorKinds = map[string]func(*engine.Spec) (engine.Operator, error){
	"group_aggregate": func(s *engine.Spec) (engine.Operator, error) { return agg.NewGroupAggregate(s) },
}

// operator is the object behind an operator handle: the engine operator plus the reusable
// import, export and snapshot scratch of its calls.
type operator struct {
	spec        *engine.Spec
	label       string
	fingerprint uint64
	op          engine.Operator
	importer    engine.Importer
	batch       engine.Batch
	out         engine.OutBatch
	alloc       cAllocator
	busy        atomic.Bool
	broken      string // set when a call failed after changing state
	payload     []byte // snapshot payload and restore scratch
	chunk       []byte // encoded snapshot chunk

	// snap is the key group whose chunks ferry_operator_snapshot is handing out.
	snap struct {
		active bool
		kg     int
		chunk  int // index of the next chunk
		from   int // the operator's position to continue from; -1 once the last chunk went out
	}
	// restoring maps key groups whose restore has begun but not ended to their next chunk index.
	restoring map[int]int

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

// with runs fn on the operator behind h, refusing concurrent use of one handle.
func with(h C.FerryHandle, fn func(o *operator) error) error {
	obj, err := handles.get(uint64(h), kindOperator)
	if err != nil {
		return err
	}
	o := obj.(*operator)
	if !o.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: operator %s is in use by another thread", errState, o.label)
	}
	defer o.busy.Store(false)
	if o.broken != "" {
		return fmt.Errorf("%w: operator %s failed earlier (%s); close it and restore from a checkpoint", errState, o.label, o.broken)
	}
	if err := fn(o); err != nil {
		o.alloc.discard()
		if errors.Is(err, engine.ErrMemory) {
			o.broken = err.Error()
		}
		return fmt.Errorf("%s: %w", o.label, err)
	}
	return nil
}

//export ferry_operator_open
func ferry_operator_open(specJSON *C.ferry_cchar, schema *C.struct_ArrowSchema, out *C.FerryHandle, cerr *C.struct_FerryError) C.int32_t {
	defer C.ferry_release_schema(schema)
	return call("ferry_operator_open", cerr, func() error {
		if specJSON == nil || out == nil {
			return fmt.Errorf("%w: spec_json and out must not be NULL", engine.ErrInvalid)
		}
		spec, err := engine.ParseSpec([]byte(C.GoString(specJSON)), testHooks.Load())
		if err != nil {
			return err
		}
		newOp, ok := operatorKinds[spec.Kind]
		if !ok {
			return fmt.Errorf("%w: spec: kind: %q is not a native operator", engine.ErrUnsupported, spec.Kind)
		}
		if schema != nil {
			if err := checkSchema(schema, spec); err != nil {
				return err
			}
		}
		op, err := newOp(spec)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Label(), err)
		}
		o := &operator{spec: spec, label: spec.Label(), fingerprint: spec.Fingerprint(), op: op}
		o.importer = engine.Importer{Types: spec.InputTypes}
		for _, f := range spec.Input {
			o.importer.Names = append(o.importer.Names, f.Name)
		}
		o.out.Alloc = &o.alloc
		*out = C.FerryHandle(handles.add(kindOperator, o))
		return nil
	})
}

// checkSchema compares the host's input schema with the spec: a "+s" struct whose children are
// the input columns in their Arrow formats followed by the int8 RowKind column.
func checkSchema(s *C.struct_ArrowSchema, spec *engine.Spec) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: input schema: %s", engine.ErrData, fmt.Sprintf(format, args...))
	}
	if s.release == nil {
		return bad("already released")
	}
	if s.format == nil || C.GoString(s.format) != "+s" {
		return bad("root is not a struct (\"+s\")")
	}
	n := len(spec.InputTypes)
	if s.n_children != C.int64_t(n+1) || s.children == nil {
		return bad("%d columns, want %d (%d declared + RowKind)", s.n_children, n+1, n)
	}
	kids := unsafe.Slice(s.children, n+1)
	for i, k := range kids {
		want, what := "c", "RowKind"
		if i < n {
			want, what = spec.InputTypes[i].ArrowFormat(), fmt.Sprintf("%s %s", spec.Input[i].Name, spec.InputTypes[i])
		}
		if k == nil || k.format == nil {
			return bad("column %d is NULL", i)
		}
		if got := C.GoString(k.format); got != want {
			return bad("column %d (%s) has Arrow format %q, want %q", i, what, got, want)
		}
		if k.dictionary != nil || k.n_children != 0 {
			return bad("column %d (%s) must be a plain, non-dictionary array", i, what)
		}
	}
	return nil
}

//export ferry_operator_output_schema
func ferry_operator_output_schema(h C.FerryHandle, out *C.struct_ArrowSchema, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_operator_output_schema", cerr, func() error {
		if out == nil {
			return fmt.Errorf("%w: out must not be NULL", engine.ErrInvalid)
		}
		return with(h, func(o *operator) error {
			fields := o.op.Output()
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
	})
}

//export ferry_operator_process
func ferry_operator_process(h C.FerryHandle, in *C.struct_ArrowArray, nowMs C.int64_t, out *C.struct_ArrowArray, cerr *C.struct_FerryError) C.int32_t {
	defer C.ferry_release_array(in)
	return call("ferry_operator_process", cerr, func() error {
		if in == nil || out == nil {
			return fmt.Errorf("%w: input and output must not be NULL", engine.ErrInvalid)
		}
		return with(h, func(o *operator) error {
			defer o.batch.Forget()
			return o.produce(out, func() error {
				if err := o.importer.Import((*engine.CArray)(unsafe.Pointer(in)), &o.batch); err != nil {
					return err
				}
				return o.op.Process(&o.batch, int64(nowMs), &o.out)
			})
		})
	})
}

//export ferry_operator_advance
func ferry_operator_advance(h C.FerryHandle, watermarkMs, nowMs C.int64_t, out *C.struct_ArrowArray, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_operator_advance", cerr, func() error {
		if out == nil {
			return fmt.Errorf("%w: output must not be NULL", engine.ErrInvalid)
		}
		return with(h, func(o *operator) error {
			return o.produce(out, func() error { return o.op.Advance(int64(watermarkMs), int64(nowMs), &o.out) })
		})
	})
}

//export ferry_operator_flush
func ferry_operator_flush(h C.FerryHandle, nowMs C.int64_t, out *C.struct_ArrowArray, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_operator_flush", cerr, func() error {
		if out == nil {
			return fmt.Errorf("%w: output must not be NULL", engine.ErrInvalid)
		}
		return with(h, func(o *operator) error {
			return o.produce(out, func() error { return o.op.Flush(int64(nowMs), &o.out) })
		})
	})
}

// produce runs one call that fills the operator's output batch (run writes into o.out), once the
// state is complete, and hands the batch to the caller.
func (o *operator) produce(out *C.struct_ArrowArray, run func() error) error {
	if err := o.checkRestored(); err != nil {
		return err
	}
	o.out.Len = 0
	if err := run(); err != nil {
		return err
	}
	return o.export(out)
}

// export hands the operator's output batch to the caller; an empty batch leaves out untouched.
func (o *operator) export(out *C.struct_ArrowArray) error {
	b := &o.out
	if b.Len == 0 {
		return nil
	}
	n := len(b.Cols)
	o.nulls = resize(o.nulls, n)
	o.nbufs = resize(o.nbufs, n)
	o.bufs = resize(o.bufs, 3*n)
	for i := range b.Cols {
		c := &b.Cols[i]
		o.nulls[i] = C.int64_t(c.NullCount)
		o.bufs[3*i] = ptr(c.Valid)
		if c.Type.ID == engine.Varchar {
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

func (o *operator) header(kg int) snapshot.Header {
	return snapshot.Header{Kind: o.spec.Kind, MaxParallelism: o.spec.MaxParallelism, KeyGroup: kg, Fingerprint: o.fingerprint}
}

// checkRestored fails while a key group's restore is missing chunks: the state is incomplete.
func (o *operator) checkRestored() error {
	for kg, next := range o.restoring {
		return fmt.Errorf("%w: the restore of key group %d stopped after chunk %d of an unfinished sequence", engine.ErrData, kg, next-1)
	}
	return nil
}

//export ferry_operator_snapshot
func ferry_operator_snapshot(h C.FerryHandle, keyGroup C.int32_t, blob *C.struct_FerryBlob, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_operator_snapshot", cerr, func() error {
		if blob == nil {
			return fmt.Errorf("%w: blob must not be NULL", engine.ErrInvalid)
		}
		return with(h, func(o *operator) error {
			if err := o.checkRestored(); err != nil {
				return err
			}
			kg := int(keyGroup)
			s := &o.snap
			if s.active && s.kg == kg && s.from < 0 {
				s.active = false // the key group's last chunk went out: this call ends the sequence
				return nil
			}
			if !s.active || s.kg != kg {
				s.active, s.kg, s.chunk, s.from = true, kg, 0, 0
			}
			next, payload, err := o.op.SnapshotKeyGroup(kg, s.from, o.payload[:0], snapshot.MaxChunk)
			o.payload = payload[:0]
			if err != nil {
				s.active = false
				return err
			}
			if len(payload) == 0 {
				s.active = false // no state in this key group
				return nil
			}
			if len(payload) > snapshot.MaxPayload {
				s.active = false
				return fmt.Errorf("%w: key group %d: the state of one key exceeds %d bytes, more than a state chunk can hold", engine.ErrUnsupported, kg, snapshot.MaxPayload)
			}
			hd := o.header(kg)
			hd.Chunk, hd.Last = s.chunk, next < 0
			o.chunk = snapshot.Encode(o.chunk[:0], hd, payload)
			s.chunk, s.from = s.chunk+1, next
			p := C.ferry_blob_alloc(blob, C.int64_t(len(o.chunk)))
			if p == nil {
				s.active = false
				return fmt.Errorf("%w: cannot allocate a %d-byte state blob", engine.ErrMemory, len(o.chunk))
			}
			copy(unsafe.Slice((*byte)(p), len(o.chunk)), o.chunk)
			return nil
		})
	})
}

//export ferry_operator_restore
func ferry_operator_restore(h C.FerryHandle, keyGroup C.int32_t, data *C.ferry_cuint8, length C.int64_t, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_operator_restore", cerr, func() error {
		if length < 0 || (data == nil && length > 0) {
			return fmt.Errorf("%w: data is NULL or length %d negative", engine.ErrInvalid, length)
		}
		return with(h, func(o *operator) error {
			kg := int(keyGroup)
			if start, end := o.spec.KeyGroupRange(); kg < start || kg > end {
				return fmt.Errorf("%w: key group %d outside this operator's range [%d, %d]", engine.ErrInvalid, kg, start, end)
			}
			var blob []byte
			if length > 0 {
				blob = unsafe.Slice((*byte)(unsafe.Pointer(data)), int(length))
			}
			hd, payload, err := snapshot.Decode(blob, o.header(kg), o.payload)
			if err != nil {
				return err
			}
			next, restoring := o.restoring[kg]
			switch {
			case hd.Chunk == 0 && (restoring || o.op.HasState(kg)):
				return fmt.Errorf("%w: key group %d already holds state", engine.ErrInvalid, kg)
			case hd.Chunk > 0 && (!restoring || hd.Chunk != next):
				return fmt.Errorf("%w: state blob for key group %d: chunk %d out of sequence (expected chunk %d)", engine.ErrData, kg, hd.Chunk, next)
			}
			if err := o.op.RestoreKeyGroup(kg, payload); err != nil {
				return err
			}
			if hd.Last {
				delete(o.restoring, kg)
			} else {
				if o.restoring == nil {
					o.restoring = map[int]int{}
				}
				o.restoring[kg] = hd.Chunk + 1
			}
			return nil
		})
	})
}

//export ferry_operator_stats
func ferry_operator_stats(h C.FerryHandle, out *C.struct_FerryOperatorStats, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_operator_stats", cerr, func() error {
		if out == nil {
			return fmt.Errorf("%w: output must not be NULL", engine.ErrInvalid)
		}
		return with(h, func(o *operator) error {
			st := o.op.Stats()
			out.keys, out.state_bytes = C.int64_t(st.Keys), C.int64_t(st.StateBytes)
			return nil
		})
	})
}

//export ferry_operator_close
func ferry_operator_close(h C.FerryHandle, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_operator_close", cerr, func() error {
		obj, err := handles.get(uint64(h), kindOperator)
		if err != nil {
			return err
		}
		o := obj.(*operator)
		if !o.busy.CompareAndSwap(false, true) {
			return fmt.Errorf("%w: operator %s is in use by another thread", errState, o.label)
		}
		if _, err := handles.remove(uint64(h), kindOperator); err != nil {
			o.busy.Store(false)
			return err
		}
		o.alloc.discard()
		o.op.Close()
		return nil
	})
}
