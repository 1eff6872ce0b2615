package values

import (
	"encoding/binary"

	"github.com/ferrystream/ferry/engine"
)

// BoolOps is Ops for BOOLEAN, stored as Go bools: Flink orders false before true
// (Boolean.compare, which MinAggFunction's lessThan and MinWithRetractAggFunction's compareTo
// both use), and equals and its equaliser are ==. Arrow's values are bit-packed.
type BoolOps struct {
	col *engine.Column // bound column
}

func (o *BoolOps) Bind(in *engine.Batch, col int, _ bool) { o.col = &in.Cols[col] }
func (o *BoolOps) Unbind()                                { o.col = nil }
func (o *BoolOps) At(i int) bool                          { return o.col.Bool(i) }
func (o *BoolOps) Keep(v bool) bool                       { return v }
func (o *BoolOps) KeepFrom(_ Ops[bool], v bool) bool      { return v }
func (o *BoolOps) Drop(bool)                              {}
func (o *BoolOps) Less(a, b bool) bool                    { return !a && b }
func (o *BoolOps) Compare(a, b bool) int                  { return b2i(a) - b2i(b) }
func (o *BoolOps) Equal(a, b bool) bool                   { return a == b }
func (o *BoolOps) Same(a, b bool) bool                    { return a == b }
func (o *BoolOps) Hash(g int32, v bool) uint64            { return valueHash(g, uint64(b2i(v)), 0) }
func (o *BoolOps) Put(dst []byte, v bool) []byte          { return PutBool(dst, v) }
func (o *BoolOps) Get(src []byte) (bool, []byte, error)   { return GetBool(src) }
func (o *BoolOps) Sparse() bool                           { return false }
func (o *BoolOps) VarBytes([]bool, []bool, []int32) int   { return 0 }
func (o *BoolOps) CompactDue() bool                       { return false }
func (o *BoolOps) CompactStart()                          {}
func (o *BoolOps) Move(v bool) bool                       { return v }
func (o *BoolOps) CompactEnd()                            {}
func (o *BoolOps) Bytes() int64                           { return 0 }

func (o *BoolOps) Write(out *engine.OutColumn, vals []bool, nulls []bool, pick []int32) {
	eachPicked(out, len(vals), nulls, pick, func(j, p int) {
		if vals[p] {
			out.Data[j>>3] |= 1 << (j & 7)
		}
	})
}

// eachPicked writes the rows of out: row j holds value p, pick[j] (or j when pick is nil, n
// rows); a NULL value's row is set NULL, the others are put(j, p).
func eachPicked(out *engine.OutColumn, n int, nulls []bool, pick []int32, put func(j, p int)) {
	if pick != nil {
		n = len(pick)
	}
	for j := range n {
		p := j
		if pick != nil {
			p = int(pick[j])
		}
		if nulls[p] {
			out.SetNull(j)
			continue
		}
		put(j, p)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Timestamp is a TIMESTAMP(p > 3) value as Flink's TimestampData holds it: epoch milliseconds and
// the nanoseconds within the millisecond (0..999,999).
type Timestamp struct {
	ms int64
	ns int32
}

// TimestampOps is Ops for TIMESTAMP(p > 3), whose Arrow values are 12 bytes (int64 epoch
// milliseconds LE, int32 nano-of-millisecond LE, docs/abi.md): TimestampData.compareTo orders by
// milliseconds, then nanoseconds; equals and the equaliser compare both.
type TimestampOps struct {
	col *engine.Column // bound column
}

func (o *TimestampOps) Bind(in *engine.Batch, col int, _ bool)           { o.col = &in.Cols[col] }
func (o *TimestampOps) Unbind()                                          { o.col = nil }
func (o *TimestampOps) At(i int) Timestamp                               { return loadTS(o.col.Fixed(i)) }
func (o *TimestampOps) Keep(v Timestamp) Timestamp                       { return v }
func (o *TimestampOps) KeepFrom(_ Ops[Timestamp], v Timestamp) Timestamp { return v }
func (o *TimestampOps) Drop(Timestamp)                                   {}
func (o *TimestampOps) Less(a, b Timestamp) bool                         { return o.Compare(a, b) < 0 }
func (o *TimestampOps) Equal(a, b Timestamp) bool                        { return a == b }
func (o *TimestampOps) Same(a, b Timestamp) bool                         { return a == b }
func (o *TimestampOps) Hash(g int32, v Timestamp) uint64 {
	return valueHash(g, uint64(v.ms), uint64(v.ns))
}
func (o *TimestampOps) Sparse() bool                              { return false }
func (o *TimestampOps) VarBytes([]Timestamp, []bool, []int32) int { return 0 }
func (o *TimestampOps) CompactDue() bool                          { return false }
func (o *TimestampOps) CompactStart()                             {}
func (o *TimestampOps) Move(v Timestamp) Timestamp                { return v }
func (o *TimestampOps) CompactEnd()                               {}
func (o *TimestampOps) Bytes() int64                              { return 0 }

func (o *TimestampOps) Compare(a, b Timestamp) int {
	switch {
	case a.ms < b.ms:
		return -1
	case a.ms > b.ms:
		return 1
	}
	return int(a.ns - b.ns) // TimestampData.compareTo: the difference of the nanoseconds
}

func (o *TimestampOps) Put(dst []byte, v Timestamp) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(v.ms))
	return binary.LittleEndian.AppendUint32(dst, uint32(v.ns))
}

func (o *TimestampOps) Get(src []byte) (Timestamp, []byte, error) {
	if len(src) < 12 {
		return Timestamp{}, nil, ErrTruncated
	}
	return loadTS(src), src[12:], nil
}

func (o *TimestampOps) Write(out *engine.OutColumn, vals []Timestamp, nulls []bool, pick []int32) {
	eachPicked(out, len(vals), nulls, pick, func(j, p int) { // a NULL's slot stays zero
		d := out.Data[12*j : 12*j+12]
		binary.LittleEndian.PutUint64(d, uint64(vals[p].ms))
		binary.LittleEndian.PutUint32(d[8:], uint32(vals[p].ns))
	})
}

func loadTS(b []byte) Timestamp {
	return Timestamp{ms: int64(binary.LittleEndian.Uint64(b)), ns: int32(binary.LittleEndian.Uint32(b[8:]))}
}
