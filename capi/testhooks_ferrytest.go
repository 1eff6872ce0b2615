//go:build ferrytest

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/examples/kind/firstrow"
)

// Test support of a ferrytest build: panic injection at the C ABI boundary, enabled by
// ferry_init {"test_hooks": true} and chosen per operator by the spec's "test" field, and the
// test operator kinds: enginetest.FanoutKind, whose output comes in many chunks, and the example
// kind of docs/abi.md's walkthrough (examples/kind/firstrow).

func init() {
	engine.RegisterKeyed(enginetest.FanoutKind, enginetest.OpenFanout)
	firstrow.Register() // the example kind of docs/abi.md's walkthrough
}

// hooksEnabled is ferry_init's "test_hooks".
var hooksEnabled atomic.Bool

func setTestHooks(on bool) error {
	hooksEnabled.Store(on)
	return nil
}

// testHooks are an operator's fault injections: the spec's {"test": {"panic": call}}, with
// "once": true only the first time any operator of the process reaches call (a job that
// restarts after the panic then runs through).
type testHooks struct {
	panicIn string // "process", "snapshot" or "restore"
	once    bool
}

// oncePanicked is whether a "once" hook fired in this process.
var oncePanicked atomic.Bool

func parseTestHooks(raw json.RawMessage) (testHooks, error) {
	if raw == nil {
		return testHooks{}, nil
	}
	if !hooksEnabled.Load() {
		return testHooks{}, fmt.Errorf("%w: spec: test: test hooks are disabled (ferry_init option test_hooks)", engine.ErrInvalid)
	}
	var h struct {
		Panic string `json:"panic"`
		Once  bool   `json:"once"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return testHooks{}, fmt.Errorf("%w: spec: test: %v", engine.ErrInvalid, err)
	}
	switch h.Panic {
	case "process", "snapshot", "restore":
	default:
		return testHooks{}, fmt.Errorf("%w: spec: test.panic: unknown call %q", engine.ErrInvalid, h.Panic)
	}
	return testHooks{panicIn: h.Panic, once: h.Once}, nil
}

// inject panics when the operator's hook names call, with a different runtime fault per call:
// each must be recovered and poison the library.
func (h testHooks) inject(call string) {
	if h.panicIn != call || (h.once && !oncePanicked.CompareAndSwap(false, true)) {
		return
	}
	switch call {
	case "process":
		var m map[int]int
		m[0] = 1 // assignment to entry in nil map
	case "snapshot":
		var p *operator
		_ = p.s // nil dereference: a SIGSEGV turned into a panic
	case "restore":
		var s []int
		_ = s[len(call)] // index out of range
	}
}
