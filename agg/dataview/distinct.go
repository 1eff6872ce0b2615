package dataview

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/engine"
)

// DISTINCT maps (docs/group-aggregate.md#data-views-in-the-partial-row). Flink's local aggregate
// emits each distinct map, after every call's accumulator fields, as a RAW field holding a heap
// MapView from argument value (NULL included) to a BIGINT or long[] value: a bitmask of calls on
// insert-only input, one count per call on retracting input. Ferry carries one map per row as a
// VARBINARY value in its own layout (docs/abi.md#data-views), entries in any order:
//
//	map   := words uint32 LE, entry*
//	entry := null byte (0 value, 1 NULL) [key] words × int64 LE
//
// with keys as NextKey reads them. words is DistinctMap.Words: 1 for Flink's BIGINT form, the
// long[] length otherwise. The state form (Flink's MapState distinctAcc_<i> with idle-state TTL)
// follows each entry's value by its last write, int64 LE (ms).

// MapType is the type of a column of DISTINCT maps.
var MapType = engine.Type{ID: engine.Binary, Nullable: true}

// MapHeaderSize is the size of a map's header, its words.
const MapHeaderSize = 4

// DistinctMap is the layout of the maps of the DISTINCT calls that share one argument.
type DistinctMap struct {
	Key     engine.Type // the argument's type
	Calls   int         // the number of calls sharing the map
	Retract bool        // an entry holds a count per call (retracting input), not a bit
}

// Words is the number of int64 words of an entry's value in Flink's form
// (DataViewUtils.createDistinctViewDataType and DistinctAggCodeGen's value generators): one
// BIGINT for up to 64 calls on insert-only input and for one call on retracting input, else a
// long[] of calls/64+1 bitmask words or of one count per call.
func (m DistinctMap) Words() int {
	k := m.Calls
	switch {
	case !m.Retract && k <= 64, m.Retract && k == 1:
		return 1
	case m.Retract:
		return k
	}
	return k/64 + 1
}

// AppendHeader appends a map's header.
func (m DistinctMap) AppendHeader(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, uint32(m.Words()))
}

// EntrySize is the encoded size of the entry of key (NULL when null), with its last write when
// times is set.
func (m DistinctMap) EntrySize(key []byte, null, times bool) int {
	n := 1 + 8*m.Words()
	if times {
		n += 8
	}
	if !null {
		n += KeySize(m.Key, key)
	}
	return n
}

// AppendEntry appends the entry of key (NULL when null) whose value per call is vals (a bit is
// set where the value is not 0), followed by its last write at when times is set.
func (m DistinctMap) AppendEntry(b, key []byte, null bool, vals []int64, times bool, at int64) []byte {
	if null {
		b = append(b, 1)
	} else {
		b = AppendKey(append(b, 0), m.Key, key)
	}
	if m.Retract {
		for _, c := range vals {
			b = binary.LittleEndian.AppendUint64(b, uint64(c))
		}
	} else { // bitmask words
		k := len(vals)
		for w := range m.Words() {
			var x uint64
			for c := 64 * w; c < k && c < 64*w+64; c++ {
				if vals[c] != 0 {
					x |= 1 << (c % 64)
				}
			}
			b = binary.LittleEndian.AppendUint64(b, x)
		}
	}
	if times {
		b = binary.LittleEndian.AppendUint64(b, uint64(at))
	}
	return b
}

// Entry is one decoded entry of a map.
type Entry struct {
	Null bool
	Key  []byte  // aliases the encoded bytes
	Vals []int64 // per call: its bit (0/1) or count
	At   int64   // the last write (ms), in the state form
}

// Entries checks the header of an encoded map and returns its entries.
func (m DistinctMap) Entries(src []byte) ([]byte, error) {
	if len(src) < MapHeaderSize {
		return nil, fmt.Errorf("%w: distinct map of %d bytes has no header", engine.ErrData, len(src))
	}
	// An empty map's header is not checked: a JVM holding no entry cannot know a long[]'s length.
	if w := binary.LittleEndian.Uint32(src); len(src) > MapHeaderSize && int64(w) != int64(m.Words()) {
		return nil, fmt.Errorf("%w: distinct map of %d-word values, want %d for %d calls", engine.ErrData, w, m.Words(), m.Calls)
	}
	return src[MapHeaderSize:], nil
}

// NextEntry decodes the entry at the start of src, with its last write when times is set, into
// e (e.Vals reused) and returns the rest.
func (m DistinctMap) NextEntry(src []byte, times bool, e *Entry) ([]byte, error) {
	k := m.Calls
	words := m.Words()
	if len(src) < 1 || src[0] > 1 {
		return nil, fmt.Errorf("%w: distinct map entry: bad NULL flag", engine.ErrData)
	}
	e.Null = src[0] == 1
	src = src[1:]
	e.Key = nil
	if !e.Null {
		var err error
		if e.Key, src, err = NextKey(m.Key, src); err != nil {
			return nil, fmt.Errorf("distinct map entry: %w", err)
		}
	}
	if len(src) < 8*words {
		return nil, fmt.Errorf("%w: distinct map entry: value of %d words truncated", engine.ErrData, words)
	}
	e.Vals = scratch.Resize(e.Vals, k)
	for w := range words {
		x := binary.LittleEndian.Uint64(src[8*w:])
		if m.Retract {
			e.Vals[w] = int64(x)
			continue
		}
		for b := 0; b < 64; b++ {
			c := 64*w + b
			switch {
			case c < k:
				e.Vals[c] = int64(x >> b & 1)
			case x>>b&1 != 0:
				return nil, fmt.Errorf("%w: distinct map entry: bit %d set for %d calls", engine.ErrData, c, k)
			}
		}
	}
	src = src[8*words:]
	if times {
		if len(src) < 8 {
			return nil, fmt.Errorf("%w: distinct map entry: last write truncated", engine.ErrData)
		}
		e.At, src = int64(binary.LittleEndian.Uint64(src)), src[8:]
	}
	return src, nil
}

// Check validates the maps of column c (without last writes) at the rows of gids that are >= 0,
// before a merge changes anything: no NULL, every entry well-formed.
func (m DistinctMap) Check(c *engine.Column, gids []int32) error {
	var e Entry
	for i, g := range gids {
		if g < 0 {
			continue
		}
		if c.IsNull(i) {
			return fmt.Errorf("%w: distinct map at row %d is NULL, which Flink's local aggregate never writes", engine.ErrData, i)
		}
		src, err := m.Entries(c.Bytes(i))
		for err == nil && len(src) > 0 {
			src, err = m.NextEntry(src, false, &e)
		}
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return nil
}
