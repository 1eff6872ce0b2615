package main

/*
#include "ferry.h"
#include "cabi.h"
*/
import "C"

import (
	"errors"
	"strings"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// call runs one export: it refuses to run when the library is poisoned, converts a panic into
// FERRY_EINTERNAL and poisons the library (engine.Poison), and maps a returned error to its
// status code and a "function: detail" message in *cerr.
func call(name string, cerr *C.struct_FerryError, fn func() error) C.int32_t {
	return run(name, cerr, nil, fn)
}

// opCall runs one export on the operator behind handle h: as call, but a panic poisons that
// operator alone (its state can no longer be trusted; every other operator and the library stay
// usable), and a poisoned operator refuses every later call but ferry_operator_close with
// FERRY_EPOISONED.
func opCall(name string, h C.FerryHandle, cerr *C.struct_FerryError, fn func(o *operator) error) C.int32_t {
	var o *operator
	return run(name, cerr, &o, func() error {
		var err error
		if o, err = lookup(h); err != nil {
			return err
		}
		if p := o.poisoned.Load(); p != nil {
			return poisonedError(*p)
		}
		return fn(o)
	})
}

// poisonedError is the refusal of a call on a poisoned operator: the message of its panic.
type poisonedError string

func (e poisonedError) Error() string {
	return "operator poisoned by an earlier panic: " + string(e)
}

// run is call and opCall: a panic poisons *op when the call got that far, else the library.
func run(name string, cerr *C.struct_FerryError, op **operator, fn func() error) (code C.int32_t) {
	defer func() {
		if r := recover(); r != nil {
			if op != nil && *op != nil {
				code = setError(cerr, C.FERRY_EINTERNAL, (*op).poison(name, r))
			} else {
				code = setError(cerr, C.FERRY_EINTERNAL, engine.Poison(name, r))
			}
		}
	}()
	if p := engine.Poisoned(); p != "" {
		return setError(cerr, C.FERRY_EPOISONED, name+": library poisoned by an earlier panic: "+p)
	}
	err := fn()
	if err == nil {
		return C.FERRY_OK
	}
	if p, ok := err.(poisonedError); ok {
		return setError(cerr, C.FERRY_EPOISONED, name+": "+p.Error())
	}
	var q *engine.QueryError
	if errors.As(err, &q) { // Flink's message alone: the host throws it as Flink does
		return setError(cerr, C.FERRY_EQUERY, q.Msg)
	}
	return setError(cerr, codeOf(err), name+": "+err.Error())
}

func codeOf(err error) C.int32_t {
	switch {
	case errors.Is(err, engine.ErrInvalid):
		return C.FERRY_EINVAL
	case errors.Is(err, engine.ErrData):
		return C.FERRY_EDATA
	case errors.Is(err, engine.ErrUnsupported):
		return C.FERRY_EUNSUPPORTED
	case errors.Is(err, engine.ErrMemory):
		return C.FERRY_ENOMEM
	case errors.Is(err, engine.ErrState):
		return C.FERRY_ESTATE
	case errors.Is(err, engine.ErrExternal):
		return C.FERRY_EEXTERNAL
	}
	return C.FERRY_EINTERNAL
}

func setError(cerr *C.struct_FerryError, code C.int32_t, msg string) C.int32_t {
	if cerr != nil {
		msg = strings.ToValidUTF8(msg, "?")
		C.ferry_error_set(cerr, code, (*C.char)(unsafe.Pointer(unsafe.StringData(msg))), C.int64_t(len(msg)))
	}
	return code
}
