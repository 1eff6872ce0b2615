// Package joincore holds what Ferry's two-input joins share (interval_join, window_join): the
// encoded row form rows are stored and emitted in (RowLayout), the residual join condition
// (Expr, Condition), the NULL-key rule (KeyJoins), the writer of joined output rows (PairOutput)
// and varint readers for snapshots. Their timers are their KeyedState's (engine.TimerService).
package joincore

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
)

// KeyJoins reports whether rows of key can join at all: Flink's JoinConditionWithNullFilters
// rejects every pair when the key has NULL in a position whose filterNulls flag is set. key is
// a BinaryRowData whose null bit of field i is bit i+8 of the header; filterNulls lists the key
// positions whose flag is set.
func KeyJoins(key []byte, filterNulls []int) bool {
	for _, k := range filterNulls {
		if key[(k+8)>>3]&(1<<((k+8)&7)) != 0 {
			return false
		}
	}
	return true
}

// FilteredPositions lists the positions whose flag is set.
func FilteredPositions(filterNulls []bool) []int {
	var ps []int
	for k, f := range filterNulls {
		if f {
			ps = append(ps, k)
		}
	}
	return ps
}

// CheckKeys checks that a join's left and right inputs (0 and 1) have as many equi-join keys,
// of the same types but for nullability.
func CheckKeys(spec *engine.Spec) error {
	l, r := &spec.Inputs[0], &spec.Inputs[1]
	if len(l.Keys) != len(r.Keys) {
		return engine.SpecError("inputs[1].keys", "%d keys, the left input has %d", len(r.Keys), len(l.Keys))
	}
	for k := range l.Keys {
		a, b := l.Types[l.Keys[k]], r.Types[r.Keys[k]]
		a.Nullable, b.Nullable = false, false
		if a != b {
			return engine.SpecError(fmt.Sprintf("inputs[1].keys[%d]", k), "type %s differs from the left key's %s", b, a)
		}
	}
	return nil
}

// Varint reads a varint from src, failing with errTruncated.
func Varint(src []byte, errTruncated error) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, errTruncated
	}
	return v, src[n:], nil
}

// Uvarint reads a uvarint from src, failing with errTruncated.
func Uvarint(src []byte, errTruncated error) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, nil, errTruncated
	}
	return v, src[n:], nil
}

// PairOutput collects the output rows of one call as pairs of encoded rows (left, right; nil for
// a padded side) with their row kinds and writes them out in chunks. The rows belong to the
// caller's state or to nobody once removed from it; PairOutput never modifies them.
type PairOutput struct {
	layouts  [2]*RowLayout
	types    []engine.Type // output columns: the left layout's, then the right's (if any)
	chunk    int
	l, r     [][]byte
	kinds    []engine.RowKind // per row; engine.Insert unless AddKind said otherwise
	next     int
	varBytes []int
}

// NewPairOutput writes rows of the output types (the left layout's columns, then the right
// layout's; right nil when the output is the left row alone) in chunks of at most chunk rows.
func NewPairOutput(left, right *RowLayout, types []engine.Type, chunk int) *PairOutput {
	return &PairOutput{layouts: [2]*RowLayout{left, right}, types: types, chunk: chunk, varBytes: make([]int, len(types))}
}

// Add appends one +I output row.
func (o *PairOutput) Add(l, r []byte) { o.AddKind(l, r, engine.Insert) }

// AddKind appends one output row of row kind k.
func (o *PairOutput) AddKind(l, r []byte, k engine.RowKind) {
	o.l = append(o.l, l)
	o.r = append(o.r, r)
	o.kinds = append(o.kinds, k)
}

// Len is the number of rows of the call not yet written.
func (o *PairOutput) Len() int { return len(o.l) - o.next }

// Reset drops the rows of the call.
func (o *PairOutput) Reset() {
	clear(o.l)
	clear(o.r)
	o.l, o.r, o.kinds, o.next = o.l[:0], o.r[:0], o.kinds[:0], 0
}

// Emit writes the next chunk of the call's rows, with their row kinds, into out; more reports
// whether rows remain.
func (o *PairOutput) Emit(out *engine.OutBatch) (more bool, err error) {
	n := min(o.chunk, len(o.l)-o.next)
	if n <= 0 {
		out.Len = 0
		o.Reset()
		return false, nil
	}
	ls, rs := o.l[o.next:o.next+n], o.r[o.next:o.next+n]
	nl := len(o.layouts[0].types)
	for c, t := range o.types {
		o.varBytes[c] = 0
		if t.ID != engine.Varchar {
			continue
		}
		var size int
		if c < nl {
			size = o.layouts[0].VarBytes(ls, c)
		} else {
			size = o.layouts[1].VarBytes(rs, c-nl)
		}
		if size > math.MaxInt32 {
			return false, fmt.Errorf("%w: output column %d of one chunk holds %d bytes, more than 2 GiB; lower chunk_rows", engine.ErrData, c, size)
		}
		o.varBytes[c] = size
	}
	if err := out.Init(o.types, n, o.varBytes); err != nil {
		return false, err
	}
	for c := range o.types {
		if c < nl {
			o.layouts[0].WriteColumn(&out.Cols[c], ls, c)
		} else {
			o.layouts[1].WriteColumn(&out.Cols[c], rs, c-nl)
		}
	}
	copy(out.Kinds(), o.kinds[o.next:o.next+n])
	out.Finish()
	o.next += n
	if o.next < len(o.l) {
		return true, nil
	}
	o.Reset()
	return false, nil
}
