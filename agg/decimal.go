package agg

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/ferrystream/ferry/engine"
)

// DECIMAL aggregates. A DECIMAL(p, s) value is its unscaled integer (value × 10^s), carried in
// columns as 16 bytes of little-endian two's complement; every value Flink can hold has
// |unscaled| < 10^38. Sums live in DECIMAL(38, s) (LogicalTypeMerging.findSumAggType), so they
// keep the argument's scale and only their magnitude can overflow: Flink adds with
// DecimalDataUtils.add(a, b, 38, s), i.e. BigDecimal addition and then
// DecimalData.fromBigDecimal, which returns null when the result has more than 38 digits. The
// kernels do the same in 128-bit integers, with no allocation per row.

// dec128 is a 128-bit two's-complement integer: the unscaled value of a DECIMAL.
type dec128 struct {
	lo uint64
	hi int64
}

// pow10u64[i] is 10^i, for i <= 19.
var pow10u64 [20]uint64

// pow10x128[i] is 10^i as a 128-bit integer, for i <= 38.
var pow10x128 [39]dec128

func init() {
	p := uint64(1)
	for i := range pow10u64 {
		pow10u64[i] = p
		p *= 10
	}
	pow10x128[0] = dec128{lo: 1}
	for i := 1; i < len(pow10x128); i++ {
		pow10x128[i] = pow10x128[i-1].mul64(10)
	}
}

// decLimit is 10^38: the least magnitude DECIMAL(38, s) cannot hold.
var decLimit = dec128{lo: 0x098a224000000000, hi: 0x4b3b4ca85a86c47a}

// loadDec reads the value at b[0:16].
func loadDec(b []byte) dec128 {
	_ = b[15]
	return dec128{lo: binary.LittleEndian.Uint64(b), hi: int64(binary.LittleEndian.Uint64(b[8:]))}
}

// storeDec writes v to b[0:16].
func storeDec(b []byte, v dec128) {
	_ = b[15]
	binary.LittleEndian.PutUint64(b, v.lo)
	binary.LittleEndian.PutUint64(b[8:], uint64(v.hi))
}

// decValues returns the values buffer of DECIMAL column c for rows [0, n), 16 bytes per row.
func decValues(c *engine.Column, n int) []byte {
	if n == 0 {
		return nil
	}
	return c.Data[c.Offset*16 : (c.Offset+n)*16]
}

func (a dec128) neg() dec128 {
	hi := ^a.hi
	if a.lo == 0 {
		hi++
	}
	return dec128{lo: -a.lo, hi: hi}
}

func (a dec128) cmp(b dec128) int {
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
func (a dec128) mul64(m uint64) dec128 {
	h, l := bits.Mul64(a.lo, m)
	return dec128{lo: l, hi: int64(uint64(a.hi)*m + h)}
}

// fits38 reports whether |a| < 10^38: whether fromBigDecimal(a, 38, s) is not null.
func (a dec128) fits38() bool {
	if a.hi >= 0 {
		return a.cmp(decLimit) < 0
	}
	return a.neg().cmp(decLimit) < 0 // a > -2^127 here whenever it could fit
}

// decAdd is DecimalDataUtils.add(a, b, 38, s) for a and b of scale s: the sum, and false when
// Flink's result is null (more than 38 digits).
func decAdd(a, b dec128) (dec128, bool) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi := a.hi + b.hi + int64(c)
	if (a.hi^hi)&(b.hi^hi) < 0 { // signed overflow: |a + b| >= 2^127 > 10^38
		return dec128{}, false
	}
	r := dec128{lo: lo, hi: hi}
	return r, r.fits38()
}

// decSub is DecimalDataUtils.subtract(a, b, 38, s); see decAdd.
func decSub(a, b dec128) (dec128, bool) {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi := a.hi - b.hi - int64(c)
	if (a.hi^b.hi)&(a.hi^hi) < 0 {
		return dec128{}, false
	}
	r := dec128{lo: lo, hi: hi}
	return r, r.fits38()
}

