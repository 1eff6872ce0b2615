package windowjoin

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/session"
)

// layoutBlobs are the chunks of a snapshot the library before layout 2 wrote
// (testdata/layout1.json): its operator's spec and every key group's chunks as
// ferry_operator_snapshot handed them out.
type layoutBlobs struct {
	Spec   string `json:"spec"`
	Chunks []struct {
		KeyGroup int    `json:"key_group"`
		Chunk    string `json:"chunk"`
	} `json:"chunks"`
}

func readLayoutBlobs(t *testing.T) layoutBlobs {
	t.Helper()
	data, err := os.ReadFile("testdata/layout1.json")
	if err != nil {
		t.Fatal(err)
	}
	var b layoutBlobs
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Chunks) < 2 {
		t.Fatalf("%d chunks", len(b.Chunks))
	}
	return b
}

// restore restores the chunks of b through a session of an operator of spec and returns each
// chunk's error; the operator must hold nothing afterwards.
func (b layoutBlobs) restore(t *testing.T, spec string) []error {
	t.Helper()
	parsed, err := engine.ParseSpec([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(parsed, nil, nil, session.Host{Alloc: engine.HeapAllocator{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var errs []error
	for _, c := range b.Chunks {
		chunk, err := hex.DecodeString(c.Chunk)
		if err != nil {
			t.Fatal(err)
		}
		errs = append(errs, s.Restore(c.KeyGroup, chunk))
	}
	if st, err := s.Stats(); err != nil || st.Keys != 0 {
		t.Fatalf("after the refused chunks: %d keys, %v", st.Keys, err)
	}
	return errs
}

// TestLayout1Refused: a snapshot of the window join's state layout 1 (its timers' positions in
// the join's own payload), written by the library before layout 2, is refused naming that layout
// and the ways out, not as the state of another spec; an operator of another spec refuses it as
// it always did.
func TestLayout1Refused(t *testing.T) {
	b := readLayoutBlobs(t)
	for _, err := range b.restore(t, b.Spec) {
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), "written by Ferry's window join state layout 1, which this library does not read (it reads layout 2)") ||
			!strings.Contains(err.Error(), "stop the job with a drained savepoint") {
			t.Fatalf("refusal %v", err)
		}
	}
	other := strings.Replace(b.Spec, `"join_type":"LEFT"`, `"join_type":"FULL"`, 1)
	if other == b.Spec {
		t.Fatal("the blobs' spec changed")
	}
	for _, err := range b.restore(t, other) {
		if !errors.Is(err, engine.ErrData) || !strings.Contains(err.Error(), "written by an operator with a different spec") {
			t.Fatalf("a blob of another spec: %v", err)
		}
	}
}
