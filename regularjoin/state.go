package regularjoin

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/internal/javamap"
	"github.com/ferrystream/ferry/joincore"
)

// joinKeys is the per-join-key state of a Join (an engine.PerKey): each side's rows in the side's
// layout, Flink's JoinRecordStateViews (a side that is not padded, a SEMI/ANTI join's right side)
// or OuterJoinRecordStateViews (a padded side, a SEMI/ANTI join's left side: rows with their
// association counts):
//
//   - join_key_contains_unique_key: the ValueState, at most one row (keyState.one);
//   - input_has_unique_key: the MapState unique key -> row (keyState.m, keyed by the unique
//     key's BinaryRowData);
//   - no_unique_key: the MapState row -> count (keyed by the row's BinaryRowData, RowKind
//     INSERT), each row visited count times.
//
// A map is Flink's heap backend's java.util.HashMap for the key (javamap, in its iteration
// order); it is absent (nil) while empty, as HeapMapState drops an emptied map, so the next row
// starts a new HashMap.
//
// Payload of a key (after the KeyedState's key bytes), layout 1 (stateVersion):
//
//	flags byte: 1 left side present, 2 right side present
//	per present side, left first:
//	    join_key_contains_unique_key: varint association count, uvarint length and encoded row
//	    the map layouts: uvarint entry count (>= 1), then per entry in iteration order: varint
//	        count (no_unique_key only, >= 1), varint association count, uvarint length and the map
//	        key's BinaryRowData, uvarint length and encoded row
//
// The association count is -1 on a side without association counts (sideSpec.outer false). A map restores as Flink's heap
// backend restores a MapState: a map created for its size (MapSerializer.deserialize), filled in
// the saved iteration order.
type joinKeys struct {
	j *Join
	k []keyState
	// bytes estimates the memory of every stored record, kept up to date as records come and go
	// so Bytes costs nothing.
	bytes int64
}

// stateVersion numbers the form of the join's payload (engine.StateConfig.Version).
const stateVersion = 1

// recordBytes estimates a record's memory beyond its key and row bytes; mapBytes a map's.
const (
	recordBytes = 96
	mapBytes    = 48 + 16*8
)

// keyState is the state of one join key: per side (left, right) its rows.
type keyState struct {
	s [2]sideState
}

// sideState is one side's rows of a join key: one (join_key_contains_unique_key) or m (the map
// layouts), nil when the side holds none.
type sideState struct {
	one *record
	m   *recordMap
}

// empty reports whether the key holds no row on either side.
func (ks *keyState) empty() bool {
	return ks.s[0].one == nil && ks.s[0].m == nil && ks.s[1].one == nil && ks.s[1].m == nil
}

// recordMap is one side's MapState of one join key: java.util.HashMap<BinaryRowData, ...>.
type recordMap = javamap.Map[[]byte, record, *record]

// record is one stored row, also its map's node: Flink's map key (BinaryRowData bytes; nil in a
// ValueState), the row (joincore.RowLayout) and its counts. Records belong to their keyState.
type record struct {
	e     javamap.Entry[record]
	key   []byte
	row   []byte
	count int32 // no_unique_key: how many times the row is stored (Flink's count); else 1
	assoc int32 // a padded side's numOfAssociations; -1 on the other side
}

func (r *record) Entry() *javamap.Entry[record] { return &r.e }
func (r *record) KeyEquals(k []byte) bool       { return bytes.Equal(r.key, k) } // BinaryRowData.equals

// Compare stands in for HashMap's tieBreakOrder between keys of equal hash in a tree bin, which
// orders BinaryRowData (not Comparable) by identity hash codes: Flink's order is not
// deterministic there.
func (r *record) Compare(o *record) int { return bytes.Compare(r.key, o.key) }

func recordCost(r *record) int64 { return recordBytes + int64(len(r.key)+len(r.row)) }

