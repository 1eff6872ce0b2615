package firstrow

import (
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/sessiontest"
	"github.com/ferrystream/ferry/session"
)

func init() { Register() }

const spec = `{"kind":"example_first_row","name":"first","inputs":[{"fields":[{"name":"k","type":"BIGINT"},{"name":"s","type":"VARCHAR"}],"keys":[0]}],` +
	`"max_parallelism":128,"params":{"state_ttl_ms":TTL}}`

var types = []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Varchar, Nullable: true}}

func specOf(ttl string) []byte { return []byte(strings.Replace(spec, "TTL", ttl, 1)) }

func process(t *testing.T, s *session.Session, now int64, rows ...[]any) {
	t.Helper()
	sessiontest.Process(t, s, types, now, rows, nil)
}

// TestFirstRowPerKey: each key's first row, in arrival order, across calls, a snapshot and a
// restore into a new operator; with TTL a key counts as new once its first row is older than it.
func TestFirstRowPerKey(t *testing.T) {
	var h sessiontest.Host
	s := h.Open(t, specOf("0"))
	process(t, s, 0, []any{int64(1), "a"}, []any{int64(2), "b"}, []any{int64(1), "c"}, []any{nil, "n"}, []any{nil, "m"})
	process(t, s, 0, []any{int64(2), "d"}, []any{int64(3), "e"})
	if want := []string{`+I[1, "a"]`, `+I[2, "b"]`, `+I[null, "n"]`, `+I[3, "e"]`}; !slices.Equal(h.Rows, want) {
		t.Fatalf("rows %v, want %v", h.Rows, want)
	}
	// Every key group's chunks, restored into a new operator: the keys stay seen.
	var after sessiontest.Host
	restored, chunks := after.Move(t, s, specOf("0"), 128)
	process(t, restored, 0, []any{int64(1), "x"}, []any{nil, "y"}, []any{int64(9), "z"}, []any{int64(3), "w"})
	if want := []string{`+I[9, "z"]`}; chunks == 0 || !slices.Equal(after.Rows, want) {
		t.Fatalf("after the restore of %d chunks: rows %v, want %v", chunks, after.Rows, want)
	}

	var ttl sessiontest.Host
	s = ttl.Open(t, specOf("100"))
	process(t, s, 1000, []any{int64(1), "a"})
	process(t, s, 1050, []any{int64(1), "b"}) // read, not written: the TTL counts from 1000
	process(t, s, 1100, []any{int64(1), "c"}) // expired at 1000 + 100
	process(t, s, 1150, []any{int64(1), "d"})
	if want := []string{`+I[1, "a"]`, `+I[1, "c"]`}; !slices.Equal(ttl.Rows, want) {
		t.Fatalf("with TTL: rows %v, want %v", ttl.Rows, want)
	}
}

func TestRefusals(t *testing.T) {
	var h sessiontest.Host
	s := h.Open(t, specOf("0"))
	b := enginetest.Batch(types, [][]any{{int64(1), "a"}}, []engine.RowKind{engine.Delete}, enginetest.Options{})
	if _, err := s.Process([]*engine.CArray{enginetest.CArray(b)}, nil, 0, nil); err == nil || !strings.Contains(err.Error(), "insert-only") {
		t.Fatalf("retraction: %v", err)
	}
	parsed, _ := engine.ParseSpec([]byte(strings.Replace(spec, "TTL", "-1", 1)))
	if _, err := engine.OpenKeyed(parsed); err == nil || !strings.Contains(err.Error(), "spec: params.state_ttl_ms: negative (-1)") {
		t.Fatalf("negative TTL: %v", err)
	}
}
