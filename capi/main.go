// Command capi is libferry.so: the C ABI of include/ferry.h. It only translates calls (handles,
// panic recovery and poisoning, error structs, Arrow C structs) into calls of session.Session,
// which drives the operators of the kind packages it imports. Build it with
// `go build -buildmode=c-shared` (see build.sh); the ferrytest build tag adds test support
// (testsupport.go, testhooks_ferrytest.go) that the production library leaves out.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -O2 -Wall
#include "ferry.h"
#include "cabi.h"
*/
import "C"

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"unsafe"

	"github.com/ferrystream/ferry"
	"github.com/ferrystream/ferry/engine"
)

// Version is the library version reported by ferry_version: the project version, which the root
// package reads from pom.xml.
var Version = ferry.Version

// abiVersion must equal FERRY_ABI_VERSION of include/ferry.h (checked at build time below).
const abiVersion = 13

var _ = [1]struct{}{}[abiVersion-C.FERRY_ABI_VERSION] // compile error when they disagree

var versionString = C.CString(fmt.Sprintf("ferry %s (abi %d)", Version, abiVersion))

func init() {
	if unsafe.Sizeof(engine.CArray{}) != C.sizeof_struct_ArrowArray {
		panic("engine.CArray does not mirror struct ArrowArray")
	}
	if unsafe.Sizeof(engine.CSchema{}) != C.sizeof_struct_ArrowSchema {
		panic("engine.CSchema does not mirror struct ArrowSchema")
	}
}

func main() {}

//export ferry_abi_version
func ferry_abi_version() C.int32_t { return abiVersion }

//export ferry_version
func ferry_version() *C.ferry_cchar { return versionString }

//export ferry_output_bytes_outstanding
func ferry_output_bytes_outstanding() C.int64_t { return C.ferry_outstanding_load() }

// runtimeMemory reads the figures of ferry_runtime_memory.
var runtimeMemory = []metrics.Sample{
	{Name: "/memory/classes/total:bytes"},
	{Name: "/memory/classes/heap/released:bytes"},
	{Name: "/gc/heap/live:bytes"},
	{Name: "/gc/gomemlimit:bytes"},
}
var runtimeMemoryMu sync.Mutex

//export ferry_runtime_memory
func ferry_runtime_memory(out *C.struct_FerryRuntimeMemory) {
	if out == nil {
		return
	}
	runtimeMemoryMu.Lock()
	defer runtimeMemoryMu.Unlock()
	metrics.Read(runtimeMemory)
	u := func(i int) C.int64_t { return C.int64_t(min(runtimeMemory[i].Value.Uint64(), math.MaxInt64)) }
	out.in_use_bytes = u(0) - u(1)
	out.heap_live_bytes = u(2)
	out.limit_bytes = u(3)
}

// initOptions are the JSON options of ferry_init.
type initOptions struct {
	MaxProcs         int    `json:"max_procs"`
	MemoryLimitBytes int64  `json:"memory_limit_bytes"`
	GCPercent        *int   `json:"gc_percent"`
	CrashOutput      string `json:"crash_output"`
	TestHooks        bool   `json:"test_hooks"`
}

var crashMu sync.Mutex
var crashFile *os.File

//export ferry_init
func ferry_init(optionsJSON *C.ferry_cchar, cerr *C.struct_FerryError) C.int32_t {
	return call("ferry_init", cerr, func() error {
		var o initOptions
		if optionsJSON != nil {
			if err := engine.StrictDecode([]byte(C.GoString(optionsJSON)), &o); err != nil {
				return fmt.Errorf("%w: options: %v", engine.ErrInvalid, err)
			}
		}
		if o.MaxProcs < 0 || o.MemoryLimitBytes < 0 {
			return fmt.Errorf("%w: options: max_procs and memory_limit_bytes must not be negative", engine.ErrInvalid)
		}
		if err := setTestHooks(o.TestHooks); err != nil {
			return err
		}
		if o.CrashOutput != "" {
			f, err := os.OpenFile(o.CrashOutput, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return fmt.Errorf("%w: crash_output: %v", engine.ErrInvalid, err)
			}
			if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
				f.Close()
				return fmt.Errorf("%w: crash_output: %v", engine.ErrInvalid, err)
			}
			crashMu.Lock()
			if crashFile != nil {
				crashFile.Close()
			}
			crashFile = f
			crashMu.Unlock()
		}
		debug.SetTraceback("all")
		if o.MaxProcs > 0 {
			runtime.GOMAXPROCS(o.MaxProcs)
		}
		if o.MemoryLimitBytes > 0 {
			debug.SetMemoryLimit(o.MemoryLimitBytes)
		}
		if o.GCPercent != nil {
			debug.SetGCPercent(*o.GCPercent)
		}
		return nil
	})
}
