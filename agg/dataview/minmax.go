package dataview

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// MIN/MAX with retraction's accumulator. Flink's is a nested row, STRUCTURED<min T, mapSize
// BIGINT, map RAW(MapView<T, BIGINT>)> (docs/group-aggregate.md#data-views-in-the-partial-row);
// it crosses as one VARBINARY value in Ferry's layout (docs/abi.md#data-views), the map as a
// DISTINCT map's with one word per entry:
//
//	acc := null byte (0 value, 1 NULL) [min key] mapSize int64 LE map
//
// The state form (Flink's accState field and MapState agg<a>$map, with idle-state TTL) follows
// each entry's count by its last write, int64 LE (ms).

// MinMaxType is the type of a column of MIN/MAX-with-retraction accumulators.
var MinMaxType = engine.Type{ID: engine.Binary, Nullable: true}

// MinMaxAcc is the layout of the accumulators of MIN/MAX with retraction over values of type
// Value.
type MinMaxAcc struct {
	Value engine.Type
}

// HeadSize is the encoded size of an accumulator's extreme (key ext; NULL unless has), mapSize
// and map header.
func (l MinMaxAcc) HeadSize(ext []byte, has bool) int {
	n := 1 + 8 + 4
	if has {
		n += KeySize(l.Value, ext)
	}
	return n
}

// AppendHead appends an accumulator's extreme (key ext; NULL unless has), mapSize and map header;
// its entries follow (AppendEntry).
func (l MinMaxAcc) AppendHead(b, ext []byte, has bool, mapSize int64) []byte {
	if has {
		b = AppendKey(append(b, 0), l.Value, ext)
	} else {
		b = append(b, 1)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(mapSize))
	return binary.LittleEndian.AppendUint32(b, 1)
}

// EntrySize is the encoded size of the map entry of key, with its last write when times is set.
func (l MinMaxAcc) EntrySize(key []byte, times bool) int {
	n := 1 + KeySize(l.Value, key) + 8
	if times {
		n += 8
	}
	return n
}

// AppendEntry appends the map entry of key with its count, followed by its last write at when
// times is set.
func (l MinMaxAcc) AppendEntry(b, key []byte, count int64, times bool, at int64) []byte {
	b = AppendKey(append(b, 0), l.Value, key)
	b = binary.LittleEndian.AppendUint64(b, uint64(count))
	if times {
		b = binary.LittleEndian.AppendUint64(b, uint64(at))
	}
	return b
}

// DecodedMinMax is one decoded accumulator: its extreme's key (nil: NULL), mapSize and entries.
// The keys alias the encoded bytes.
type DecodedMinMax struct {
	Ext     []byte
	MapSize int64
	Keys    [][]byte
	Counts  []int64
}

// Decode decodes an accumulator in the partial form into d (slices reused). It refuses a
// malformed accumulator, a NULL key and a count of 0; a value held twice is for the caller,
// which compares values, to refuse.
func (l MinMaxAcc) Decode(src []byte, d *DecodedMinMax) error {
	if len(src) < 1 || src[0] > 1 {
		return fmt.Errorf("%w: accumulator: bad NULL flag", engine.ErrData)
	}
	null := src[0] == 1
	src = src[1:]
	d.Ext = nil
	var err error
	if !null {
		if d.Ext, src, err = NextKey(l.Value, src); err != nil {
			return fmt.Errorf("accumulator's extreme: %w", err)
		}
	}
	if len(src) < 12 {
		return fmt.Errorf("%w: accumulator: truncated mapSize or map", engine.ErrData)
	}
	d.MapSize = int64(binary.LittleEndian.Uint64(src))
	if w := binary.LittleEndian.Uint32(src[8:]); w != 1 && len(src) > 12 {
		return fmt.Errorf("%w: accumulator: map of %d-word values, want 1", engine.ErrData, w)
	}
	src = src[12:]
	d.Keys, d.Counts = d.Keys[:0], d.Counts[:0]
	for len(src) > 0 {
		if src[0] != 0 {
			return fmt.Errorf("%w: accumulator: map entry with NULL flag %d (Flink's map has no NULL key)", engine.ErrData, src[0])
		}
		var key []byte
		if key, src, err = NextKey(l.Value, src[1:]); err != nil {
			return fmt.Errorf("accumulator's map: %w", err)
		}
		if len(src) < 8 {
			return fmt.Errorf("%w: accumulator: truncated count", engine.ErrData)
		}
		c := int64(binary.LittleEndian.Uint64(src))
		if c == 0 {
			return fmt.Errorf("%w: accumulator: a count of 0, which Flink's map never holds", engine.ErrData)
		}
		d.Keys, d.Counts = append(d.Keys, key), append(d.Counts, c)
		src = src[8:]
	}
	return nil
}

// StripTimes appends the partial form of src, an accumulator in the state form, to dst and
// returns it with the accumulator's mapSize and, with times, each entry's last write by key.
func (l MinMaxAcc) StripTimes(dst, src []byte, times bool) ([]byte, int64, map[string]int64, error) {
	if len(src) < 1 || src[0] > 1 {
		return nil, 0, nil, fmt.Errorf("%w: accumulator: bad NULL flag", engine.ErrData)
	}
	head := 1
	if src[0] == 0 {
		_, rest, err := NextKey(l.Value, src[1:])
		if err != nil {
			return nil, 0, nil, fmt.Errorf("accumulator's extreme: %w", err)
		}
		head = len(src) - len(rest)
	}
	if len(src) < head+12 {
		return nil, 0, nil, fmt.Errorf("%w: accumulator: truncated mapSize or map", engine.ErrData)
	}
	mapSize := int64(binary.LittleEndian.Uint64(src[head:]))
	dst = append(dst, src[:head+12]...)
	src = src[head+12:]
	var lastWrites map[string]int64
	if times {
		lastWrites = map[string]int64{}
	}
	for len(src) > 0 {
		if src[0] != 0 {
			return nil, 0, nil, fmt.Errorf("%w: accumulator: map entry with NULL flag %d (Flink's map has no NULL key)", engine.ErrData, src[0])
		}
		key, rest, err := NextKey(l.Value, src[1:])
		if err != nil {
			return nil, 0, nil, fmt.Errorf("accumulator's map: %w", err)
		}
		end := len(src) - len(rest) + 8 // flag, key, count
		if times {
			end += 8
		}
		if end > len(src) {
			return nil, 0, nil, fmt.Errorf("%w: accumulator: truncated entry", engine.ErrData)
		}
		dst = append(dst, src[:len(src)-len(rest)+8]...)
		if times {
			lastWrites[string(key)] = int64(binary.LittleEndian.Uint64(src[end-8:]))
		}
		src = src[end:]
	}
	return dst, mapSize, lastWrites, nil
}
