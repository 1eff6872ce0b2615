package agg

import (
	"encoding/json"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/shopspring/decimal"
)

// AVG's DECIMAL division written with github.com/shopspring/decimal, the decimal library the
// design names, to measure it against the hand-written values.DecAvg (docs/dependencies.md,
// "Decimal arithmetic"). Both must give Flink's bytes: DecimalDataUtils.divide(sum, count, 38, S) =
// fromBigDecimal(sum.divide(count, MathContext(38, HALF_UP)), 38, S).

var bigOne = big.NewInt(1)

// decAvgLib is values.DecAvg through shopspring/decimal: sum is a DECIMAL(38, s), the result a
// DECIMAL(38, s+up), ok false for Flink's NULL.
func decAvgLib(sum values.Dec128, count int64, s, up int) (values.Dec128, bool) {
	x := decimal.NewFromBigInt(bigOf(sum), -int32(s))
	c := decimal.NewFromInt(count)
	if x.IsZero() {
		return values.Dec128{}, true
	}
	// The exact quotient's decimal exponent e (10^e <= |x/c| < 10^(e+1)) decides where 38
	// significant digits end: 37 - e places after the point.
	ax, ac := x.Abs(), c.Abs()
	e := (ax.NumDigits() + int(ax.Exponent())) - (ac.NumDigits() + int(ac.Exponent()))
	if ax.LessThan(ac.Mul(decimal.New(1, int32(e)))) {
		e--
	}
	q := x.DivRound(c, int32(37-e)) // HALF_UP (away from zero) to 38 significant digits
	q = q.Round(int32(s + up))      // then HALF_UP to the result scale
	u := q.Coefficient()
	if new(big.Int).Abs(u).Cmp(new(big.Int).Sub(pow10Big(38), bigOne)) > 0 { // precision() > 38
		return values.Dec128{}, false
	}
	var buf [16]byte
	enginetest.PutDecimal128(buf[:], u)
	return values.LoadDec(buf[:]), true
}

// TestDecimalAvgLibMatchesFlink checks the library version against Flink's own vectors and
// against values.DecAvg on random operands, so the benchmark compares two correct implementations.
func TestDecimalAvgLibMatchesFlink(t *testing.T) {
	n := 0
	for i, v := range readJSONL[decVector](t, "testdata/decimal_vectors.jsonl") {
		if v.Op != "avg" {
			continue
		}
		count, err := strconv.ParseInt(v.N, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := decAvgLib(decOf(t, mustBig(t, v.A)), count, v.S, max(6, v.S)-v.S)
		var s string
		null := v.R == nil || string(*v.R) == "null"
		if !null {
			if err := json.Unmarshal(*v.R, &s); err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case null && ok:
			t.Fatalf("vector %d %+v: library gives %v, Flink null", i, v, bigOf(got))
		case !null && (!ok || bigOf(got).Cmp(mustBig(t, s)) != 0):
			t.Fatalf("vector %d %+v: library gives %v %v, Flink %s", i, v, bigOf(got), ok, s)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("only %d avg vectors", n)
	}
	r := rand.New(rand.NewPCG(6, 6))
	for range 20000 {
		s := r.IntN(39)
		sum := decOf(t, randomDecimal(r, engine.Type{ID: engine.Decimal, Precision: 38, Scale: s}, r.IntN(100), 100))
		count := []int64{1, -1, 3, 7, 1 << 40, r.Int64N(1_000_000) + 1, -r.Int64N(1000) - 1}[r.IntN(7)]
		want, wok := values.DecAvg(sum, count, max(6, s)-s)
		got, gok := decAvgLib(sum, count, s, max(6, s)-s)
		if wok != gok || (wok && want != got) {
			t.Fatalf("avg(%v at scale %d, %d): library %v %v, decAvg %v %v", bigOf(sum), s, count, bigOf(got), gok, bigOf(want), wok)
		}
	}
}

// BenchmarkDecimalAvgDivision measures AVG's value over DECIMAL(18, 2) sums (the shape of
// BenchmarkGroupAggregateDecimalAvg): the hand-written 128-bit division against shopspring.
func BenchmarkDecimalAvgDivision(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1024
	sums, counts := make([]values.Dec128, n), make([]int64, n)
	for i := range sums {
		sums[i] = decOf(b, big.NewInt(r.Int64N(100_000_000*64)))
		counts[i] = 1 + r.Int64N(64)
	}
	b.Run("impl=hand", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			values.DecAvg(sums[i%n], counts[i%n], 4)
			i++
		}
	})
	b.Run("impl=shopspring", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			decAvgLib(sums[i%n], counts[i%n], 2, 4)
			i++
		}
	})
}
