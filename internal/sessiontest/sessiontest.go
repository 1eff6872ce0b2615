// Package sessiontest drives a keyed kind through a real session in a kind's own tests: the
// host's side of the C ABI in Go, recording the changelog the session exports.
package sessiontest

import (
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/session"
)

// Host records the rows its sessions export, rendered as enginetest.Row.String.
type Host struct {
	Rows []string
}

// Open opens a session of spec exporting into h, closed when the test ends.
func (h *Host) Open(t testing.TB, spec []byte) *session.Session {
	t.Helper()
	parsed, err := engine.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(parsed, nil, nil, session.Host{Alloc: engine.HeapAllocator{},
		Export: func(_ any, b *engine.OutBatch) error {
			for _, r := range enginetest.Rows(b) {
				h.Rows = append(h.Rows, r.String())
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

// Process runs one batch of rows (kinds nil: all +I) through s at processing time nowMs and
// takes every chunk of its output.
func Process(t testing.TB, s *session.Session, types []engine.Type, nowMs int64, rows [][]any, kinds []engine.RowKind) {
	t.Helper()
	if kinds == nil {
		kinds = make([]engine.RowKind, len(rows))
	}
	b := enginetest.Batch(types, rows, kinds, enginetest.Options{Offset: 1})
	more, err := s.Process([]*engine.CArray{enginetest.CArray(b)}, nil, nowMs, nil)
	Drain(t, s, more, err)
}

// Drain takes the chunks that follow a call's first.
func Drain(t testing.TB, s *session.Session, more bool, err error) {
	t.Helper()
	for err == nil && more {
		more, err = s.Next(nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Move snapshots every key group of s (of maxParallelism) and restores the chunks into a new
// session of spec exporting into h; it returns the new session and the number of chunks.
func (h *Host) Move(t testing.TB, s *session.Session, spec []byte, maxParallelism int) (*session.Session, int) {
	t.Helper()
	r := h.Open(t, spec)
	chunks := 0
	for kg := range maxParallelism {
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
			if err := r.Restore(kg, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r, chunks
}