// add is addRecord(row, assoc) of side's state view for key ks (assoc -1 on a side that is not
// padded); mk and mh are the row's map key and its hashCode (map layouts only).
func (s *joinKeys) add(ks *keyState, side int, row, mk []byte, mh, assoc int32) {
	st := &ks.s[side]
	switch s.j.sides[side].layout {
	case joinKeyUnique: // ValueState.update
		if st.one == nil {
			st.one = &record{count: 1}
		} else {
			s.bytes -= recordCost(st.one)
		}
		st.one.row, st.one.assoc = row, assoc
		s.bytes += recordCost(st.one)
		return
	}
	if st.m == nil {
		st.m = &recordMap{} // HeapMapState.put: new HashMap<>()
		s.bytes += mapBytes
	}
	r := st.m.Get(mk, mh)
	switch {
	case r == nil:
		r = &record{key: slices.Clone(mk), row: row, count: 1, assoc: assoc}
		st.m.Insert(r, mh)
	case s.j.sides[side].layout == uniqueKey: // put(uk, row): the value replaced
		s.bytes -= recordCost(r)
		r.row, r.assoc = row, assoc
	default: // put(row, count + 1): the stored key stays
		r.count++
		r.assoc = assoc
		return
	}
	s.bytes += recordCost(r)
}

// retract is retractRecord of side's state view for key ks: the ValueState cleared, the unique
// key's entry removed, or the row's count decremented (its entry removed at 1); a row not stored
// changes nothing. An emptied map is dropped (HeapMapState.remove).
func (s *joinKeys) retract(ks *keyState, side int, mk []byte, mh int32) {
	st := &ks.s[side]
	if st.one != nil {
		s.bytes -= recordCost(st.one)
		st.one = nil
	}
	if st.m == nil {
		return
	}
	r := st.m.Get(mk, mh)
	if r == nil {
		return
	}
	if r.count > 1 && s.j.sides[side].layout == noUniqueKey {
		r.count--
		return
	}
	st.m.RemoveKey(r)
	s.bytes -= recordCost(r)
	if st.m.Len() == 0 {
		st.m = nil
		s.bytes -= mapBytes
	}
}

// Grow implements engine.PerKey.
func (s *joinKeys) Grow(n int) {
	for len(s.k) < n {
		s.k = append(s.k, keyState{})
	}
}

// Reset implements engine.PerKey.
func (s *joinKeys) Reset(id int32) {
	for _, st := range s.k[id].s {
		if st.one != nil {
			s.bytes -= recordCost(st.one)
		}
		if st.m != nil {
			st.m.Each(func(r *record) { s.bytes -= recordCost(r) })
			s.bytes -= mapBytes
		}
	}
	s.k[id] = keyState{}
}

// Bytes implements engine.PerKey: an estimate of the per-key states and their records, and of
// the rows of a mini-batch bundle queued outside them.
func (s *joinKeys) Bytes() int64 {
	b := int64(cap(s.k))*int64(unsafe.Sizeof(keyState{})) + s.bytes
	if s.j.mb != nil {
		b += s.j.mb.bytes
	}
	return b
}

