package main

import "math"

// limitSlot is the dense state of one group for the four aggregates: COUNT(*), SUM(price),
// MAX(price) and AVG(price)'s sum and count, in one 40-byte record (one cache line per row).
type limitSlot struct {
	count, sum, max, avgSum, avgCount int64
}

// limitRunner is the limit baseline: the same rows folded into dense arrays indexed by a
// group id computed before timing. What it leaves out is what the operator adds on top of the
// folds themselves: key encoding and hashing, key groups, the hash lookup, the changelog.
type limitRunner struct {
	slots []limitSlot
	gids  []int32
	price []int64
}

func newLimit(keys int, ring *bids) *limitRunner {
	l := &limitRunner{slots: make([]limitSlot, keys), gids: make([]int32, ring.n), price: ring.price}
	for i := range l.slots {
		l.slots[i].max = math.MinInt64 // touches every page before timing
	}
	for i, a := range ring.auction {
		l.gids[i] = int32(a - firstAuctionID)
	}
	return l
}

func (l *limitRunner) run(size, count int, pos *int) error {
	for range count {
		if *pos+size > len(l.gids) {
			*pos = 0
		}
		l.fold(l.gids[*pos:*pos+size], l.price[*pos:*pos+size])
		*pos += size
	}
	return nil
}

func (l *limitRunner) fold(gids []int32, price []int64) {
	slots := l.slots
	price = price[:len(gids)]
	for i, g := range gids {
		s := &slots[g]
		p := price[i]
		s.count++
		s.sum += p
		if p > s.max {
			s.max = p
		}
		s.avgSum += p
		s.avgCount++
	}
}

// total is the number of rows folded so far (a check that the loop ran).
func (l *limitRunner) total() int64 {
	var n int64
	for i := range l.slots {
		n += l.slots[i].count
	}
	return n
}
