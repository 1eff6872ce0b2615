package topn

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// group is the rows of one sort key in a key's buffer, in arrival order: an entry of Flink's
// TopNBuffer (TreeMap<sort key, List<row>>) and of its MapState data-state-with-append.
type group struct {
	sortKey []byte   // sortKeyEncoder's form
	rows    [][]byte // encoded with the operator's layout; each its own allocation, never modified
}

// buffer is one key's TopNBuffer: its groups ascending by sort key, and the rows in all of them
// (Flink's currentTopNum). FastTop1 keeps its one row as a buffer of one group of one row.
type buffer struct {
	groups []group
	n      int
}

// find returns the index of the group of sortKey, or where it would go, and whether it is there.
func (b *buffer) find(sortKey []byte) (int, bool) {
	return slices.BinarySearchFunc(b.groups, sortKey, func(g group, k []byte) int { return bytes.Compare(g.sortKey, k) })
}

// last returns the buffer's last (worst) group; the buffer is not empty.
func (b *buffer) last() *group { return &b.groups[len(b.groups)-1] }

// bufferState is the per-key state of the Top-N functions that keep rows (an engine.PerKey): a
// buffer per key id, and for AppendOnlyFirstN a counter instead (Flink's counterState).
type bufferState struct {
	layout  *joincore.RowLayout
	sortKey *sortKeyEncoder
	bufs    []buffer
	counts  []int32 // AppendOnlyFirstN only; nil otherwise
	bytes   int64   // the rows' and sort keys' bytes and their slices' headers
}

// rowOverhead is what a stored row costs besides its bytes: its slice header.
const rowOverhead = 24

// groupOverhead is what a group costs besides its rows: its header and its sort key's slice.
const groupOverhead = 48

// Grow implements engine.PerKey.
func (s *bufferState) Grow(n int) {
	for len(s.bufs) < n {
		s.bufs = append(s.bufs, buffer{})
		if s.counts != nil {
			s.counts = append(s.counts, 0)
		}
	}
}

// Reset implements engine.PerKey.
func (s *bufferState) Reset(id int32) {
	for i := range s.bufs[id].groups {
		s.bytes -= s.groupBytes(&s.bufs[id].groups[i])
	}
	s.bufs[id] = buffer{}
	if s.counts != nil {
		s.counts[id] = 0
	}
}

func (s *bufferState) groupBytes(g *group) int64 {
	n := int64(groupOverhead + len(g.sortKey))
	for _, r := range g.rows {
		n += int64(rowOverhead + len(r))
	}
	return n
}

// put appends a copy of row, of sort key sortKey, to key id's buffer (TopNBuffer.put) and
// returns the copy.
func (s *bufferState) put(id int32, sortKey, row []byte) []byte {
	b := &s.bufs[id]
	i, ok := b.find(sortKey)
	if !ok {
		b.groups = slices.Insert(b.groups, i, group{sortKey: bytes.Clone(sortKey)})
		s.bytes += int64(groupOverhead + len(sortKey))
	}
	g := &b.groups[i]
	stored := bytes.Clone(row)
	g.rows = append(g.rows, stored)
	s.bytes += int64(rowOverhead + len(row))
	b.n++
	return stored
}

// dropGroupsFrom removes the groups from index i on of key id's buffer.
func (s *bufferState) dropGroupsFrom(id int32, i int) {
	b := &s.bufs[id]
	for j := i; j < len(b.groups); j++ {
		s.bytes -= s.groupBytes(&b.groups[j])
		b.n -= len(b.groups[j].rows)
	}
	clear(b.groups[i:])
	b.groups = b.groups[:i]
}

// dropLast removes the last row of key id's buffer (TopNBuffer.removeLast) and returns it.
func (s *bufferState) dropLast(id int32) []byte {
	b := &s.bufs[id]
	g := b.last()
	row := g.rows[len(g.rows)-1]
	if len(g.rows) == 1 {
		s.dropGroupsFrom(id, len(b.groups)-1)
		return row
	}
	g.rows[len(g.rows)-1] = nil
	g.rows = g.rows[:len(g.rows)-1]
	s.bytes -= int64(rowOverhead + len(row))
	b.n--
	return row
}

// Bytes implements engine.PerKey.
func (s *bufferState) Bytes() int64 {
	return s.bytes + int64(cap(s.bufs))*32 + int64(cap(s.counts))*4
}

// Save implements engine.PerKey: for AppendOnlyFirstN the counter as a uvarint; otherwise the
// number of rows as a uvarint, then each row in buffer order as a uvarint length and its bytes
// (the sort keys follow from the rows).
func (s *bufferState) Save(dst []byte, id int32) []byte {
	if s.counts != nil {
		return binary.AppendUvarint(dst, uint64(s.counts[id]))
	}
	b := &s.bufs[id]
	dst = binary.AppendUvarint(dst, uint64(b.n))
	for _, g := range b.groups {
		for _, r := range g.rows {
			dst = binary.AppendUvarint(dst, uint64(len(r)))
			dst = append(dst, r...)
		}
	}
	return dst
}

// errTruncated is the error of a payload that ends early.
var errTruncated = fmt.Errorf("%w: top_n state truncated", engine.ErrData)

// Load implements engine.PerKey. The rows must come in buffer order, as Save writes them.
func (s *bufferState) Load(src []byte, id int32) ([]byte, error) {
	n, src, err := joincore.Uvarint(src, errTruncated)
	if err != nil {
		return nil, err
	}
	if s.counts != nil {
		if n == 0 || n > 1<<31-1 {
			return nil, fmt.Errorf("%w: top_n state: counter %d out of range", engine.ErrData, n)
		}
		s.counts[id] = int32(n)
		return src, nil
	}
	if n == 0 || n > uint64(len(src)) {
		return nil, fmt.Errorf("%w: top_n state: %d rows in %d bytes", engine.ErrData, n, len(src))
	}
	var key, prev []byte
	for range n {
		var size uint64
		if size, src, err = joincore.Uvarint(src, errTruncated); err != nil {
			return nil, err
		}
		if size > uint64(len(src)) {
			return nil, errTruncated
		}
		row := src[:size]
		src = src[size:]
		if err := s.layout.Check(row); err != nil {
			return nil, err
		}
		key = s.sortKey.encode(key[:0], row)
		if prev != nil && bytes.Compare(prev, key) > 0 {
			return nil, fmt.Errorf("%w: top_n state: rows out of sort order", engine.ErrData)
		}
		prev = append(prev[:0], key...)
		s.put(id, key, row)
	}
	return src, nil
}