// decDigits is the number of decimal digits of a non-negative a below 10^38 (0 for 0).
func decDigits(a dec128) int {
	n := 0
	for n < 38 && a.cmp(pow10x128[n]) >= 0 {
		n++
	}
	return n
}

// decAvg is the value of AVG over DECIMAL(p, s) (AvgAggFunction.DecimalAvgAggFunction): the
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
func decAvg(sum dec128, count int64, up int) (dec128, bool) {
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
		return dec128{}, false
	}
	q1, r := bits.Div64(x2, x1, c)
	q0, r := bits.Div64(r, x0, c)
	q := dec128{lo: q0, hi: int64(q1)}
	if q1 >= 1<<63 || q.cmp(decLimit) >= 0 {
		return dec128{}, false
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
		if q.cmp(decLimit) >= 0 {
			return dec128{}, false
		}
	}
	if neg {
		q = q.neg()
	}
	return q, true
}

// putDec appends the 16 bytes of v; getDec reads them back.
func putDec(dst []byte, v dec128) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, v.lo)
	return binary.LittleEndian.AppendUint64(dst, uint64(v.hi))
}

func getDec(src []byte) (dec128, []byte, error) {
	if len(src) < 16 {
		return dec128{}, nil, errTruncated
	}
	return loadDec(src), src[16:], nil
}

// decRowValues is rowValues for DECIMAL results: per row, the value before (2i) and after
// (2i+1) folding. Flink's equaliser compares DECIMAL results with compareTo, which for one
// type is equality of unscaled values.
type decRowValues struct {
	vals  []dec128
	nulls []bool
}

func (v *decRowValues) reset(n int) {
	v.vals = resize(v.vals, 2*n)
	v.nulls = resize(v.nulls, 2*n)
	clear(v.nulls)
}

func (v *decRowValues) record(i int, pv dec128, pn bool, nv dec128, nn bool, changed []bool) {
	v.vals[2*i], v.vals[2*i+1] = pv, nv
	v.nulls[2*i], v.nulls[2*i+1] = pn, nn
	if pn != nn || (!nn && pv != nv) {
		changed[i] = true
	}
}

// differ compares entries a and b as record compares a row's before and after.
func (v *decRowValues) differ(a, b int32) bool {
	return v.nulls[a] != v.nulls[b] || (!v.nulls[b] && v.vals[a] != v.vals[b])
}

func (v *decRowValues) write(out *engine.OutColumn, pick []int32) {
	dst := out.Data[:16*len(pick)]
	for j, p := range pick {
		if v.nulls[p] {
			storeDec(dst[16*j:], dec128{})
			out.SetNull(j)
			continue
		}
		storeDec(dst[16*j:], v.vals[p])
	}
}

// decSumAcc is SUM over DECIMAL(p, s), a DECIMAL(38, s). Without retraction it is
// SumAggFunction.DecimalSumAggFunction: the sum starts NULL, a NULL argument keeps it, and a
// non-NULL argument replaces a NULL sum — including a sum that overflowed to NULL, so the sum
// silently restarts from the next argument. With retraction it is DecimalSumWithRetract-
// AggFunction: a count of non-NULL arguments is kept too, a retraction subtracts (from 0 when
// the sum is NULL), and the value is NULL when the count is 0.
type decSumAcc struct {
	col     int
	retract bool
	st      []decSumState // per group
	decRowValues
}

type decSumState struct {
	sum dec128
	cnt int64
	has bool // sum is not NULL
}

func (a *decSumAcc) Grow(n int)    { a.st = extend(a.st, n) }
func (a *decSumAcc) Reset(g int32) { a.st[g] = decSumState{} }
func (a *decSumAcc) Bytes() int64  { return int64(cap(a.st)) * 32 }

