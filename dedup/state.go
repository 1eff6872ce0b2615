package dedup

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// Per-key flags of rowState.
const (
	// storedAsUpdate: the stored row was last emitted as +U and the state keeps the row object
	// (Params.StoredRowKeepsKind), so Flink's equaliser sees it as an UPDATE_AFTER row.
	storedAsUpdate uint8 = 1 << iota
	// emitted: the insert-only keep-first row of the key went out (Flink's
	// already-emitted-state-boolean); the key then holds no row.
	emitted
)

// rowState is the per-key state of a deduplicate operator that keeps rows (an engine.PerKey):
// the key's stored row (Flink's deduplicate-state, or for the insert-only keep-first the row
// waiting for its timer, waiting-to-emit-on-timer), nil for none, and its flags. A stored row is
// owned by the state (rows are copied in) and encoded with layout.
type rowState struct {
	layout *joincore.RowLayout
	rows   [][]byte
	flags  []uint8
	bytes  int64 // the capacity of the stored rows
}

// Grow implements engine.PerKey.
func (s *rowState) Grow(n int) {
	for len(s.rows) < n {
		s.rows = append(s.rows, nil)
		s.flags = append(s.flags, 0)
	}
}

// Reset implements engine.PerKey.
func (s *rowState) Reset(id int32) {
	s.bytes -= int64(cap(s.rows[id]))
	s.rows[id], s.flags[id] = nil, 0
}

// set stores a copy of row (encoded with layout) for key id, reusing the key's memory when it
// fits.
func (s *rowState) set(id int32, row []byte) {
	old := s.rows[id]
	if cap(old) >= len(row) {
		s.rows[id] = append(old[:0], row...)
		return
	}
	s.bytes += int64(len(row) - cap(old))
	s.rows[id] = append([]byte(nil), row...)
}

// clearRow drops key id's row, keeping its memory for the next.
func (s *rowState) clearRow(id int32) {
	if s.rows[id] != nil {
		s.rows[id] = s.rows[id][:0:cap(s.rows[id])]
	}
}

// row returns key id's stored row, nil for none.
func (s *rowState) row(id int32) []byte {
	if r := s.rows[id]; len(r) > 0 {
		return r
	}
	return nil
}

// Bytes implements engine.PerKey.
func (s *rowState) Bytes() int64 {
	return s.bytes + int64(cap(s.rows))*24 + int64(cap(s.flags))
}

// Save implements engine.PerKey: the flags byte, then the row as a uvarint length + 1 (0: none)
// and its bytes.
func (s *rowState) Save(dst []byte, id int32) []byte {
	dst = append(dst, s.flags[id])
	r := s.row(id)
	if r == nil {
		return binary.AppendUvarint(dst, 0)
	}
	dst = binary.AppendUvarint(dst, uint64(len(r))+1)
	return append(dst, r...)
}

// Load implements engine.PerKey.
func (s *rowState) Load(src []byte, id int32) ([]byte, error) {
	if len(src) < 1 {
		return nil, fmt.Errorf("%w: deduplicate state truncated", engine.ErrData)
	}
	flags := src[0]
	if flags&^(storedAsUpdate|emitted) != 0 {
		return nil, fmt.Errorf("%w: deduplicate state: unknown flags %#x", engine.ErrData, flags)
	}
	n, k := binary.Uvarint(src[1:])
	if k <= 0 || (n > 0 && n-1 > uint64(len(src)-1-k)) {
		return nil, fmt.Errorf("%w: deduplicate state: row length out of range", engine.ErrData)
	}
	src = src[1+k:]
	s.flags[id] = flags
	if n == 0 {
		return src, nil
	}
	row := src[:n-1]
	if err := s.layout.Check(row); err != nil {
		return nil, err
	}
	s.set(id, row)
	return src[n-1:], nil
}
