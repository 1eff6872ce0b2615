// Package oldstate is a test helper: the chunks of a snapshot an earlier library wrote
// (testdata/layout1.json of a kind's package), restored through a session of today's library, so
// a kind's test can check how it refuses them.
package oldstate

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/session"
)

// Blobs are an operator's spec and every key group's chunks as ferry_operator_snapshot handed
// them out.
type Blobs struct {
	Spec   string `json:"spec"`
	Chunks []struct {
		KeyGroup int    `json:"key_group"`
		Chunk    string `json:"chunk"`
	} `json:"chunks"`
}

// Read reads the Blobs of path, which must hold chunks of at least two key groups.
func Read(t *testing.T, path string) Blobs {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b Blobs
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Chunks) < 2 {
		t.Fatalf("%s: %d chunks", path, len(b.Chunks))
	}
	return b
}

// Restore restores the chunks of b through a session of an operator of spec and returns each
// chunk's error; the operator must hold no key afterwards.
func (b Blobs) Restore(t *testing.T, spec string) []error {
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
