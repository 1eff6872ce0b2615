package javamap

import (
	"bufio"
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/ferrystream/ferry/internal/javahash"
)

// longNode is a node of a HashMap<Long, ?>.
type longNode struct {
	e Entry[longNode]
	t int64
}

func (n *longNode) Entry() *Entry[longNode] { return &n.e }
func (n *longNode) KeyEquals(t int64) bool  { return n.t == t }
func (n *longNode) Compare(o *longNode) int { return cmp.Compare(n.t, o.t) }

type longMap = Map[int64, longNode, *longNode]

// TestHashMapOrderVectors replays golden vectors of java.util.HashMap<Long, ?> produced by JDK 17
// (tests/hashmaporder): puts, iterator removals and remove(key), bins that become trees, split,
// shrink and untreeify (on a split, and in remove(key)), maps of the default and of restored
// capacities; the iteration order must match after every step.
func TestHashMapOrderVectors(t *testing.T) {
	f, err := os.Open("testdata/hashmap-order.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	scenarios, treeBins, treeRemovals := 0, 0, 0
	for sc.Scan() {
		var v struct {
			Initial int               `json:"initial"`
			Ops     []json.RawMessage `json:"ops"`
			Orders  [][]int64         `json:"orders"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		m := &longMap{}
		if v.Initial > 0 {
			m = WithCapacity[int64, longNode](v.Initial)
		}
		for i, raw := range v.Ops {
			var op []any
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			switch op[0] {
			case "p", "d":
				var nums []json.RawMessage // the key as an exact int64, not a float
				if err := json.Unmarshal(raw, &nums); err != nil {
					t.Fatal(err)
				}
				var k int64
				if err := json.Unmarshal(nums[1], &k); err != nil {
					t.Fatal(err)
				}
				b := m.Get(k, LongHashCode(k))
				switch {
				case op[0] == "p" && b == nil:
					m.Insert(&longNode{t: k}, LongHashCode(k))
				case op[0] == "d":
					if m.tree[m.index(b.e.hash)] {
						treeRemovals++
					}
					m.RemoveKey(b)
				}
			case "r":
				mod, rem := int64(op[1].(float64)), int64(op[2].(float64))
				for _, b := range m.AppendOrder(nil) {
					if ((b.t%mod)+mod)%mod == rem {
						m.Remove(b)
					}
				}
			default:
				t.Fatalf("op %s", raw)
			}
			var got []int64
			for _, b := range m.AppendOrder(nil) {
				got = append(got, b.t)
			}
			if !slices.Equal(got, v.Orders[i]) && !(len(got) == 0 && len(v.Orders[i]) == 0) {
				t.Fatalf("scenario %d, op %d %s: order\n got %v\nwant %v", scenarios, i, raw, got, v.Orders[i])
			}
			if m.size != len(got) {
				t.Fatalf("scenario %d, op %d: size %d, %d entries", scenarios, i, m.size, len(got))
			}
			treeBins += m.TreeBins()
		}
		scenarios++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if scenarios < 63 || treeBins == 0 || treeRemovals == 0 {
		t.Fatalf("%d scenarios, %d tree bin observations, %d remove(key) from tree bins: the vectors do not exercise tree bins",
			scenarios, treeBins, treeRemovals)
	}
	t.Logf("%d scenarios, %d tree-bin observations, %d remove(key) from tree bins", scenarios, treeBins, treeRemovals)
}

// TestClear: HashMap.clear empties the map and keeps its table, so keys put afterwards are
// ordered by the bins of the longer table: 17 and 1 share bin 1 of 16 bins (in insertion order)
// but in 32 bins 1 comes before 17.
func TestClear(t *testing.T) {
	var m longMap
	for k := range int64(13) { // 13 > 12 = 16*0.75: the table doubles to 32
		m.Insert(&longNode{t: k}, LongHashCode(k))
	}
	if m.Capacity() != 32 {
		t.Fatalf("capacity %d, want 32", m.Capacity())
	}
	m.Clear()
	if m.Len() != 0 || m.Capacity() != 32 || len(m.AppendOrder(nil)) != 0 {
		t.Fatalf("after Clear: len %d, capacity %d", m.Len(), m.Capacity())
	}
	for _, k := range []int64{17, 1} {
		m.Insert(&longNode{t: k}, LongHashCode(k))
	}
	var got []int64
	for _, n := range m.AppendOrder(nil) {
		got = append(got, n.t)
	}
	if !slices.Equal(got, []int64{1, 17}) {
		t.Fatalf("order %v, want [1 17] (32 bins)", got)
	}
	var fresh longMap
	for _, k := range []int64{17, 1} {
		fresh.Insert(&longNode{t: k}, LongHashCode(k))
	}
	if o := fresh.AppendOrder(nil); o[0].t != 17 {
		t.Fatalf("a new map's order starts with %d, want 17 (16 bins, one bin)", o[0].t)
	}
}

// TestComputeIfAbsent checks ComputeIfAbsent's structure against javahash.ComputeIfAbsentOrder
// (an independent reproduction of HashMap.computeIfAbsent, checked against the JDK by the
// aggregates' tests): random calls, repeated keys among them, keys crowding few bins (resizes of
// short chains, no tree bins, which javahash does not model).
func TestComputeIfAbsent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checked := 0
	defer func() {
		if checked < 200 {
			t.Errorf("only %d rounds without tree bins", checked)
		}
	}()
	for round := range 300 {
		distinct := 1 + r.IntN(200)
		spreadOut := r.IntN(2) == 0
		var hashes []int32
		for i := range distinct {
			h := int32(r.Uint32())
			if !spreadOut {
				h = int32(i*16 + r.IntN(3)) // few low bits: long chains in short tables
			}
			hashes = append(hashes, h)
		}
		// calls: each key's first call in key order, with repeats of earlier keys in between
		var calls []int32
		for i := range int32(distinct) {
			calls = append(calls, i)
			for range r.IntN(3) {
				calls = append(calls, int32(r.IntN(int(i)+1)))
			}
		}
		var m longMap
		trees := false // a tree bin, even one split back into lists later: outside javahash's model
		for _, c := range calls {
			k := int64(c)
			got := m.ComputeIfAbsent(k, hashes[c], func() *longNode { return &longNode{t: k} })
			if got.t != k {
				t.Fatalf("round %d: key %d returned node %d", round, k, got.t)
			}
			trees = trees || m.TreeBins() > 0
		}
		if trees {
			continue
		}
		checked++
		want, _ := javahash.ComputeIfAbsentOrder(hashes, calls, nil, nil)
		var got []int32
		for _, n := range m.AppendOrder(nil) {
			got = append(got, int32(n.t))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: order\n%v\nwant\n%v", round, got, want)
		}
	}
}
