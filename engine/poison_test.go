package engine

import (
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestGoRecoversAndPoisons(t *testing.T) {
	t.Cleanup(func() { poison.Store(nil) })
	if Poisoned() != "" {
		t.Fatal("poisoned before the test")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	ran := false
	Go("lookup worker", func() {
		defer wg.Done()
		ran = true
		var m map[int]int
		m[0] = 1 // a runtime panic
	})
	wg.Wait() // fn's deferred Done ran although fn panicked
	if !ran {
		t.Fatal("fn did not run")
	}
	// The recover runs after fn's defers; wait until it poisoned the library.
	for Poisoned() == "" {
		runtime.Gosched()
	}
	msg := Poisoned()
	for _, want := range []string{"lookup worker: internal error (Go panic)", "assignment to entry in nil map", "poisoned"} {
		if !strings.Contains(msg, want) {
			t.Errorf("poison message %q does not mention %q", msg, want)
		}
	}
	// A later panic keeps the first message. (Recovered here, not on a goroutine of Go: nothing
	// observes the end of that goroutine's recover, which could otherwise poison the library
	// after this test's cleanup, in the next test.)
	if got := Poison("second", "x"); !strings.Contains(got, "second") || Poisoned() != msg {
		t.Errorf("later panics must not replace the first message: %q, %q", got, Poisoned())
	}
}

func TestGoWithoutPanicDoesNotPoison(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(1)
	Go("quiet", func() { wg.Done() })
	wg.Wait()
	if Poisoned() != "" {
		t.Fatal("a goroutine that returned normally poisoned the library")
	}
}
