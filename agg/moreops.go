package agg

import (
	"encoding/binary"

	"github.com/ferrystream/ferry/engine"
)

// boolOps is valueOps for BOOLEAN, stored as Go bools: Flink orders false before true
// (Boolean.compare, which MinAggFunction's lessThan and MinWithRetractAggFunction's compareTo
// both use), and equals and its equaliser are ==. Arrow's values are bit-packed.
type boolOps struct {
	col *engine.Column // bound column
}

func (o *boolOps) bind(in *engine.Batch, col int, _ bool) { o.col = &in.Cols[col] }
func (o *boolOps) unbind()                                { o.col = nil }
func (o *boolOps) at(i int) bool                          { return o.col.Bool(i) }
func (o *boolOps) keep(v bool) bool                       { return v }
func (o *boolOps) keepFrom(_ valueOps[bool], v bool) bool { return v }
func (o *boolOps) drop(bool)                              {}
func (o *boolOps) less(a, b bool) bool                    { return !a && b }
func (o *boolOps) compare(a, b bool) int                  { return b2i(a) - b2i(b) }
func (o *boolOps) equal(a, b bool) bool                   { return a == b }
func (o *boolOps) same(a, b bool) bool                    { return a == b }
func (o *boolOps) hash(g int32, v bool) uint64            { return valueHash(g, uint64(b2i(v)), 0) }
func (o *boolOps) put(dst []byte, v bool) []byte          { return putBool(dst, v) }
func (o *boolOps) get(src []byte) (bool, []byte, error)   { return getBool(src) }
func (o *boolOps) sparse() bool                           { return false }
func (o *boolOps) varBytes([]bool, []bool, []int32) int   { return 0 }
func (o *boolOps) compactDue() bool                       { return false }
func (o *boolOps) compactStart()                          {}
func (o *boolOps) move(v bool) bool                       { return v }
func (o *boolOps) compactEnd()                            {}
func (o *boolOps) bytes() int64                           { return 0 }

func (o *boolOps) write(out *engine.OutColumn, vals []bool, nulls []bool, pick []int32) {
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

// ts12 is a TIMESTAMP(p > 3) value as Flink's TimestampData holds it: epoch milliseconds and
// the nanoseconds within the millisecond (0..999,999).
type ts12 struct {
	ms int64
	ns int32
}

// tsOps is valueOps for TIMESTAMP(p > 3), whose Arrow values are 12 bytes (int64 epoch
// milliseconds LE, int32 nano-of-millisecond LE, docs/abi.md): TimestampData.compareTo orders by
// milliseconds, then nanoseconds; equals and the equaliser compare both.
type tsOps struct {
	col *engine.Column // bound column
}

func (o *tsOps) bind(in *engine.Batch, col int, _ bool) { o.col = &in.Cols[col] }
func (o *tsOps) unbind()                                { o.col = nil }
func (o *tsOps) at(i int) ts12                          { return loadTS(o.col.Fixed(i)) }
func (o *tsOps) keep(v ts12) ts12                       { return v }
func (o *tsOps) keepFrom(_ valueOps[ts12], v ts12) ts12 { return v }
func (o *tsOps) drop(ts12)                              {}
func (o *tsOps) less(a, b ts12) bool                    { return o.compare(a, b) < 0 }
func (o *tsOps) equal(a, b ts12) bool                   { return a == b }
func (o *tsOps) same(a, b ts12) bool                    { return a == b }
func (o *tsOps) hash(g int32, v ts12) uint64            { return valueHash(g, uint64(v.ms), uint64(v.ns)) }
func (o *tsOps) sparse() bool                           { return false }
func (o *tsOps) varBytes([]ts12, []bool, []int32) int   { return 0 }
func (o *tsOps) compactDue() bool                       { return false }
func (o *tsOps) compactStart()                          {}
func (o *tsOps) move(v ts12) ts12                       { return v }
func (o *tsOps) compactEnd()                            {}
func (o *tsOps) bytes() int64                           { return 0 }

func (o *tsOps) compare(a, b ts12) int {
	switch {
	case a.ms < b.ms:
		return -1
	case a.ms > b.ms:
		return 1
	}
	return int(a.ns - b.ns) // TimestampData.compareTo: the difference of the nanoseconds
}

func (o *tsOps) put(dst []byte, v ts12) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(v.ms))
	return binary.LittleEndian.AppendUint32(dst, uint32(v.ns))
}

func (o *tsOps) get(src []byte) (ts12, []byte, error) {
	if len(src) < 12 {
		return ts12{}, nil, errTruncated
	}
	return loadTS(src), src[12:], nil
}

func (o *tsOps) write(out *engine.OutColumn, vals []ts12, nulls []bool, pick []int32) {
	eachPicked(out, len(vals), nulls, pick, func(j, p int) { // a NULL's slot stays zero
		d := out.Data[12*j : 12*j+12]
		binary.LittleEndian.PutUint64(d, uint64(vals[p].ms))
		binary.LittleEndian.PutUint32(d[8:], uint32(vals[p].ns))
	})
}

func loadTS(b []byte) ts12 {
	return ts12{ms: int64(binary.LittleEndian.Uint64(b)), ns: int32(binary.LittleEndian.Uint32(b[8:]))}
}
