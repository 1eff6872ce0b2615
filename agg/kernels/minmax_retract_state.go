package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/engine"
)

// The state of MIN/MAX with retraction as Flink's single-phase and global aggregates keep it
// (agg imports and exports it): the accumulator row's field (min, mapSize) in accState, the
// value→count entries in the MapState agg<a>$map. It crosses in the state form of
// dataview.MinMaxAcc: the partial form with, under idle-state TTL, each entry's last write
// after its count, as Flink's TtlMapState stamps every entry.

// ViewState is implemented by the accumulators whose Flink state holds a data view that
// Ferry imports and exports, one VARBINARY value per group in the call's column of the import
// and export rows.
type ViewState interface {
	// StateBytes is the encoded size of the state of groups, with each entry's last write when
	// times is set (idle-state TTL).
	StateBytes(groups []int32, times bool) int
	// WriteState writes the state of group groups[j] to row j of col, laid out with
	// StateBytes(groups, times) bytes.
	WriteState(col *engine.OutColumn, groups []int32, times bool)
	// LoadState loads row i of col into group gids[i], which holds no state, for every i;
	// malformed input fails with an error wrapping engine.ErrData.
	LoadState(col *engine.Column, gids []int32, times bool) error
}

// dataViewState is implemented by the accumulators whose Flink state holds a data view besides
// the accumulator row.
type dataViewState interface{ keepsDataView() }

func (*minMaxRetractAcc[V, O]) keepsDataView()    {}
func (*firstLastRetractAcc[V, O]) keepsDataView() {}
func (*listAggRetractAcc) keepsDataView()         {}

// KeepsDataView reports whether the Flink state of acc holds a data view (a MapView or ListView
// in a state of its own) besides its field of the accumulator row: MIN/MAX, FIRST_VALUE,
// LAST_VALUE and LISTAGG with retraction. Of these only MIN/MAX's crosses (ViewState).
func KeepsDataView(acc Accumulator) bool {
	_, ok := acc.(dataViewState)
	return ok
}

// LoadState takes the accumulators as they are: the extreme and mapSize as Flink held them
// (mapSize may count entries that expired since), every entry with its count and last write.
func (a *minMaxRetractAcc[V, O]) LoadState(col *engine.Column, gids []int32, times bool) error {
	n := len(gids)
	l := dataview.MinMaxAcc{Value: a.typ}
	part := engine.Column{Type: dataview.MinMaxType, Offs: make([]int32, n+1)}
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
		if part.Data, mapSizes[i], lw, err = l.StripTimes(part.Data, col.Bytes(i), times); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if times {
			lastWrites[i] = lw
		}
		part.Offs[i+1] = int32(len(part.Data))
	}
	// Merging into a group without state takes the extreme and the entries as they are.
	if err := a.Merge(&engine.Batch{Len: n, Cols: []engine.Column{part}}, 0, gids, make([]bool, n)); err != nil {
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
		for e := a.counts.Head[g]; e >= 0; e = a.counts.Next[e] {
			a.counts.At[e] = lastWrites[i][string(dataview.KeyAt(keys, j))]
			j++
		}
	}
	return nil
}