// Save implements engine.PerKey.
func (s *joinKeys) Save(dst []byte, id int32) []byte {
	ks := &s.k[id]
	var flags byte
	for side, st := range ks.s {
		if st.one != nil || st.m != nil {
			flags |= 1 << side
		}
	}
	dst = append(dst, flags)
	for side, st := range ks.s {
		switch {
		case st.one != nil:
			dst = binary.AppendVarint(dst, int64(st.one.assoc))
			dst = appendBytes(dst, st.one.row)
		case st.m != nil:
			counted := s.j.sides[side].layout == noUniqueKey
			dst = binary.AppendUvarint(dst, uint64(st.m.Len()))
			st.m.Each(func(r *record) {
				if counted {
					dst = binary.AppendVarint(dst, int64(r.count))
				}
				dst = binary.AppendVarint(dst, int64(r.assoc))
				dst = appendBytes(dst, r.key)
				dst = appendBytes(dst, r.row)
			})
		}
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

var errTruncated = fmt.Errorf("%w: regular join state truncated", engine.ErrData)

// Load implements engine.PerKey.
func (s *joinKeys) Load(src []byte, id int32) (_ []byte, err error) {
	ks := &s.k[id]
	defer func() {
		if err != nil {
			s.Reset(id) // forget the memory counted so far
		}
	}()
	if len(src) == 0 {
		return nil, errTruncated
	}
	flags := src[0]
	src = src[1:]
	if flags&^3 != 0 || flags == 0 {
		return nil, fmt.Errorf("%w: regular join state flags %#x", engine.ErrData, flags)
	}
	for side := range 2 {
		if flags&(1<<side) == 0 {
			continue
		}
		if src, err = s.loadSide(src, ks, side); err != nil {
			return nil, fmt.Errorf("%s side: %w", sideNames[side], err)
		}
	}
	return src, nil
}

// loadSide reads side's rows of key ks.
func (s *joinKeys) loadSide(src []byte, ks *keyState, side int) ([]byte, error) {
	layout, outer := s.j.sides[side].layout, s.j.sides[side].outer
	rowLayout := s.j.layouts[side]
	readAssoc := func() (int32, error) {
		var a int64
		var err error
		if a, src, err = varint(src); err != nil {
			return 0, err
		}
		if a < -1<<31 || a >= 1<<31 || !outer && a != -1 {
			return 0, fmt.Errorf("%w: association count %d", engine.ErrData, a)
		}
		return int32(a), nil
	}
	readRow := func() ([]byte, error) {
		var b []byte
		var err error
		if b, src, err = readBytes(src); err != nil {
			return nil, err
		}
		return b, rowLayout.Check(b)
	}
	st := &ks.s[side]
	if layout == joinKeyUnique {
		assoc, err := readAssoc()
		if err != nil {
			return nil, err
		}
		row, err := readRow()
		if err != nil {
			return nil, err
		}
		st.one = &record{row: row, count: 1, assoc: assoc}
		s.bytes += recordCost(st.one)
		return src, nil
	}
	n, src, err := uvarint(src)
	if err != nil {
		return nil, err
	}
	if n == 0 || n > uint64(len(src))/3 {
		return nil, fmt.Errorf("%w: entry count %d out of range", engine.ErrData, n)
	}
	st.m = javamap.WithExpectedSize[[]byte, record](int(n))
	s.bytes += mapBytes
	for range n {
		r := &record{count: 1}
		if layout == noUniqueKey {
			var c int64
			if c, src, err = varint(src); err != nil {
				return nil, err
			}
			if c < 1 || c >= 1<<31 {
				return nil, fmt.Errorf("%w: row count %d", engine.ErrData, c)
			}
			r.count = int32(c)
		}
		if r.assoc, err = readAssoc(); err != nil {
			return nil, err
		}
		if r.key, src, err = readBytes(src); err != nil {
			return nil, err
		}
		if r.row, err = readRow(); err != nil {
			return nil, err
		}
		h := engine.HashRow(r.key)
		if st.m.Get(r.key, h) != nil {
			return nil, fmt.Errorf("%w: duplicate map key", engine.ErrData)
		}
		st.m.Insert(r, h)
		s.bytes += recordCost(r)
	}
	return src, nil
}

// readBytes reads a uvarint length and that many bytes, copied.
func readBytes(src []byte) ([]byte, []byte, error) {
	n, src, err := uvarint(src)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(src)) {
		return nil, nil, errTruncated
	}
	return slices.Clone(src[:n]), src[n:], nil
}

func varint(src []byte) (int64, []byte, error) { return joincore.Varint(src, errTruncated) }

func uvarint(src []byte) (uint64, []byte, error) { return joincore.Uvarint(src, errTruncated) }
