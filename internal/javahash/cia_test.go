package javahash

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestComputeIfAbsentOrderMatchesJava replays golden vectors of JDK 17's HashMap filled by
// computeIfAbsent (tests/hashmaporder/ComputeIfAbsentOrder.java).
func TestComputeIfAbsentOrderMatchesJava(t *testing.T) {
	f, err := os.Open("testdata/compute-if-absent-order.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	cases := 0
	for sc.Scan() {
		var c struct {
			Hashes []int32 `json:"hashes"`
			Calls  []int32 `json:"calls"`
			Order  []int32 `json:"order"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		got, _ := ComputeIfAbsentOrder(c.Hashes, c.Calls, nil, nil)
		if !slices.Equal(got, c.Order) && !(len(got) == 0 && len(c.Order) == 0) {
			t.Fatalf("case %d (%d keys): order %v, Java's %v", cases, len(c.Hashes), got, c.Order)
		}
		cases++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases != 200 {
		t.Fatalf("%d cases", cases)
	}
}
