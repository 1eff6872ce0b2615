package values

import (
	"encoding/binary"
	"math/bits"
)

// 128-bit decimal arithmetic, allocation-free, exactly as Flink computes DECIMAL aggregates.
//
// A DECIMAL(p, s) value is its unscaled integer (value × 10^s); every value Flink can hold has
// |unscaled| < 10^38 < 2^127, so a 128-bit two's-complement integer holds it, and Ferry's Arrow
// columns carry it as 16 bytes of little-endian two's complement (Arrow's decimal128). Sums live
// in DECIMAL(38, s) (LogicalTypeMerging.findSumAggType), so they keep the argument's scale and
// only their magnitude can overflow. Flink adds with DecimalDataUtils.add(a, b, 38, s):
// BigDecimal addition, then DecimalData.fromBigDecimal, which returns null when the result has
// more than 38 digits; SQL sees NULL. DecAdd and DecSub report that NULL as ok == false. AVG's
// value is DecimalDataUtils.divide, a 38-significant-digit HALF_UP division followed by a
// second HALF_UP rounding to the result scale (DecAvg). docs/group-aggregate.md#decimal-arithmetic
// explains the rules and why this is hand-written rather than a decimal library.

// Dec128 is a 128-bit two's-complement integer: the unscaled value of a DECIMAL.
type Dec128 struct {
	lo uint64
	hi int64
}

// pow10u64[i] is 10^i, for i <= 19.
var pow10u64 [20]uint64

// pow10x128[i] is 10^i as a 128-bit integer, for i <= 38.
var pow10x128 [39]Dec128

func init() {
	p := uint64(1)
	for i := range pow10u64 {
		pow10u64[i] = p
		p *= 10
	}
	pow10x128[0] = Dec128{lo: 1}
	for i := 1; i < len(pow10x128); i++ {
		pow10x128[i] = pow10x128[i-1].mul64(10)
	}
}

// decLimit is 10^38: the least magnitude DECIMAL(38, s) cannot hold.
var decLimit = Dec128{lo: 0x098a224000000000, hi: 0x4b3b4ca85a86c47a}

// LoadDec reads the value at b[0:16].
func LoadDec(b []byte) Dec128 {
	_ = b[15]
	return Dec128{lo: binary.LittleEndian.Uint64(b), hi: int64(binary.LittleEndian.Uint64(b[8:]))}
}

// StoreDec writes v to b[0:16].
func StoreDec(b []byte, v Dec128) {
	_ = b[15]
	binary.LittleEndian.PutUint64(b, v.lo)
	binary.LittleEndian.PutUint64(b[8:], uint64(v.hi))
}

func (a Dec128) neg() Dec128 {
	hi := ^a.hi
	if a.lo == 0 {
		hi++
	}
	return Dec128{lo: -a.lo, hi: hi}
}

// Cmp is a's order against b: -1, 0 or 1 (DecimalData.compareTo within one type).
func (a Dec128) Cmp(b Dec128) int {
	switch {
	case a.hi < b.hi:
		return -1
	case a.hi > b.hi:
		return 1
	case a.lo < b.lo:
		return -1
	case a.lo > b.lo:
		return 1
	}
	return 0
}

// mul64 returns a × m for a non-negative a whose product fits.
func (a Dec128) mul64(m uint64) Dec128 {
	h, l := bits.Mul64(a.lo, m)
	return Dec128{lo: l, hi: int64(uint64(a.hi)*m + h)}
}

// fits38 reports whether |a| < 10^38: whether fromBigDecimal(a, 38, s) is not null.
func (a Dec128) fits38() bool {
	if a.hi >= 0 {
		return a.Cmp(decLimit) < 0
	}
	return a.neg().Cmp(decLimit) < 0 // a > -2^127 here whenever it could fit
}

// DecAdd is DecimalDataUtils.add(a, b, 38, s) for a and b of scale s: the sum, and false when
// Flink's result is null (more than 38 digits).
func DecAdd(a, b Dec128) (Dec128, bool) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi := a.hi + b.hi + int64(c)
	if (a.hi^hi)&(b.hi^hi) < 0 { // signed overflow: |a + b| >= 2^127 > 10^38
		return Dec128{}, false
	}
	r := Dec128{lo: lo, hi: hi}
	return r, r.fits38()
}

