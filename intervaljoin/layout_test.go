package intervaljoin

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/internal/oldstate"
)

// TestLayout1Refused: a snapshot of the interval join's state layout 1 (its timers in the join's
// own payload), written by the library before layout 2, is refused naming that layout and the
// way out through a savepoint in Flink's form, not as the state of another spec; an operator of
// another spec refuses it as it always did.
func TestLayout1Refused(t *testing.T) {
	b := oldstate.Read(t, "testdata/layout1.json")
	for _, err := range b.Restore(t, b.Spec) {
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), "written by Ferry's interval join state layout 1, which this library does not read (it reads layout 2)") ||
			!strings.Contains(err.Error(), "savepoint, which holds the interval join's state in Flink's form") {
			t.Fatalf("refusal %v", err)
		}
	}
	other := strings.Replace(b.Spec, `"join_type":"INNER"`, `"join_type":"LEFT"`, 1)
	if other == b.Spec {
		t.Fatal("the blobs' spec changed")
	}
	for _, err := range b.Restore(t, other) {
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), "written by an operator with a different spec") {
			t.Fatalf("a blob of another spec: %v", err)
		}
	}
}
