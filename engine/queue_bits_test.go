package engine

import (
	"math/rand/v2"
	"testing"
)

// TestAppendBits checks appendBits, byte-aligned fast paths included, against one bit at a time:
// random sources with garbage around the run, random offsets on both sides, and the invariant
// that the bits past the appended ones stay zero.
func TestAppendBits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		have, from, n := r.IntN(40), r.IntN(40), r.IntN(80)
		if r.IntN(3) == 0 {
			have, from = have&^7, from&^7
		}
		dst := make([]byte, (have+7)/8)
		want := make([]bool, have+n)
		for k := range have {
			if r.IntN(2) == 0 {
				dst[k>>3] |= 1 << (k & 7)
				want[k] = true
			}
		}
		var src []byte
		ones := r.IntN(2) == 0
		if r.IntN(4) != 0 {
			src = make([]byte, (from+n+7)/8+r.IntN(3))
			for i := range src {
				src[i] = byte(r.Uint32()) // garbage outside [from, from+n) too
			}
		}
		for j := range n {
			if src == nil {
				want[have+j] = ones
			} else {
				k := from + j
				want[have+j] = src[k>>3]&(1<<(k&7)) != 0
			}
		}
		got := appendBits(dst, have, src, from, n, ones)
		for k := range len(got) * 8 {
			bit := got[k>>3]&(1<<(k&7)) != 0
			if k < have+n && bit != want[k] || k >= have+n && bit {
				t.Fatalf("have %d from %d n %d src nil %v ones %v: bit %d is %v", have, from, n, src == nil, ones, k, bit)
			}
		}
	}
}