func (a *decSumAcc) value(s *decSumState) (dec128, bool) {
	if a.retract && s.cnt == 0 {
		return dec128{}, true
	}
	return s.sum, !s.has
}

func (a *decSumAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.decRowValues.reset(in.Len)
	col := &in.Cols[a.col]
	data := decValues(col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := a.value(s)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			v := loadDec(data[16*i:])
			switch {
			case !s.has && d > 0:
				s.sum, s.has = v, true
			case !s.has: // 0 - v
				s.sum, s.has = decSub(dec128{}, v)
			case d > 0:
				s.sum, s.has = decAdd(s.sum, v)
			default:
				s.sum, s.has = decSub(s.sum, v)
			}
			s.cnt += int64(d)
		}
		nv, nn := a.value(s)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *decSumAcc) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	return putVarint(putDec(putBool(dst, s.has), s.sum), s.cnt)
}

func (a *decSumAcc) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.has, src, err = getBool(src); err != nil {
		return nil, err
	}
	if s.sum, src, err = getDec(src); err != nil {
		return nil, err
	}
	s.cnt, src, err = getVarint(src)
	return src, err
}

// decSum0Acc is $SUM0 over DECIMAL(p, s) (Sum0AggFunction.DecimalSum0AggFunction): a
// DECIMAL(38, s) that starts at 0 and ignores NULL arguments. Its accumulator field is
// nullable, and aggDecimalPlus/Minus of a NULL sum is NULL: once the sum overflows it stays
// NULL for the life of the group, so unlike the other $SUM0 kernels the value can be NULL.
type decSum0Acc struct {
	col int
	st  []decSum0State
	decRowValues
}

type decSum0State struct {
	sum  dec128
	null bool // overflowed
}

func (a *decSum0Acc) Grow(n int)    { a.st = extend(a.st, n) }
func (a *decSum0Acc) Reset(g int32) { a.st[g] = decSum0State{} }
func (a *decSum0Acc) Bytes() int64  { return int64(cap(a.st)) * 24 }

func (a *decSum0Acc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.decRowValues.reset(in.Len)
	col := &in.Cols[a.col]
	data := decValues(col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := s.sum, s.null
		if d := act[i]; d != 0 && !s.null && !col.IsNull(i) {
			ok := false
			if d > 0 {
				s.sum, ok = decAdd(s.sum, loadDec(data[16*i:]))
			} else {
				s.sum, ok = decSub(s.sum, loadDec(data[16*i:]))
			}
			s.null = !ok
		}
		a.record(i, pv, pn, s.sum, s.null, changed)
	}
}

func (a *decSum0Acc) Save(dst []byte, g int32) []byte {
	return putDec(putBool(dst, a.st[g].null), a.st[g].sum)
}

func (a *decSum0Acc) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.null, src, err = getBool(src); err != nil {
		return nil, err
	}
	s.sum, src, err = getDec(src)
	return src, err
}

// decAvgAcc is AVG over DECIMAL(p, s) (AvgAggFunction.DecimalAvgAggFunction), for append-only
// and retracting input alike: a DECIMAL(38, s) sum starting at 0 and a BIGINT count of non-NULL
// arguments. As for $SUM0, an overflowed sum is NULL for good (the count still moves). The
// value is NULL when the count is 0 or the sum is NULL, else decAvg: a DECIMAL(38, max(6, s)),
// itself NULL when the quotient needs more than 38 digits at that scale — so for s < 6 any
// average of magnitude >= 10^(32+s) reads NULL.
type decAvgAcc struct {
	col int
	up  int // result scale - argument scale
	st  []decAvgState
	decRowValues
}

// decAvgState is one group's accumulator and, since a division costs more than the rest of a
// row, its current value: avg, valid when has (the zero state reads NULL, as it should).
type decAvgState struct {
	sum  dec128
	cnt  int64
	null bool // the sum overflowed
	has  bool // the value is not NULL
	avg  dec128
}

