package agg

import (
	"github.com/ferrystream/ferry/engine"
)

// DECIMAL aggregates: the value-ops of DECIMAL and the (aggregate, DECIMAL) table. A value is
// its unscaled 128-bit integer (dec128.go); the kernels are the generic ones (sumAcc,
// minMaxAcc, minMaxRetractAcc) over decOps, and the DECIMAL forms of $SUM0 and AVG, whose
// state carries the overflow-to-NULL flag (sum0.go, avg.go).

// decOps is valueOps for DECIMAL: DecimalData's compareTo and equals are both the order and
// equality of unscaled values (one type, one scale), and Flink's plus and minus over
// DECIMAL(38, s) turn NULL beyond 38 digits.
type decOps struct {
	data []byte // bound column, 16 bytes per row from row 0
}

func (o *decOps) bind(in *engine.Batch, col int, _ bool) { o.data = decValues(&in.Cols[col], in.Len) }
func (o *decOps) unbind()                                { o.data = nil }
func (o *decOps) at(i int) dec128                        { return loadDec(o.data[16*i:]) }
func (o *decOps) keep(v dec128) dec128                   { return v }
func (o *decOps) keepFrom(_ valueOps[dec128], v dec128) dec128 {
	return v
}
func (o *decOps) drop(dec128)                            {}
func (o *decOps) less(a, b dec128) bool                  { return a.cmp(b) < 0 }
func (o *decOps) compare(a, b dec128) int                { return a.cmp(b) }
func (o *decOps) equal(a, b dec128) bool                 { return a == b }
func (o *decOps) same(a, b dec128) bool                  { return a == b }
func (o *decOps) hash(g int32, v dec128) uint64          { return valueHash(g, v.lo, uint64(v.hi)) }
func (o *decOps) put(dst []byte, v dec128) []byte        { return putDec(dst, v) }
func (o *decOps) get(src []byte) (dec128, []byte, error) { return getDec(src) }
func (o *decOps) sparse() bool                           { return false }
func (o *decOps) add(a, b dec128) (dec128, bool)         { return decAdd(a, b) }
func (o *decOps) sub(a, b dec128) (dec128, bool)         { return decSub(a, b) }
func (o *decOps) varBytes([]dec128, []bool, []int32) int { return 0 }
func (o *decOps) compactDue() bool                       { return false }
func (o *decOps) compactStart()                          {}
func (o *decOps) move(v dec128) dec128                   { return v }
func (o *decOps) compactEnd()                            {}
func (o *decOps) bytes() int64                           { return 0 }
func (o *decOps) write(out *engine.OutColumn, vals []dec128, nulls []bool, pick []int32) {
	writeFixed(out, vals, nulls, pick)
}

// decValues returns the values buffer of DECIMAL column c for rows [0, n), 16 bytes per row.
func decValues(c *engine.Column, n int) []byte {
	if n == 0 {
		return nil
	}
	return c.Data[c.Offset*16 : (c.Offset+n)*16]
}
