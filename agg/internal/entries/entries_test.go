package entries

import (
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
)

// TestCountsAgainstMaps runs random inserts, finds and removes on a Counts of 50 groups against
// one Go map per group: chains, the index, the free list and Len stay consistent.
func TestCountsAgainstMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const groups = 50
	m := NewCounts[int64]()
	m.GrowGroups(groups)
	ref := make([]map[int64]int64, groups)
	for g := range ref {
		ref[g] = map[int64]int64{}
	}
	hash := func(g int32, v int64) uint64 { return uint64(v)*0x9e3779b97f4a7c15 ^ uint64(g) }
	find := func(g int32, v int64) int32 {
		h := hash(g, v)
		for e, pos := m.Probe(h, m.Home(h)); e >= 0; e, pos = m.Probe(h, pos) {
			if m.Hashes[e] == h && m.Group[e] == g && m.Val[e] == v {
				return e
			}
		}
		return -1
	}
	for range 20000 {
		g, v := int32(r.IntN(groups)), r.Int64N(20)
		e := find(g, v)
		if (e >= 0) != (ref[g][v] != 0) {
			t.Fatalf("group %d value %d: found %d, reference count %d", g, v, e, ref[g][v])
		}
		switch {
		case e < 0:
			m.Insert(g, v, hash(g, v), 1)
			ref[g][v] = 1
		case r.IntN(2) == 0:
			if got := m.Remove(e); got != v {
				t.Fatalf("removed %d, want %d", got, v)
			}
			delete(ref[g], v)
		default:
			m.Cnt[e]++
			ref[g][v]++
		}
	}
	total := 0
	for g := range ref {
		total += len(ref[g])
		if n := m.Entries(int32(g)); n != len(ref[g]) {
			t.Fatalf("group %d: %d entries, want %d", g, n, len(ref[g]))
		}
		for e := m.Head[g]; e >= 0; e = m.Next[e] {
			if ref[g][m.Val[e]] != m.Cnt[e] {
				t.Fatalf("group %d value %d: count %d, want %d", g, m.Val[e], m.Cnt[e], ref[g][m.Val[e]])
			}
		}
	}
	if m.Len() != total {
		t.Fatalf("Len %d, want %d", m.Len(), total)
	}
}

// TestOccurrencesOldest checks arrival order: the oldest equal entry goes first, Head is the
// newest and Tail the oldest entry of a group.
func TestOccurrencesOldest(t *testing.T) {
	m := NewOccurrences[string]()
	m.GrowGroups(1)
	h := func(string) uint64 { return 7 } // one hash for all: the values tell entries apart
	a1 := m.Push(0, "a", h("a"))
	m.Push(0, "b", h("b"))
	a2 := m.Push(0, "a", h("a"))
	eq := func(x, y string) bool { return x == y }
	never := func(int32) bool { return false }
	if e := m.Oldest(0, "a", h("a"), eq, never); e != a1 {
		t.Fatalf("oldest a: %d, want %d", e, a1)
	}
	m.Remove(a1)
	if e := m.Oldest(0, "a", h("a"), eq, never); e != a2 {
		t.Fatalf("oldest a after removal: %d, want %d", e, a2)
	}
	if m.Head[0] != a2 || m.Val[m.Tail[0]] != "b" {
		t.Fatalf("head %d tail %d", m.Head[0], m.Tail[0])
	}
}

// TestTableTTL checks per-entry expiry: an entry expires ttl after its last write (Add or
// Touch) at the clock SetNow sets, and SweepExpired removes expired entries only.
func TestTableTTL(t *testing.T) {
	x := NewTable()
	x.EnableTTL(engine.TTL{Ms: 10})
	x.GrowGroups(1)
	x.SetNow(100)
	e1, _ := x.Add(0, 1)
	x.SetNow(105)
	e2, _ := x.Add(0, 2)
	x.SetNow(109)
	x.Touch(e1)
	x.SetNow(115)
	if x.Expired(e1) || !x.Expired(e2) {
		t.Fatalf("at 115: expired %v %v, want false true", x.Expired(e1), x.Expired(e2))
	}
	if !x.Live(0, 115) || x.Live(0, 119) {
		t.Fatal("live: want an entry at 115, none at 119")
	}
	var swept []int32
	hashes := map[int32]uint64{e1: 1, e2: 2}
	x.SweepExpired(115, 100, func(e int32) {
		swept = append(swept, e)
		x.Remove(e, func(e int32) uint64 { return hashes[e] })
	})
	if len(swept) != 1 || swept[0] != e2 || x.Len() != 1 {
		t.Fatalf("swept %v, %d left", swept, x.Len())
	}
}
