package agg

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/ferrystream/ferry/engine"
)

// The reference model's DECIMAL and VARCHAR aggregates, written from Flink's Java source like
// the rest of reference_test.go and sharing no code with the kernels. DECIMAL values are
// *big.Int unscaled values (enginetest's representation) of the column's scale; arithmetic is
// java.math.BigDecimal's, on big.Int: DecimalDataUtils.add/subtract/divide and
// DecimalData.fromBigDecimal (setScale HALF_UP, then null when precision() > p).

var bigTen = big.NewInt(10)

func pow10Big(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// bdPrecision is BigDecimal.precision(): the digits of the unscaled value, 1 for zero.
func bdPrecision(u *big.Int) int {
	return len(new(big.Int).Abs(u).String())
}

// bdRoundDiv is num / den rounded HALF_UP (ties away from zero) to an integer.
func bdRoundDiv(num, den *big.Int) *big.Int {
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	if rem.Sign() != 0 {
		twice := new(big.Int).Abs(rem)
		twice.Lsh(twice, 1)
		if twice.Cmp(new(big.Int).Abs(den)) >= 0 {
			if (num.Sign() < 0) != (den.Sign() < 0) {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
	}
	return q
}

// bdSetScale is BigDecimal.setScale(to, HALF_UP) of unscaled u at scale from.
func bdSetScale(u *big.Int, from, to int) *big.Int {
	if to >= from {
		return new(big.Int).Mul(u, pow10Big(to-from))
	}
	return bdRoundDiv(u, pow10Big(from-to))
}

// fromBigDecimal is DecimalData.fromBigDecimal(bd, p, s) for bd = u × 10^-scale: nil for null.
func fromBigDecimal(u *big.Int, scale, p, s int) *big.Int {
	r := bdSetScale(u, scale, s)
	if bdPrecision(r) > p {
		return nil
	}
	return r
}

// bdDivide is BigDecimal.divide(divisor, new MathContext(38, HALF_UP)) for x = xu × 10^-xs and
// y = yu × 10^-ys: the exact quotient rounded HALF_UP to 38 significant digits, returned as an
// unscaled value and its scale.
func bdDivide(xu *big.Int, xs int, yu *big.Int, ys int) (*big.Int, int) {
	num := new(big.Int).Mul(xu, pow10Big(ys))
	den := new(big.Int).Mul(yu, pow10Big(xs))
	if num.Sign() == 0 {
		return new(big.Int), 0
	}
	// e: 10^e <= |num/den| < 10^(e+1).
	an, ad := new(big.Int).Abs(num), new(big.Int).Abs(den)
	atLeast := func(e int) bool { // |num/den| >= 10^e
		if e >= 0 {
			return an.Cmp(new(big.Int).Mul(ad, pow10Big(e))) >= 0
		}
		return new(big.Int).Mul(an, pow10Big(-e)).Cmp(ad) >= 0
	}
	e := len(an.String()) - len(ad.String())
	for !atLeast(e) {
		e--
	}
	for atLeast(e + 1) {
		e++
	}
	scale := 37 - e // |q| × 10^scale has 38 integer digits
	if scale >= 0 {
		num.Mul(num, pow10Big(scale))
	} else {
		den.Mul(den, pow10Big(-scale))
	}
	return bdRoundDiv(num, den), scale
}

// javaAvgDecimal is the value of AvgAggFunction.DecimalAvgAggFunction: cast(sum / count) with
// the division at DECIMAL(38, max(6, s)), the BIGINT count as DECIMAL(19, 0).
func javaAvgDecimal(sum *big.Int, s int, count int64) *big.Int {
	q, qs := bdDivide(sum, s, big.NewInt(count), 0)
	return fromBigDecimal(q, qs, 38, max(6, s))
}

// refDecSum is DecimalSumAggFunction, or DecimalSumWithRetractAggFunction when withRetract.
type refDecSum struct {
	s           int
	withRetract bool
	sum         *big.Int // nil is NULL
	count       int64
}

func (r *refDecSum) accumulate(v any) {
	if v == nil {
		return
	}
	if r.sum == nil {
		r.sum = v.(*big.Int)
	} else {
		r.sum = fromBigDecimal(new(big.Int).Add(r.sum, v.(*big.Int)), r.s, 38, r.s)
	}
	r.count++
}

func (r *refDecSum) retract(v any) {
	if v == nil {
		return
	}
	if r.sum == nil { // aggDecimalMinus(literal 0, x)
		r.sum = fromBigDecimal(new(big.Int).Neg(v.(*big.Int)), r.s, 38, r.s)
	} else {
		r.sum = fromBigDecimal(new(big.Int).Sub(r.sum, v.(*big.Int)), r.s, 38, r.s)
	}
	r.count--
}

func (r *refDecSum) value() any {
	if (r.withRetract && r.count == 0) || r.sum == nil {
		return nil
	}
	return r.sum
}

// refDecSum0 is DecimalSum0AggFunction: starts at 0; a NULL sum (overflow) stays NULL, since
// aggDecimalPlus of NULL is NULL.
type refDecSum0 struct {
	s   int
	sum *big.Int
}

func (r *refDecSum0) accumulate(v any) {
	if v != nil && r.sum != nil {
		r.sum = fromBigDecimal(new(big.Int).Add(r.sum, v.(*big.Int)), r.s, 38, r.s)
	}
}

func (r *refDecSum0) retract(v any) {
	if v != nil && r.sum != nil {
		r.sum = fromBigDecimal(new(big.Int).Sub(r.sum, v.(*big.Int)), r.s, 38, r.s)
	}
}

func (r *refDecSum0) value() any {
	if r.sum == nil {
		return nil
	}
	return r.sum
}

// refDecAvg is DecimalAvgAggFunction: sum DECIMAL(38, s) from 0 (NULL for good once it
// overflows), count BIGINT.
type refDecAvg struct {
	s     int
	sum   *big.Int
	count int64
}

func (r *refDecAvg) accumulate(v any) {
	if v == nil {
		return
	}
	if r.sum != nil {
		r.sum = fromBigDecimal(new(big.Int).Add(r.sum, v.(*big.Int)), r.s, 38, r.s)
	}
	r.count++
}

func (r *refDecAvg) retract(v any) {
	if v == nil {
		return
	}
	if r.sum != nil {
		r.sum = fromBigDecimal(new(big.Int).Sub(r.sum, v.(*big.Int)), r.s, 38, r.s)
	}
	r.count--
}

func (r *refDecAvg) value() any {
	if r.count == 0 || r.sum == nil {
		return nil
	}
	if v := javaAvgDecimal(r.sum, r.s, r.count); v != nil {
		return v
	}
	return nil
}

// javaString is a VARCHAR value Flink holds as a Java String (BinaryStringData.javaObject set).
type javaString string

// plainString is the UTF-8 string of a string or javaString value.
func plainString(v any) string {
	if j, ok := v.(javaString); ok {
		return string(j)
	}
	return v.(string)
}

// objCompareTo is compareTo of DecimalData (unscaled values of one scale) or BinaryStringData:
// String.compareTo (UTF-16 code units, then length) when both hold a Java String, else unsigned
// bytes, then length — Go's string order.
func objCompareTo(a, b any) int {
	if x, ok := a.(*big.Int); ok {
		return x.Cmp(b.(*big.Int))
	}
	x, xj := a.(javaString)
	y, yj := b.(javaString)
	if xj && yj {
		return slices.Compare(utf16.Encode([]rune(string(x))), utf16.Encode([]rune(string(y))))
	}
	return strings.Compare(plainString(a), plainString(b))
}

// objKey is the identity of a MapView key: DecimalData.equals (compareTo == 0) or the bytes.
func objKey(v any) string {
	if x, ok := v.(*big.Int); ok {
		return "d" + x.String()
	}
	return "s" + plainString(v)
}

// objValue is the output value of a DECIMAL or VARCHAR extreme.
func objValue(v any) any {
	if j, ok := v.(javaString); ok {
		return string(j)
	}
	return v
}

// refObjMinMax is Min/MaxAggFunction over DECIMAL or VARCHAR (retract does nothing).
type refObjMinMax struct {
	max bool
	v   any
}

func (r *refObjMinMax) accumulate(v any) {
	if v == nil {
		return
	}
	if r.v == nil || (r.max && objCompareTo(v, r.v) > 0) || (!r.max && objCompareTo(v, r.v) < 0) {
		r.v = v
	}
}
func (r *refObjMinMax) retract(any) {}
func (r *refObjMinMax) value() any  { return objValue(r.v) }

// refObjMinMaxRetract is Min/MaxWithRetractAggFunction over DECIMAL or VARCHAR.
type refObjMinMaxRetract struct {
	max     bool
	ext     any
	mapSize int64
	keys    map[string]any
	counts  map[string]int64
	at      map[string]int64 // with TTL: each entry's last write
	clock   *refClock
}

// get is the MapView's get of k's count: an expired entry reads as absent and is deleted.
func (r *refObjMinMaxRetract) get(k string) int64 {
	if refExpired(r.clock, r.at, k) {
		r.remove(k)
	}
	return r.counts[k]
}

// put is the MapView's put of k's count (v the value, kept when k is present: HashMap.put keeps
// an existing key object).
func (r *refObjMinMaxRetract) put(k string, v any, count int64) {
	if _, ok := r.keys[k]; !ok {
		r.keys[k] = v
	}
	r.counts[k] = count
	refStamp(r.clock, r.at, k)
}

func (r *refObjMinMaxRetract) remove(k string) {
	delete(r.counts, k)
	delete(r.keys, k)
	delete(r.at, k)
}

func (r *refObjMinMaxRetract) better(cur, v any) bool {
	if r.max {
		return objCompareTo(cur, v) < 0
	}
	return objCompareTo(cur, v) > 0
}

func (r *refObjMinMaxRetract) accumulate(v any) {
	if v == nil {
		return
	}
	if r.mapSize == 0 || r.better(r.ext, v) {
		r.ext = v
	}
	k := objKey(v)
	count := r.get(k) + 1
	if count == 0 {
		r.remove(k)
	} else {
		r.put(k, v, count)
	}
	if count == 1 {
		r.mapSize++
	}
}

func (r *refObjMinMaxRetract) retract(v any) {
	if v == nil {
		return
	}
	k := objKey(v)
	count := r.get(k) - 1
	if count != 0 {
		r.put(k, v, count)
		return
	}
	r.remove(k)
	r.mapSize--
	if r.mapSize == 0 {
		r.ext = nil
		return
	}
	if r.ext != nil && objKey(v) == objKey(r.ext) {
		has := false
		for kk, key := range r.keys {
			if refExpired(r.clock, r.at, kk) { // the iterator skips and deletes it
				r.remove(kk)
				continue
			}
			if !has || r.better(r.ext, key) {
				r.ext, has = key, true
			}
		}
		if !has {
			r.mapSize, r.ext = 0, nil
		}
	}
}

func (r *refObjMinMaxRetract) value() any {
	if r.mapSize > 0 {
		return objValue(r.ext)
	}
	return nil
}

// refObjAgg returns the model of call c when its argument is DECIMAL or VARCHAR, else nil.
func refObjAgg(spec *Spec, c AggCall) refAgg {
	if len(c.Args) == 0 || c.Func == "COUNT" {
		return nil
	}
	t := spec.InputTypes[c.Args[0]]
	if (t.ID != engine.Decimal && t.ID != engine.Varchar) || c.Func == "LISTAGG" {
		return nil
	}
	switch c.Func {
	case "SUM":
		return &refDecSum{s: t.Scale, withRetract: c.Retract}
	case "SUM0":
		return &refDecSum0{s: t.Scale, sum: new(big.Int)}
	case "AVG":
		return &refDecAvg{s: t.Scale, sum: new(big.Int)}
	case "MIN", "MAX":
		if c.Retract {
			return &refObjMinMaxRetract{max: c.Func == "MAX", keys: map[string]any{}, counts: map[string]int64{}, at: map[string]int64{}}
		}
		return &refObjMinMax{max: c.Func == "MAX"}
	}
	return nil
}

// Random inputs for the randomized scenarios (groupagg_test.go).

// randomArgType draws the type of a new value column for aggregate fn: mostly the numeric
// types, often DECIMAL(p, s) (precision 38 and scales on both sides of 6 favoured), and VARCHAR
// for the functions defined on it.
func randomArgType(r *rand.Rand, fn string) string {
	if fn == "LISTAGG" {
		return "VARCHAR"
	}
	if fn == "WELFORD_M2" {
		return argTypeNames[r.IntN(len(argTypeNames))]
	}
	switch x := r.IntN(20); {
	case x < 9:
		return argTypeNames[r.IntN(len(argTypeNames))]
	case x < 13 && keepsValues(fn):
		return "VARCHAR"
	case x < 15 && keepsValues(fn):
		return []string{"DATE", "TIMESTAMP(3)"}[r.IntN(2)] // days and epoch millis, ordered as integers
	}
	p := []int{38, 38, 38, 37, 30, 19, 18, 10, 5, 1}[r.IntN(10)]
	s := []int{0, 0, 2, 5, 6, 10, p, r.IntN(p + 1)}[r.IntN(8)]
	return fmt.Sprintf("DECIMAL(%d, %d)", p, min(s, p))
}

// argTypeFits reports whether a value column of type typ can feed aggregate fn.
func argTypeFits(fn, typ string) bool {
	if fn == "LISTAGG" {
		return typ == "VARCHAR"
	}
	if fn == "WELFORD_M2" {
		return slices.Contains(argTypeNames, typ)
	}
	return (typ != "VARCHAR" && typ != "DATE" && typ != "TIMESTAMP(3)") || keepsValues(fn)
}

// keepsValues reports whether aggregate fn is defined on any ordered type, not only numbers.
func keepsValues(fn string) bool {
	return fn == "MIN" || fn == "MAX" || fn == "COUNT" || fn == "FIRST_VALUE" || fn == "LAST_VALUE"
}

// randomDecimal draws an unscaled DECIMAL(p, s) value: small values from the pool (repeats for
// MIN/MAX multisets and DISTINCT), ±(10^p - 1), and values around half the limit and near it so
// DECIMAL(38, s) sums overflow to NULL and restart.
func randomDecimal(r *rand.Rand, t engine.Type, pick, pool int) *big.Int {
	lim := new(big.Int).Sub(pow10Big(t.Precision), big.NewInt(1))
	v := big.NewInt(int64(pick) - int64(pool/2))
	switch r.IntN(12) {
	case 0:
		return lim
	case 1:
		return new(big.Int).Neg(lim)
	case 2, 3: // around ±lim/2 (two of them overflow at precision 38)
		h := new(big.Int).Rsh(lim, 1)
		if r.IntN(2) == 0 {
			h.Neg(h)
		}
		return h.Add(h, v)
	case 4: // just under the limit, down by a pool value
		h := new(big.Int).Sub(lim, new(big.Int).Abs(v))
		if r.IntN(2) == 0 {
			h.Neg(h)
		}
		return h
	}
	if t.Precision > 18 && r.IntN(2) == 0 {
		v.Mul(v, pow10Big(t.Precision-3))
	}
	if new(big.Int).Abs(v).Cmp(lim) > 0 {
		v.Mod(v, new(big.Int).Add(lim, big.NewInt(1)))
	}
	return v
}

// randomString draws a VARCHAR value: empty strings, prefixes of each other, NUL, multi-byte
// and supplementary-plane characters, and code points where UTF-8 byte order and UTF-16 order
// disagree (U+E000..U+FFFF sort after the supplementary planes in UTF-16, before in UTF-8).
func randomString(pick int) string {
	words := []string{"", "a", "ab", "abc", "b", "\x00", "a\x00", "é", "日本語", "😀", "😀x", "\ue000",
		"\uffff", "\U0010ffff", "\u07ff", "\u0800", "Z", strings.Repeat("long", 9)}
	w := words[pick%len(words)]
	if k := pick / len(words); k > 0 {
		w += fmt.Sprint(k)
	}
	return w
}
