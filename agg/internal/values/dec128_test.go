package values

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func bigOf(v Dec128) *big.Int {
	b := new(big.Int).SetInt64(v.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(v.lo)) // low bits are zero after the shift
}

func decOf(t *testing.T, b *big.Int) Dec128 {
	if b.BitLen() > 127 {
		t.Fatalf("%v does not fit 128 bits", b)
	}
	m := new(big.Int).And(b, new(big.Int).SetUint64(math.MaxUint64))
	return Dec128{lo: m.Uint64(), hi: new(big.Int).Rsh(b, 64).Int64()}
}

// TestDec128MatchesBig checks the 128-bit helpers the arithmetic is built from (negation, the
// 38-digit limit, the powers of ten) against math/big on random and boundary operands. agg's
// TestDecimalArithmeticMatchesBig and TestDecimalGoldenVectors check DecAdd, DecSub, DecAvg and
// Cmp against math/big and against Flink's own results.
func TestDec128MatchesBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(38), nil)
	edge := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(-1), new(big.Int).Sub(lim, big.NewInt(1)),
		new(big.Int).Neg(new(big.Int).Sub(lim, big.NewInt(1))), new(big.Int).Set(lim), new(big.Int).Neg(lim),
		new(big.Int).Lsh(big.NewInt(1), 64), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 126), big.NewInt(1)),
		big.NewInt(math.MinInt64)}
	for i := range 200000 {
		var a *big.Int
		if i < len(edge) {
			a = edge[i]
		} else {
			a = new(big.Int).SetUint64(r.Uint64())
			a.Lsh(a, 64).Or(a, new(big.Int).SetUint64(r.Uint64()))
			a.Rsh(a, uint(1+r.IntN(127))) // below 2^127
			if r.IntN(2) == 0 {
				a.Neg(a)
			}
		}
		da := decOf(t, a)
		if bigOf(da).Cmp(a) != 0 || bigOf(da.neg()).Cmp(new(big.Int).Neg(a)) != 0 {
			t.Fatalf("round trip / neg of %v", a)
		}
		if got := da.fits38(); got != (new(big.Int).Abs(a).Cmp(lim) < 0) {
			t.Fatalf("fits38(%v) = %v", a, got)
		}
	}
	for i, p := range pow10x128 {
		if want := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(i)), nil); bigOf(p).Cmp(want) != 0 {
			t.Fatalf("pow10x128[%d] = %v", i, bigOf(p))
		}
	}
	if bigOf(decLimit).Cmp(lim) != 0 {
		t.Fatal("decLimit is not 10^38")
	}
}