func (a *decAvgAcc) Grow(n int)    { a.st = extend(a.st, n) }
func (a *decAvgAcc) Reset(g int32) { a.st[g] = decAvgState{} }
func (a *decAvgAcc) Bytes() int64  { return int64(cap(a.st)) * 56 }

// update recomputes the cached value of s from its sum and count.
func (a *decAvgAcc) update(s *decAvgState) {
	s.avg, s.has = dec128{}, false
	if s.cnt != 0 && !s.null {
		s.avg, s.has = decAvg(s.sum, s.cnt, a.up)
	}
}

func (a *decAvgAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.decRowValues.reset(in.Len)
	col := &in.Cols[a.col]
	data := decValues(col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := s.avg, !s.has
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if !s.null {
				ok := false
				if d > 0 {
					s.sum, ok = decAdd(s.sum, loadDec(data[16*i:]))
				} else {
					s.sum, ok = decSub(s.sum, loadDec(data[16*i:]))
				}
				s.null = !ok
			}
			s.cnt += int64(d)
			a.update(s)
		}
		a.record(i, pv, pn, s.avg, !s.has, changed)
	}
}

func (a *decAvgAcc) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	return putVarint(putDec(putBool(dst, s.null), s.sum), s.cnt)
}

func (a *decAvgAcc) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.null, src, err = getBool(src); err != nil {
		return nil, err
	}
	if s.sum, src, err = getDec(src); err != nil {
		return nil, err
	}
	if s.cnt, src, err = getVarint(src); err != nil {
		return nil, err
	}
	a.update(s)
	return src, nil
}

// decMinMaxAcc is MIN or MAX over DECIMAL(p, s) without retraction
// (Min/MaxAggFunction.DecimalMin/MaxAggFunction): the result keeps the argument type, a new
// argument replaces the value when DecimalData.compareTo calls it strictly smaller (larger),
// and retractions are ignored.
type decMinMaxAcc struct {
	col int
	max bool
	st  []decMinMaxState
	decRowValues
}

type decMinMaxState struct {
	val dec128
	has bool
}

func (a *decMinMaxAcc) Grow(n int)    { a.st = extend(a.st, n) }
func (a *decMinMaxAcc) Reset(g int32) { a.st[g] = decMinMaxState{} }
func (a *decMinMaxAcc) Bytes() int64  { return int64(cap(a.st)) * 24 }

func (a *decMinMaxAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.decRowValues.reset(in.Len)
	col := &in.Cols[a.col]
	data := decValues(col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	want := -1 // MIN: replace when v.cmp(val) < 0
	if a.max {
		want = 1
	}
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &a.st[g]
		pv, pn := s.val, !s.has
		if act[i] > 0 && !col.IsNull(i) {
			if v := loadDec(data[16*i:]); pn || v.cmp(pv) == want {
				s.val, s.has = v, true
			}
		}
		a.record(i, pv, pn, s.val, !s.has, changed)
	}
}

func (a *decMinMaxAcc) Save(dst []byte, g int32) []byte {
	return putDec(putBool(dst, a.st[g].has), a.st[g].val)
}

func (a *decMinMaxAcc) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	var err error
	if s.has, src, err = getBool(src); err != nil {
		return nil, err
	}
	s.val, src, err = getDec(src)
	return src, err
}

// decMinMaxRetractAcc is Min/MaxWithRetractAggFunction over DECIMAL(p, s), step for step as
// minMaxRetractAcc: the current extreme, mapSize and a value→count multiset whose counts may go
// negative. DecimalData's equals is compareTo, so multiset identity is the unscaled value.
type decMinMaxRetractAcc struct {
	col     int
	max     bool
	ext     []dec128
	hasExt  []bool
	mapSize []int64
	counts  decCounts
	decRowValues
}

func (a *decMinMaxRetractAcc) Grow(n int) {
	a.ext, a.hasExt, a.mapSize = extend(a.ext, n), extend(a.hasExt, n), extend(a.mapSize, n)
	a.counts.growGroups(n)
}

