package intervaljoin

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestHashMapOrderVectors replays golden vectors of java.util.HashMap<Long, ?> produced by JDK 17
// (tests/hashmaporder): puts and iterator removals, bins that become trees, split and shrink, maps
// of the default and of restored capacities; the iteration order must match after every step.
func TestHashMapOrderVectors(t *testing.T) {
	f, err := os.Open("testdata/hashmap-order.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	scenarios, treeBins := 0, 0
	for sc.Scan() {
		var v struct {
			Initial int               `json:"initial"`
			Ops     []json.RawMessage `json:"ops"`
			Orders  [][]int64         `json:"orders"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		m := &bucketMap{}
		if v.Initial > 0 {
			m.threshold = tableSizeFor(v.Initial)
		}
		for i, raw := range v.Ops {
			var op []any
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			switch op[0] {
			case "p":
				var nums []json.RawMessage // the key as an exact int64, not a float
				if err := json.Unmarshal(raw, &nums); err != nil {
					t.Fatal(err)
				}
				var k int64
				if err := json.Unmarshal(nums[1], &k); err != nil {
					t.Fatal(err)
				}
				if m.get(k) == nil {
					m.insert(k)
				}
			case "r":
				mod, rem := int64(op[1].(float64)), int64(op[2].(float64))
				for _, b := range m.appendOrder(nil) {
					if ((b.time%mod)+mod)%mod == rem {
						m.remove(b)
					}
				}
			}
			var got []int64
			for _, b := range m.appendOrder(nil) {
				got = append(got, b.time)
			}
			if !slices.Equal(got, v.Orders[i]) && !(len(got) == 0 && len(v.Orders[i]) == 0) {
				t.Fatalf("scenario %d, op %d %s: order\n got %v\nwant %v", scenarios, i, raw, got, v.Orders[i])
			}
			if m.size != len(got) {
				t.Fatalf("scenario %d, op %d: size %d, %d entries", scenarios, i, m.size, len(got))
			}
			treeBins += countTrue(m.tree)
		}
		scenarios++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if scenarios < 40 || treeBins == 0 {
		t.Fatalf("%d scenarios, %d tree bin observations: the vectors do not exercise tree bins", scenarios, treeBins)
	}
	t.Logf("%d scenarios, %d tree-bin observations", scenarios, treeBins)
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
