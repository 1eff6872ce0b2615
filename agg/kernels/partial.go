package kernels

import (
	"fmt"
	"unsafe"

	"github.com/ferrystream/ferry/engine"
)

// Partial state: the fields of an aggregate's accumulator as Flink's accumulator row holds them
// (AggregateInfoList's accumulator types, from each function's getAggBufferTypes). The two-phase
// aggregate's local operator writes them per key (MiniBatchLocalGroupAggFunction emits key ++
// accumulators), its global operator merges them into state (MiniBatchGlobalGroupAggFunction).
// Flink declares every field nullable (DataTypes.BIGINT() and the like); fields Flink never
// sets to NULL (counts, numeric $SUM0 and AVG sums) are checked when a batch is merged, so a
// NULL there is reported rather than guessed at.

// countType is a BIGINT accumulator field (COUNT's count, COUNT(*)'s count1, the counts of
// SUM with retraction and AVG).
var countType = engine.Type{ID: engine.BigInt, Nullable: true}

// checkPartial verifies that in holds partial-state columns [first, first+len(types)) of the
// given types and that the columns notNull (offsets from first) hold no NULL. It runs before
// a merge changes anything.
func checkPartial(in *engine.Batch, first int, types []engine.Type, notNull ...int) error {
	if first < 0 || first+len(types) > len(in.Cols) {
		return fmt.Errorf("%w: partial state columns [%d, %d) outside the batch's %d columns", engine.ErrInvalid, first, first+len(types), len(in.Cols))
	}
	if err := in.CheckTypes(first, types, "partial state"); err != nil {
		return err
	}
	for _, k := range notNull {
		c := &in.Cols[first+k]
		if c.Valid == nil {
			continue
		}
		for i := range in.Len {
			if c.IsNull(i) {
				return fmt.Errorf("%w: partial state column %d holds NULL at row %d, which Flink's local aggregate never writes there", engine.ErrData, first+k, i)
			}
		}
	}
	return nil
}

// sizeOf is the in-memory size of a value of type V, for Bytes estimates.
func sizeOf[V any](v V) uintptr { return unsafe.Sizeof(v) }
