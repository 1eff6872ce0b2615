package values

import (
	"github.com/ferrystream/ferry/engine"
)

// DECIMAL values: a value is its unscaled 128-bit integer (Dec128, dec128.go). The kernels over
// them are the generic ones over DecOps and the DECIMAL forms of $SUM0 and AVG, whose state
// carries the overflow-to-NULL flag (package kernels).

// DecOps is Ops for DECIMAL: DecimalData's compareTo and equals are both the order and
// equality of unscaled values (one type, one scale), and Flink's plus and minus over
// DECIMAL(38, s) turn NULL beyond 38 digits.
type DecOps struct {
	data []byte // bound column, 16 bytes per row from row 0
}

func (o *DecOps) Bind(in *engine.Batch, col int, _ bool) { o.data = DecValues(&in.Cols[col], in.Len) }
func (o *DecOps) Unbind()                                { o.data = nil }
func (o *DecOps) At(i int) Dec128                        { return LoadDec(o.data[16*i:]) }
func (o *DecOps) Keep(v Dec128) Dec128                   { return v }
func (o *DecOps) KeepFrom(_ Ops[Dec128], v Dec128) Dec128 {
	return v
}
func (o *DecOps) Drop(Dec128)                            {}
func (o *DecOps) Less(a, b Dec128) bool                  { return a.Cmp(b) < 0 }
func (o *DecOps) Compare(a, b Dec128) int                { return a.Cmp(b) }
func (o *DecOps) Equal(a, b Dec128) bool                 { return a == b }
func (o *DecOps) Same(a, b Dec128) bool                  { return a == b }
func (o *DecOps) Hash(g int32, v Dec128) uint64          { return valueHash(g, v.lo, uint64(v.hi)) }
func (o *DecOps) Put(dst []byte, v Dec128) []byte        { return PutDec(dst, v) }
func (o *DecOps) Get(src []byte) (Dec128, []byte, error) { return GetDec(src) }
func (o *DecOps) Sparse() bool                           { return false }
func (o *DecOps) Add(a, b Dec128) (Dec128, bool)         { return DecAdd(a, b) }
func (o *DecOps) Sub(a, b Dec128) (Dec128, bool)         { return DecSub(a, b) }
func (o *DecOps) VarBytes([]Dec128, []bool, []int32) int { return 0 }
func (o *DecOps) CompactDue() bool                       { return false }
func (o *DecOps) CompactStart()                          {}
func (o *DecOps) Move(v Dec128) Dec128                   { return v }
func (o *DecOps) CompactEnd()                            {}
func (o *DecOps) Bytes() int64                           { return 0 }
func (o *DecOps) Write(out *engine.OutColumn, vals []Dec128, nulls []bool, pick []int32) {
	WriteFixed(out, vals, nulls, pick)
}

// DecValues returns the values buffer of DECIMAL column c for rows [0, n), 16 bytes per row.
func DecValues(c *engine.Column, n int) []byte {
	if n == 0 {
		return nil
	}
	return c.Data[c.Offset*16 : (c.Offset+n)*16]
}
