package engine

import (
	"math"
	"testing"
)

func TestExpired(t *testing.T) {
	p := TTL{Ms: 100}
	cases := []struct {
		last, now int64
		want      bool
	}{
		{0, 99, false},
		{0, 100, true}, // lastWrite + ttl <= now: expiry is inclusive
		{0, 101, true},
		{50, 149, false},
		{math.MaxInt64 - 10, math.MaxInt64 - 1, false}, // saturates, never overflows into the past
		{math.MaxInt64 - 10, math.MaxInt64, true},
		{-100, 0, true},
	}
	for _, c := range cases {
		if got := p.Expired(c.last, c.now); got != c.want {
			t.Errorf("Expired(%d, %d) = %v, want %v", c.last, c.now, got, c.want)
		}
	}
	if (TTL{}).Expired(0, math.MaxInt64) || (TTL{}).Enabled() {
		t.Error("a zero TTL must disable expiry")
	}
}

func TestSweeperCoversAllIDs(t *testing.T) {
	var s Sweeper
	seen := make([]int, 10)
	for range 5 {
		from, to := s.Next(10, 4)
		if to-from > 4 || from < 0 || to > 10 {
			t.Fatalf("step [%d, %d) exceeds budget or bounds", from, to)
		}
		for i := from; i < to; i++ {
			seen[i]++
		}
	}
	for i, n := range seen {
		if n < 1 {
			t.Fatalf("id %d never swept", i)
		}
	}
	if from, to := s.Next(0, 4); from != to {
		t.Fatal("empty id space must yield an empty step")
	}
	s = Sweeper{next: 9}
	if from, to := s.Next(5, 4); from != 0 || to != 4 {
		t.Fatalf("shrunken id space must wrap: got [%d, %d)", from, to)
	}
}