// DecSub is DecimalDataUtils.subtract(a, b, 38, s); see DecAdd.
func DecSub(a, b Dec128) (Dec128, bool) {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi := a.hi - b.hi - int64(c)
	if (a.hi^b.hi)&(a.hi^hi) < 0 {
		return Dec128{}, false
	}
	r := Dec128{lo: lo, hi: hi}
	return r, r.fits38()
}

// decDigits is the number of decimal digits of a non-negative a below 10^38 (0 for 0).
func decDigits(a Dec128) int {
	n := 0
	for n < 38 && a.Cmp(pow10x128[n]) >= 0 {
		n++
	}
	return n
}

// DecAvg is the value of AVG over DECIMAL(p, s) (AvgAggFunction.DecimalAvgAggFunction): the
// sum, a DECIMAL(38, s), divided by the non-zero count, a BIGINT that the division casts to
// DECIMAL(19, 0), with the result type DECIMAL(38, S), S = max(6, s). Flink computes
// DecimalDataUtils.divide(sum, count, 38, S) = fromBigDecimal(sum.divide(count,
// MathContext(38, HALF_UP)), 38, S): the quotient is rounded HALF_UP to 38 significant digits,
// then HALF_UP to scale S, and is null when it then has more than 38 digits. up is S - s.
//
// In integers: with X = |sum| × 10^up and C = |count|, the quotient in units of 10^-S is
// X / C = Q + R/C. The first rounding keeps k = 38 - digits(Q) fractional digits; the second
// rounds Q + round_k(R/C) to an integer, going up when round_k(R/C) >= 1/2, that is when
// 2R >= C (plain HALF_UP) or 10^k × (C - 2R) <= C. The latter needs C - 2R >= 1 and
// C < 2^63 < 10^19, so only 1 <= k <= 18 can double-round. Allocation-free.
func DecAvg(sum Dec128, count int64, up int) (Dec128, bool) {
	neg := sum.hi < 0
	if neg {
		sum = sum.neg()
	}
	c := uint64(count)
	if count < 0 {
		neg = !neg
		c = -c
	}
	// X = |sum| × 10^up, up to 192 bits: (x2, x1, x0).
	m := pow10u64[up]
	h0, x0 := bits.Mul64(sum.lo, m)
	h1, x1 := bits.Mul64(uint64(sum.hi), m)
	x1, carry := bits.Add64(x1, h0, 0)
	x2 := h1 + carry
	// Q, R = X divmod C.
	if x2 >= c { // Q >= 2^128 > 10^38
		return Dec128{}, false
	}
	q1, r := bits.Div64(x2, x1, c)
	q0, r := bits.Div64(r, x0, c)
	q := Dec128{lo: q0, hi: int64(q1)}
	if q1 >= 1<<63 || q.Cmp(decLimit) >= 0 {
		return Dec128{}, false
	}
	roundUp := r >= c-r
	if !roundUp && r > 0 {
		if d := decDigits(q); d >= 20 && d <= 37 {
			h, l := bits.Mul64(c-2*r, pow10u64[38-d])
			roundUp = h == 0 && l <= c
		}
	}
	if roundUp {
		q.lo++
		if q.lo == 0 {
			q.hi++
		}
		if q.Cmp(decLimit) >= 0 {
			return Dec128{}, false
		}
	}
	if neg {
		q = q.neg()
	}
	return q, true
}

// PutDec appends the 16 bytes of v (a snapshot payload's value).
func PutDec(dst []byte, v Dec128) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, v.lo)
	return binary.LittleEndian.AppendUint64(dst, uint64(v.hi))
}

// GetDec reads the value PutDec wrote.
func GetDec(src []byte) (Dec128, []byte, error) {
	if len(src) < 16 {
		return Dec128{}, nil, ErrTruncated
	}
	return LoadDec(src), src[16:], nil
}
