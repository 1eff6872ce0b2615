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
// TopNBuffer (TreeMap<sort key, List<row>>) and of its MapState data-state-with-append. For
// RetractableTopN it is the entries of one sort key in its two states, which only agree while no
// retraction misses: count is the sorted-map's count (0: no entry), rows the data-state's list
// (empty: no entry); the group exists while either does.
type group struct {
	prefix  uint64   // keyPrefix(sortKey): most comparisons end here, without reading sortKey
	sortKey []byte   // sortKeyEncoder's form
	rows    [][]byte // encoded with the operator's layout; each its own allocation, never modified
	count   int64    // RetractableTopN only
	rowKeys [][]byte // UpdatableTopN only: per row its row key, in sortKeyEncoder's form
}

// buffer is one key's TopNBuffer: its groups ascending by sort key, and the rows in all of them
// (Flink's currentTopNum). FastTop1 keeps its one row as a buffer of one group of one row.
type buffer struct {
	groups []group
	n      int
}

// keyPrefix is the first 8 bytes of a sort key, big-endian, zero-padded: two keys whose prefixes
// differ order as their prefixes do.
func keyPrefix(k []byte) uint64 {
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// compareKey orders g's sort key against k, of prefix p, as bytes.Compare does.
func (g *group) compareKey(k []byte, p uint64) int {
	switch {
	case g.prefix < p:
		return -1
	case g.prefix > p:
		return 1
	}
	return bytes.Compare(g.sortKey, k)
}

// find returns the index of the group of sortKey, or where it would go, and whether it is there.
func (b *buffer) find(sortKey []byte) (int, bool) {
	p := keyPrefix(sortKey)
	lo, hi := 0, len(b.groups)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c := b.groups[m].compareKey(sortKey, p)
		if c == 0 {
			return m, true
		}
		if c < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, false
}

// admits is TopNBuffer.checkSortKeyInBufferRange with the top-N size n: whether a row of sort key
// sk enters the buffer (it is empty, sk is better than its worst, or it holds fewer than n rows).
func (b *buffer) admits(sk []byte, n int64) bool {
	return b.n == 0 || b.last().compareKey(sk, keyPrefix(sk)) > 0 || int64(b.n) < n
}

// last returns the buffer's last (worst) group; the buffer is not empty.
func (b *buffer) last() *group { return &b.groups[len(b.groups)-1] }

// bufferState is the per-key state of the Top-N functions that keep rows (an engine.PerKey): a
// buffer per key id, and for AppendOnlyFirstN a counter instead (Flink's counterState).
type bufferState struct {
	layout  *joincore.RowLayout
	sortKey *sortKeyEncoder
	bufs    []buffer
	rowKey  *sortKeyEncoder // UpdatableTopN only: its row keys' encoder (ascending fields); nil otherwise
	counts  []int32         // AppendOnlyFirstN only; nil otherwise
	retract bool            // RetractableTopN: groups carry counts, and snapshots their sort keys
	bytes   int64           // the rows' and sort keys' bytes and their slices' headers
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
	for _, k := range g.rowKeys {
		n += int64(rowOverhead + len(k))
	}
	return n
}

// put appends a copy of row, of sort key sortKey, to key id's buffer (TopNBuffer.put) and
// returns the copy.
func (s *bufferState) put(id int32, sortKey, row []byte) []byte {
	return s.putAt(id, s.group(id, sortKey), row)
}

// putAt appends a copy of row to group gi of key id's buffer and returns the copy.
func (s *bufferState) putAt(id int32, gi int, row []byte) []byte {
	b := &s.bufs[id]
	g := &b.groups[gi]
	stored := bytes.Clone(row)
	g.rows = append(g.rows, stored)
	s.bytes += int64(rowOverhead + len(row))
	if s.rowKey != nil {
		k := s.rowKey.encode(nil, stored)
		g.rowKeys = append(g.rowKeys, k)
		s.bytes += int64(rowOverhead + len(k))
	}
	b.n++
	return stored
}

// replace stores a copy of row in place of row j of group gi of key id's buffer (of the same sort
// key and row key) and returns the copy.
func (s *bufferState) replace(id int32, gi, j int, row []byte) []byte {
	g := &s.bufs[id].groups[gi]
	s.bytes += int64(len(row) - len(g.rows[j]))
	g.rows[j] = bytes.Clone(row)
	return g.rows[j]
}

// group returns the index of the group of sortKey in key id's buffer, creating it empty if
// absent.
func (s *bufferState) group(id int32, sortKey []byte) int {
	b := &s.bufs[id]
	i, ok := b.find(sortKey)
	if !ok {
		b.groups = slices.Insert(b.groups, i, group{prefix: keyPrefix(sortKey), sortKey: bytes.Clone(sortKey)})
		s.bytes += int64(groupOverhead + len(sortKey))
	}
	return i
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

// removeRow removes row j of group gi of key id's buffer; the group stays, even when empty.
func (s *bufferState) removeRow(id int32, gi, j int) {
	b := &s.bufs[id]
	g := &b.groups[gi]
	s.bytes -= int64(rowOverhead + len(g.rows[j]))
	g.rows = slices.Delete(g.rows, j, j+1)
	if g.rowKeys != nil {
		s.bytes -= int64(rowOverhead + len(g.rowKeys[j]))
		g.rowKeys = slices.Delete(g.rowKeys, j, j+1)
	}
	b.n--
}

// dropIfEmpty removes group gi of key id's buffer when it holds neither rows nor a count, and
// reports whether it did.
func (s *bufferState) dropIfEmpty(id int32, gi int) bool {
	b := &s.bufs[id]
	if g := &b.groups[gi]; len(g.rows) > 0 || g.count > 0 {
		return false
	}
	s.bytes -= groupOverhead + int64(len(b.groups[gi].sortKey))
	b.groups = slices.Delete(b.groups, gi, gi+1)
	return true
}

// dropLast removes the last row of key id's buffer (TopNBuffer.removeLast) and returns it.
func (s *bufferState) dropLast(id int32) []byte {
	b := &s.bufs[id]
	gi := len(b.groups) - 1
	g := &b.groups[gi]
	row := g.rows[len(g.rows)-1]
	s.removeRow(id, gi, len(g.rows)-1)
	s.dropIfEmpty(id, gi)
	return row
}

// Bytes implements engine.PerKey.
func (s *bufferState) Bytes() int64 {
	return s.bytes + int64(cap(s.bufs))*32 + int64(cap(s.counts))*4
}

// Save implements engine.PerKey: for AppendOnlyFirstN the counter as a uvarint; for
// RetractableTopN the number of groups, then per group its sort key (a uvarint length and its
// bytes), its count and its number of rows (uvarints) and each row; otherwise the number of rows
// as a uvarint, then each row in buffer order (the sort keys follow from the rows). A row is a
// uvarint length and its bytes.
func (s *bufferState) Save(dst []byte, id int32) []byte {
	if s.counts != nil {
		return binary.AppendUvarint(dst, uint64(s.counts[id]))
	}
	b := &s.bufs[id]
	if s.retract {
		dst = binary.AppendUvarint(dst, uint64(len(b.groups)))
		for _, g := range b.groups {
			dst = binary.AppendUvarint(dst, uint64(len(g.sortKey)))
			dst = append(dst, g.sortKey...)
			dst = binary.AppendUvarint(dst, uint64(g.count))
			dst = binary.AppendUvarint(dst, uint64(len(g.rows)))
			for _, r := range g.rows {
				dst = binary.AppendUvarint(dst, uint64(len(r)))
				dst = append(dst, r...)
			}
		}
		return dst
	}
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
		return nil, fmt.Errorf("%w: top_n state: %d rows or groups in %d bytes", engine.ErrData, n, len(src))
	}
	if s.retract {
		return s.loadGroups(src, id, n)
	}
	var key, prev []byte
	for range n {
		var row []byte
		if row, src, err = s.loadRow(src); err != nil {
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

// loadRow reads one row of a payload, checked.
func (s *bufferState) loadRow(src []byte) (row, rest []byte, err error) {
	size, src, err := joincore.Uvarint(src, errTruncated)
	if err != nil {
		return nil, nil, err
	}
	if size > uint64(len(src)) {
		return nil, nil, errTruncated
	}
	row = src[:size]
	if err := s.layout.Check(row); err != nil {
		return nil, nil, err
	}
	return row, src[size:], nil
}

// loadGroups reads n RetractableTopN groups into key id: ascending sort keys, each with a count
// or rows, each row of its group's sort key.
func (s *bufferState) loadGroups(src []byte, id int32, n uint64) ([]byte, error) {
	var key []byte
	for range n {
		size, rest, err := joincore.Uvarint(src, errTruncated)
		if err != nil {
			return nil, err
		}
		if size > uint64(len(rest)) {
			return nil, errTruncated
		}
		sortKey := rest[:size]
		if b := &s.bufs[id]; len(b.groups) > 0 && bytes.Compare(b.last().sortKey, sortKey) >= 0 {
			return nil, fmt.Errorf("%w: top_n state: sort keys out of order", engine.ErrData)
		}
		count, rest, err := joincore.Uvarint(rest[size:], errTruncated)
		if err != nil {
			return nil, err
		}
		rows, rest, err := joincore.Uvarint(rest, errTruncated)
		if err != nil {
			return nil, err
		}
		if (count == 0 && rows == 0) || count > 1<<62 || rows > uint64(len(rest)) {
			return nil, fmt.Errorf("%w: top_n state: a group of count %d and %d rows", engine.ErrData, count, rows)
		}
		gi := s.group(id, sortKey)
		s.bufs[id].groups[gi].count = int64(count)
		src = rest
		for range rows {
			var row []byte
			if row, src, err = s.loadRow(src); err != nil {
				return nil, err
			}
			if key = s.sortKey.encode(key[:0], row); !bytes.Equal(key, sortKey) {
				return nil, fmt.Errorf("%w: top_n state: a row under another sort key", engine.ErrData)
			}
			s.put(id, sortKey, row)
		}
	}
	return src, nil
}