func (a *decMinMaxRetractAcc) Reset(g int32) {
	a.ext[g], a.hasExt[g], a.mapSize[g] = dec128{}, false, 0
	a.counts.clearGroup(g)
}

func (a *decMinMaxRetractAcc) Bytes() int64 {
	return int64(cap(a.ext))*16 + int64(cap(a.hasExt)) + int64(cap(a.mapSize))*8 + a.counts.bytes()
}

func (a *decMinMaxRetractAcc) value(g int32) (dec128, bool) {
	if a.mapSize[g] > 0 && a.hasExt[g] {
		return a.ext[g], false
	}
	return dec128{}, true
}

// beyond reports whether v would replace ext: ext.compareTo(v) > 0 for MIN, < 0 for MAX.
func (a *decMinMaxRetractAcc) beyond(ext, v dec128) bool {
	if a.max {
		return ext.cmp(v) < 0
	}
	return ext.cmp(v) > 0
}

func (a *decMinMaxRetractAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.decRowValues.reset(in.Len)
	col := &in.Cols[a.col]
	data := decValues(col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv, pn := a.value(g)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if v := loadDec(data[16*i:]); d > 0 {
				a.accumulate(g, v)
			} else {
				a.retract(g, v)
			}
		}
		nv, nn := a.value(g)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *decMinMaxRetractAcc) accumulate(g int32, v dec128) {
	if a.mapSize[g] == 0 || a.beyond(a.ext[g], v) {
		a.ext[g], a.hasExt[g] = v, true
	}
	m := &a.counts
	e := m.find(g, v)
	var c int64 = 1
	if e >= 0 {
		c = m.cnt[e] + 1
	}
	switch {
	case c == 0: // a -1 brought back to 0
		m.remove(e)
	case e >= 0:
		m.cnt[e] = c
	default:
		m.insert(g, v, c)
	}
	if c == 1 {
		a.mapSize[g]++
	}
}

func (a *decMinMaxRetractAcc) retract(g int32, v dec128) {
	m := &a.counts
	e := m.find(g, v)
	var c int64 = -1
	if e >= 0 {
		c = m.cnt[e] - 1
	}
	if c != 0 {
		if e >= 0 {
			m.cnt[e] = c
		} else {
			m.insert(g, v, c)
		}
		return // negative counts are not part of mapSize
	}
	m.remove(e)
	a.mapSize[g]--
	if a.mapSize[g] == 0 {
		a.hasExt[g] = false
		return
	}
	if a.hasExt[g] && v == a.ext[g] {
		a.rescan(g)
	}
}

// rescan is Flink's updateMin/updateMax: the extreme over every value of the group, negative
// counts included.
func (a *decMinMaxRetractAcc) rescan(g int32) {
	m := &a.counts
	found := false
	for e := m.head[g]; e >= 0; e = m.next[e] {
		if v := m.val[e]; !found || a.beyond(a.ext[g], v) {
			a.ext[g], found = v, true
		}
	}
	if !found {
		a.mapSize[g], a.hasExt[g] = 0, false
	}
}

func (a *decMinMaxRetractAcc) Save(dst []byte, g int32) []byte {
	dst = putBool(dst, a.hasExt[g])
	dst = putDec(dst, a.ext[g])
	dst = putVarint(dst, a.mapSize[g])
	m := &a.counts
	n := 0
	for e := m.head[g]; e >= 0; e = m.next[e] {
		n++
	}
	dst = putVarint(dst, int64(n))
	for e := m.head[g]; e >= 0; e = m.next[e] {
		dst = putVarint(putDec(dst, m.val[e]), m.cnt[e])
	}
	return dst
}

