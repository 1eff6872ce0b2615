package firstrow

import (
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/session"
)

func init() { Register() }

const spec = `{"kind":"example_first_row","name":"first","inputs":[{"fields":[{"name":"k","type":"BIGINT"},{"name":"s","type":"VARCHAR"}],"keys":[0]}],` +
	`"max_parallelism":128,"params":{"state_ttl_ms":TTL}}`

var types = []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Varchar, Nullable: true}}

// host records the rows a session exports and keeps its snapshot chunks.
type host struct{ rows []string }

func (h *host) session(t *testing.T, ttl string) *session.Session {
	t.Helper()
	parsed, err := engine.ParseSpec([]byte(strings.Replace(spec, "TTL", ttl, 1)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(parsed, nil, nil, session.Host{Alloc: engine.HeapAllocator{},
		Export: func(_ any, b *engine.OutBatch) error {
			for _, r := range enginetest.Rows(b) {
				h.rows = append(h.rows, r.String())
			}
			return nil
		},
		Blob: func(dst any, chunk []byte) error { *dst.(*[]byte) = append([]byte(nil), chunk...); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func process(t *testing.T, s *session.Session, now int64, rows ...[]any) {
	t.Helper()
	b := enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{Offset: 2})
	if _, err := s.Process([]*engine.CArray{enginetest.CArray(b)}, nil, now, nil); err != nil {
		t.Fatal(err)
	}
}

// TestFirstRowPerKey: each key's first row, in arrival order, across calls, a snapshot and a
// restore into a new operator; with TTL a key counts as new once its first row is older than it.
func TestFirstRowPerKey(t *testing.T) {
	var h host
	s := h.session(t, "0")
	process(t, s, 0, []any{int64(1), "a"}, []any{int64(2), "b"}, []any{int64(1), "c"}, []any{nil, "n"}, []any{nil, "m"})
	process(t, s, 0, []any{int64(2), "d"}, []any{int64(3), "e"})
	if want := []string{`+I[1, "a"]`, `+I[2, "b"]`, `+I[null, "n"]`, `+I[3, "e"]`}; !slices.Equal(h.rows, want) {
		t.Fatalf("rows %v, want %v", h.rows, want)
	}
	// Every key group's chunks, restored into a new operator: the keys stay seen.
	var after host
	restored := after.session(t, "0")
	chunks := 0
	for kg := range 128 {
		for {
			var c []byte
			ok, err := s.Snapshot(kg, &c)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			chunks++
			if err := restored.Restore(kg, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	process(t, restored, 0, []any{int64(1), "x"}, []any{nil, "y"}, []any{int64(9), "z"}, []any{int64(3), "w"})
	if want := []string{`+I[9, "z"]`}; chunks == 0 || !slices.Equal(after.rows, want) {
		t.Fatalf("after the restore of %d chunks: rows %v, want %v", chunks, after.rows, want)
	}

	var ttl host
	s = ttl.session(t, "100")
	process(t, s, 1000, []any{int64(1), "a"})
	process(t, s, 1050, []any{int64(1), "b"}) // read, not written: the TTL counts from 1000
	process(t, s, 1100, []any{int64(1), "c"}) // expired at 1000 + 100
	process(t, s, 1150, []any{int64(1), "d"})
	if want := []string{`+I[1, "a"]`, `+I[1, "c"]`}; !slices.Equal(ttl.rows, want) {
		t.Fatalf("with TTL: rows %v, want %v", ttl.rows, want)
	}
}

func TestRefusals(t *testing.T) {
	var h host
	s := h.session(t, "0")
	b := enginetest.Batch(types, [][]any{{int64(1), "a"}}, []engine.RowKind{engine.Delete}, enginetest.Options{})
	if _, err := s.Process([]*engine.CArray{enginetest.CArray(b)}, nil, 0, nil); err == nil || !strings.Contains(err.Error(), "insert-only") {
		t.Fatalf("retraction: %v", err)
	}
	parsed, _ := engine.ParseSpec([]byte(strings.Replace(spec, "TTL", "-1", 1)))
	if _, err := engine.OpenKeyed(parsed); err == nil || !strings.Contains(err.Error(), "spec: params.state_ttl_ms: negative (-1)") {
		t.Fatalf("negative TTL: %v", err)
	}
}
