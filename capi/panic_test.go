//go:build ferrytest

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
)

// A recovered panic poisons the operator it happened in, and writes its stack to standard error:
// each panic scenario runs in a child process whose output the test reads (the test binary
// re-executes itself with only TestPanicChild selected and panicChildEnv naming the call that
// panics).
const panicChildEnv = "FERRY_TEST_PANIC_CHILD"

func TestPanicPoisonsTheOperator(t *testing.T) {
	if os.Getenv(panicChildEnv) != "" {
		t.Skip("inside a panic child")
	}
	for _, call := range []string{"process", "snapshot", "restore"} {
		t.Run(call, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestPanicChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), panicChildEnv+"="+call)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child process failed: %v\n%s", err, out)
			}
			s := string(out)
			for _, want := range []string{
				"--- PASS: TestPanicChild",
				"child: " + call + " panicked: FERRY_EINTERNAL",
				"child: later calls on it: FERRY_EPOISONED",
				"child: every other call works",
				// The library logs the panic with its stack to stderr.
				"ferry: ferry_operator_" + call + ": internal error (Go panic)",
			} {
				if !strings.Contains(s, want) {
					t.Errorf("child output lacks %q:\n%s", want, s)
				}
			}
		})
	}
}

// TestPanicChild is the child side of TestPanicPoisonsTheOperator; it skips in a normal run.
func TestPanicChild(t *testing.T) {
	call := os.Getenv(panicChildEnv)
	if call == "" {
		t.Skip("runs only as a child process of TestPanicPoisonsTheOperator")
	}
	initOK(t, `{"test_hooks": true}`)
	good := bidSpec(true)
	hooked := good
	hooked.Test = &testHook{Panic: call}

	// A second, valid operator opened before the panic, with state and a snapshot blob.
	other := openOp(t, good)
	rec := buildRecord(other.in, [][]any{{int64(1), int32(2)}, {int64(2), int32(3)}}, []int8{0, 0})
	defer rec.Release()
	other.process(rec, 0)
	var blobKG int = -1
	var blob []byte
	for kg := range 128 {
		if b, r := snapshotKG(t, other.h, kg); r.code == codeOK && b != nil {
			blobKG, blob = kg, b
			break
		}
	}
	if blob == nil {
		t.Fatal("no state to snapshot")
	}

	victim := openOp(t, hooked)
	// The hooked operator's fingerprint equals the other's (test hooks are not state layout),
	// so the blob passes validation and reaches RestoreKeyGroup.
	var r result
	switch call {
	case "process":
		_, r = processRaw(t, victim.h, exportInput(rec), 0) // checks the input was released
	case "snapshot":
		var b []byte
		b, r = snapshotKG(t, victim.h, blobKG)
		if b != nil {
			t.Errorf("a panicking snapshot returned a blob")
		}
	case "restore":
		r = restoreKG(t, victim.h, blobKG, blob)
	}
	wantCode(t, call, r, codeInternal, "panic", "poisoned")
	fmt.Printf("child: %s panicked: FERRY_EINTERNAL: %s\n", call, r.msg)

	// Every later call on the victim fails with FERRY_EPOISONED and still consumes its inputs.
	poisoned := func(what string, r result) {
		t.Helper()
		wantCode(t, what, r, codePoisoned, "operator poisoned by an earlier panic", "(Go panic)")
	}
	var e cError
	_, r = processRaw(t, victim.h, exportInput(rec), 0) // input still released
	poisoned("process", r)
	_, r = snapshotKG(t, victim.h, blobKG)
	poisoned("snapshot", r)
	poisoned("restore", restoreKG(t, victim.h, (blobKG+1)%128, blob))
	s := newCSchema()
	poisoned("output_schema", finish(t, "ferry_operator_output_schema", int32(ferry_operator_output_schema(victim.h, s, &e)), &e))
	if s.release != nil {
		t.Errorf("output schema filled after poisoning")
	}
	cFree(unsafe.Pointer(s))
	out := newCArray()
	poisoned("advance", finish(t, "ferry_operator_advance", int32(advanceCall(victim.h, 0, 0, out, &e)), &e))
	poisoned("flush", finish(t, "ferry_operator_flush", int32(flushCall(victim.h, 0, out, &e)), &e))
	cFree(unsafe.Pointer(out))
	fmt.Println("child: later calls on it: FERRY_EPOISONED")

	// Close frees it; every other operator, a new one and ferry_init work.
	if r := finish(t, "ferry_operator_close", int32(ferry_operator_close(victim.h, &e)), &e); r.code != codeOK {
		t.Errorf("close of the poisoned operator: %v", r)
	}
	victim.closed = true
	if _, r := processRaw(t, victim.h, exportInput(rec), 0); r.code != codeInval {
		t.Errorf("process on the closed poisoned handle: %v, want FERRY_EINVAL", r)
	}
	other.process(rec, 0)
	if b, r := snapshotKG(t, other.h, blobKG); r.code != codeOK || b == nil {
		t.Errorf("snapshot of the healthy operator after the panic: %v", r)
	}
	fresh := openOp(t, good)
	if r := restoreKG(t, fresh.h, blobKG, blob); r.code != codeOK {
		t.Errorf("restore into a new operator after the panic: %v", r)
	}
	fresh.process(rec, 0)
	fresh.close()
	initOK(t, `{}`)
	other.close()
	fmt.Println("child: every other call works")

	// The library itself is healthy.
	if p := engine.Poisoned(); p != "" {
		t.Errorf("an operator's panic poisoned the library: %s", p)
	}
	if n := outstanding(); n != 0 {
		t.Errorf("ferry_output_bytes_outstanding after the poisoned operator was closed = %d", n)
	}
}