func (a *decMinMaxRetractAcc) Load(src []byte, g int32) ([]byte, error) {
	var err error
	if a.hasExt[g], src, err = getBool(src); err != nil {
		return nil, err
	}
	if a.ext[g], src, err = getDec(src); err != nil {
		return nil, err
	}
	if a.mapSize[g], src, err = getVarint(src); err != nil {
		return nil, err
	}
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src))/17 {
		return nil, fmt.Errorf("%w: value count %d out of range", engine.ErrData, n)
	}
	for range n {
		var v dec128
		var c int64
		if v, src, err = getDec(src); err != nil {
			return nil, err
		}
		if c, src, err = getVarint(src); err != nil {
			return nil, err
		}
		if c == 0 || a.counts.find(g, v) >= 0 {
			return nil, fmt.Errorf("%w: invalid value count entry", engine.ErrData)
		}
		a.counts.insert(g, v, c)
	}
	return src, nil
}

// decCounts is valueCounts for DECIMAL values: a pointer-free per-group multiset of unscaled
// values with signed counts (the MapView<DecimalData, Long> of Min/MaxWithRetractAggFunction).
type decCounts struct {
	groupEntries
	val []dec128
	cnt []int64
}

func newDecCounts() decCounts { return decCounts{groupEntries: newGroupEntries()} }

// decHash hashes an unscaled value within group g.
func decHash(g int32, v dec128) uint64 {
	h := v.lo*0x9e3779b97f4a7c15 ^ uint64(v.hi)*0xbf58476d1ce4e5b9 ^ uint64(uint32(g))*0xc2b2ae3d27d4eb4f
	h ^= h >> 29
	h *= 0x94d049bb133111eb
	return h ^ h>>32
}

func (m *decCounts) hash(e int32) uint64 { return decHash(m.group[e], m.val[e]) }

func (m *decCounts) find(g int32, v dec128) int32 {
	if m.used == 0 {
		return -1
	}
	mask := len(m.slots) - 1
	for i := int(decHash(g, v)) & mask; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return -1
		}
		if e := s - 1; m.group[e] == g && m.val[e] == v {
			return e
		}
	}
}

// insert adds value v with count c to group g; v must not be present.
func (m *decCounts) insert(g int32, v dec128, c int64) {
	e, appended := m.add(g, decHash(g, v), m.hash)
	if appended {
		m.val = append(m.val, v)
		m.cnt = append(m.cnt, c)
	} else {
		m.val[e], m.cnt[e] = v, c
	}
}

func (m *decCounts) remove(e int32) { m.groupEntries.remove(e, m.hash) }

func (m *decCounts) clearGroup(g int32) {
	for m.head[g] >= 0 {
		m.remove(m.head[g])
	}
}

func (m *decCounts) bytes() int64 {
	return m.groupEntries.bytes() + int64(cap(m.val))*16 + int64(cap(m.cnt))*8
}

// decimalCall builds the accumulator of fn over a DECIMAL argument of type arg, and the result
// type Flink's planner declares: SUM and $SUM0 give DECIMAL(38, s) (findSumAggType), AVG
// DECIMAL(38, max(6, s)) (findAvgAggType), MIN and MAX the argument type. Every result is
// nullable: $SUM0 over DECIMAL turns NULL on overflow.
func decimalCall(fn string, col int, arg engine.Type, retract bool) (accumulator, engine.Type) {
	out := engine.Type{ID: engine.Decimal, Precision: 38, Scale: arg.Scale, Nullable: true}
	switch fn {
	case "SUM":
		return &decSumAcc{col: col, retract: retract}, out
	case "SUM0":
		return &decSum0Acc{col: col}, out
	case "AVG":
		out.Scale = max(6, arg.Scale)
		return &decAvgAcc{col: col, up: out.Scale - arg.Scale}, out
	case "MIN", "MAX":
		out.Precision = arg.Precision
		if retract {
			return &decMinMaxRetractAcc{col: col, max: fn == "MAX", counts: newDecCounts()}, out
		}
		return &decMinMaxAcc{col: col, max: fn == "MAX"}, out
	}
	return nil, engine.Type{}
}
