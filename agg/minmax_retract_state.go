package agg

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// The state of MIN/MAX with retraction as Flink's single-phase and global aggregates keep it
// (flinkstate.go): the accumulator row's field (min, mapSize) in accState, the value→count
// entries in the MapState agg<a>$map. It crosses as the partial form of
// minmax_retract_merge.go, with, under idle-state TTL, each entry's last write (int64 LE, ms)
// after its count, as Flink's TtlMapState stamps every entry.

// viewStateAcc is implemented by the accumulators whose Flink state holds a data view that
// Ferry imports and exports.
type viewStateAcc interface {
	stateBytes(groups []int32, times bool) int
	writeState(col *engine.OutColumn, groups []int32, times bool)
	// loadState loads row i of col into group gids[i], which holds no state, for every i;
	// malformed input fails with an error wrapping engine.ErrData.
	loadState(col *engine.Column, gids []int32, times bool) error
}

// loadState takes the accumulators as they are: the extreme and mapSize as Flink held them
// (mapSize may count entries that expired since), every entry with its count and last write.
func (a *minMaxRetractAcc[V, O]) loadState(col *engine.Column, gids []int32, times bool) error {
	n := len(gids)
	part := engine.Column{Type: accType, Offs: make([]int32, n+1)}
	mapSizes := make([]int64, n)
	var lastWrites []map[string]int64
	if times {
		lastWrites = make([]map[string]int64, n)
	}
	for i := range n {
		if col.IsNull(i) {
			return fmt.Errorf("%w: row %d: accumulator is NULL", engine.ErrData, i)
		}
		var err error
		var lw map[string]int64
		if part.Data, mapSizes[i], lw, err = a.stripTimes(part.Data, col.Bytes(i), times); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if times {
			lastWrites[i] = lw
		}
		part.Offs[i+1] = int32(len(part.Data))
	}
	// Merging into a group without state takes the extreme and the entries as they are.
	if err := a.merge(&engine.Batch{Len: n, Cols: []engine.Column{part}}, 0, gids, make([]bool, n)); err != nil {
		return err
	}
	for i, g := range gids {
		a.mapSize[g] = mapSizes[i]
	}
	if !times {
		return nil
	}
	keys := a.valueKeys(gids) // per group: the extreme if any, then the entries in chain order
	j := 0
	for i, g := range gids {
		if a.hasExt[g] {
			j++
		}
		for e := a.counts.head[g]; e >= 0; e = a.counts.next[e] {
			a.counts.at[e] = lastWrites[i][string(keyAt(keys, j))]
			j++
		}
	}
	return nil
}

// stripTimes appends the partial form of src, an accumulator in the state form, to dst and
// returns it with the accumulator's mapSize and, with times, each entry's last write by key.
func (a *minMaxRetractAcc[V, O]) stripTimes(dst, src []byte, times bool) ([]byte, int64, map[string]int64, error) {
	if len(src) < 1 || src[0] > 1 {
		return nil, 0, nil, fmt.Errorf("%w: accumulator: bad NULL flag", engine.ErrData)
	}
	head := 1
	if src[0] == 0 {
		_, rest, err := nextKey(a.typ, src[1:])
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
		key, rest, err := nextKey(a.typ, src[1:])
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