// hugeKeyBatch is one row whose two VARCHAR key columns share one data buffer of l bytes (C
// memory from calloc: untouched pages cost nothing). The encoded key row is then 2*l bytes.
func hugeKeyBatch(l int) (*cArray, func()) {
	var allocs []unsafe.Pointer
	alloc := func(n int) unsafe.Pointer {
		p := cAlloc(n)
		allocs = append(allocs, p)
		return p
	}
	data := alloc(l)
	offs := alloc(8)
	unsafe.Slice((*int32)(offs), 2)[1] = int32(l)
	col := func(bufs ...unsafe.Pointer) *cArray {
		a := (*cArray)(alloc(sizeofArray))
		bp := alloc(8 * len(bufs))
		copy(unsafe.Slice((*unsafe.Pointer)(bp), len(bufs)), bufs)
		v := view(a)
		v.Length, v.NBuffers, v.Buffers = 1, int64(len(bufs)), bp
		trackArray(a, (*cTracker)(alloc(int(unsafe.Sizeof(cTracker{})))), nil, 0)
		return a
	}
	a := col(nil, offs, data)
	b := col(nil, offs, data) // the same buffers: legal for a producer
	kinds := col(nil, alloc(8))
	root := (*cArray)(alloc(sizeofArray))
	kids := []*cArray{a, b, kinds}
	kp := (**cArray)(alloc(8 * len(kids)))
	copy(unsafe.Slice(kp, len(kids)), kids)
	rv := view(root)
	rv.Length, rv.NBuffers, rv.Buffers, rv.NChildren, rv.Children = 1, 1, alloc(8), int64(len(kids)), unsafe.Pointer(kp)
	trackArray(root, (*cTracker)(alloc(int(unsafe.Sizeof(cTracker{})))), kp, len(kids))
	return root, func() {
		for _, p := range allocs {
			cFree(p)
		}
	}
}

// TestHugeKeyBatch sends a valid batch whose encoded grouping key exceeds 2^31 bytes. Ferry
// must refuse it with a status, not panic (which would poison the library), so it runs in a
// child process.
func TestHugeKeyBatch(t *testing.T) {
	if os.Getenv(panicChildEnv) != "" {
		t.Skip("inside a child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHugeKeyChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), panicChildEnv+"=hugekey")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process failed: %v\n%s", err, out)
	}
	s := string(out)
	switch {
	case strings.Contains(s, "hugekey: code 2 "), strings.Contains(s, "hugekey: code 4 "), strings.Contains(s, "hugekey: code 5 "):
	default:
		t.Fatalf("unexpected child output:\n%s", s)
	}
}

func firstLine(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, prefix) {
			return l
		}
	}
	return ""
}

func TestHugeKeyChild(t *testing.T) {
	if os.Getenv(panicChildEnv) != "hugekey" {
		t.Skip("runs only as a child process of TestHugeKeyBatch")
	}
	s := spec{flatSpec{Kind: "group_aggregate", Input: fields("a", "VARCHAR", "b", "VARCHAR"), Keys: []int{0, 1},
		Aggs: []agg.AggCall{{Func: "COUNT"}}, MaxParallelism: 128}}
	h, r := open(t, s.json(), nil)
	wantCode(t, "open", r, codeOK)
	in, free := hugeKeyBatch(1100 << 20)
	defer free()
	out := newCArray()
	defer cFree(unsafe.Pointer(out))
	var e cError
	r = finish(t, "ferry_operator_process", int32(processCall(h, in, 0, out, &e)), &e)
	fmt.Printf("hugekey: code %d %s\n", r.code, r.msg)
	if view(in).Release != nil {
		t.Errorf("input not released")
	}
	if out.release != nil {
		releaseArray(out)
	}
}
