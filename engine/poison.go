package engine

import (
	"fmt"
	"os"
	"runtime/debug"
	"sync/atomic"
)

// The library's poison flag. A recovered Go panic leaves state that can no longer be trusted, so
// the first one poisons the whole library: every later exported call fails (capi checks
// Poisoned) and the host restarts the process. It lives here, not in capi, so that goroutines an
// operator starts (Go) poison the library exactly as exported calls do.
var poison atomic.Pointer[string]

// Poisoned returns the message of the panic that poisoned the library, or "" while it is healthy.
func Poisoned() string {
	if p := poison.Load(); p != nil {
		return *p
	}
	return ""
}

// Poison records the panic value r recovered in where (an exported function's name, or a
// goroutine's) and returns the message for the caller's error. The first panic poisons the
// library and writes its message and the panicking stack to standard error; call Poison from the
// deferred function that recovered, so the stack is the panic's.
func Poison(where string, r any) string {
	msg := fmt.Sprintf("%s: internal error (Go panic): %v; the library is poisoned and every later call fails", where, r)
	if poison.CompareAndSwap(nil, &msg) {
		fmt.Fprintf(os.Stderr, "ferry: %s\n%s\n", msg, debug.Stack())
	}
	return msg
}

// Go runs fn on a new goroutine, the only way Ferry starts one. A panic in fn does not crash the
// host process: it is recovered and poisons the library (Poison, with name as where), and the
// goroutine ends. fn's own deferred calls run first, so a `defer wg.Done()` inside fn still
// releases a caller waiting for it, which then finds the library Poisoned.
func Go(name string, fn func()) {
	go func() {
		defer func() {
			if r := recover(); r != nil {
				Poison(name, r)
			}
		}()
		fn()
	}()
}
