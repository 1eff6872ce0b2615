package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndexAgainstModel runs random inserts and deletes, with tags drawn from a small set so
// probe chains collide and wrap around, and checks every lookup against a map.
func TestIndexAgainstModel(t *testing.T) {
	for _, tags := range []int{3, 64, 1 << 20} {
		r := rand.New(rand.NewPCG(uint64(tags), 7))
		var x Index
		model := map[int32]uint32{} // id -> tag
		var live []int32            // the ids of model, for picking one at random
		next := int32(0)
		for step := range 20000 {
			if len(live) > 0 && r.IntN(5) < 2 {
				j := r.IntN(len(live))
				id := live[j]
				live[j] = live[len(live)-1]
				live = live[:len(live)-1]
				x.Delete(model[id], id)
				delete(model, id)
			} else {
				tag := uint32(r.IntN(tags)) * 0x01000193
				x.Insert(tag, next)
				model[next] = tag
				live = append(live, next)
				next++
			}
			if x.Len() != len(model) {
				t.Fatalf("tags %d step %d: Len %d, model %d", tags, step, x.Len(), len(model))
			}
			if len(x.slots) > 0 && (len(x.slots)&(len(x.slots)-1) != 0 || x.count*4 > len(x.slots)*3) {
				t.Fatalf("slot array of %d for %d ids breaks the load or size invariant", len(x.slots), x.count)
			}
			if step%499 == 0 {
				checkIndex(t, &x, model)
			}
		}
		checkIndex(t, &x, model)
	}
}

func checkIndex(t *testing.T, x *Index, model map[int32]uint32) {
	t.Helper()
	byTag := map[uint32][]int32{}
	for id, tag := range model {
		byTag[tag] = append(byTag[tag], id)
	}
	for tag, want := range byTag {
		var got []int32
		for id, pos := x.Probe(tag, x.Home(tag)); id >= 0; id, pos = x.Probe(tag, pos) {
			got = append(got, id)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("lookup of %#x yields %v, want %v", tag, got, want)
		}
	}
	if x.Len() != len(model) {
		t.Fatalf("the index holds %d ids, want %d", x.Len(), len(model))
	}
}

func TestIndexEmptyAndReset(t *testing.T) {
	var x Index
	if id, _ := x.Probe(42, x.Home(42)); id != -1 {
		t.Fatal("an empty index yields an id")
	}
	x.Insert(42, 7)
	x.Insert(42, 8)
	if x.Bytes() != minSlots*8 {
		t.Fatalf("Bytes %d, want %d", x.Bytes(), minSlots*8)
	}
	a, pos := x.Probe(42, x.Home(42))
	b, pos := x.Probe(42, pos)
	c, _ := x.Probe(42, pos)
	if got := []int32{a, b, c}; !slices.Equal(got, []int32{7, 8, -1}) {
		t.Fatalf("Probe(42) yields %v", got)
	}
	x.Delete(42, 7)
	x.Delete(42, 8)
	if id, _ := x.Probe(42, x.Home(42)); x.Len() != 0 || id != -1 {
		t.Fatal("deleted ids still found")
	}
}

// TestKeyTableKeyGroups checks that keys land in their key groups' partitions and that removed
// ids are reused only after EndBatch.
func TestKeyTableKeyGroups(t *testing.T) {
	kt := NewKeyTable(128, 0, 127, 16)
	key := func(v int64) ([]byte, int32, int) {
		k := make([]byte, 16)
		k[8] = byte(v)
		k[9] = byte(v >> 8)
		h := HashRow(k)
		kg, err := kt.KeyGroupOf(h)
		if err != nil {
			t.Fatal(err)
		}
		return k, h, kg
	}
	perKG := map[int]int{}
	for v := range int64(1000) {
		k, h, kg := key(v)
		if kt.Find(k, h, kg) >= 0 {
			t.Fatalf("key %d found before insert", v)
		}
		id := kt.Insert(k, h, kg)
		if id != int32(v) || kt.Find(k, h, kg) != id || string(kt.Key(id)) != string(k) {
			t.Fatalf("key %d: id %d, find %d", v, id, kt.Find(k, h, kg))
		}
		perKG[kg]++
	}
	for kg, n := range perKG {
		if kt.KeyGroupLen(kg) != n {
			t.Fatalf("key group %d: %d keys, want %d", kg, kt.KeyGroupLen(kg), n)
		}
	}
	k, h, kg := key(5)
	kt.Remove(5)
	if kt.Find(k, h, kg) >= 0 || kt.Live(5) || kt.Len() != 999 {
		t.Fatal("removed key still found")
	}
	if id := kt.Insert(k, h, kg); id != 1000 {
		t.Fatalf("id %d reused before EndBatch", id)
	}
	if got := kt.EndBatch(); !slices.Equal(got, []int32{5}) {
		t.Fatalf("EndBatch = %v", got)
	}
	k2, h2, kg2 := key(5000)
	if id := kt.Insert(k2, h2, kg2); id != 5 {
		t.Fatalf("id %d, want the freed id 5", id)
	}
	if _, err := NewKeyTable(128, 0, 3, 16).KeyGroupOf(h2); kg2 > 3 && err == nil {
		t.Fatal("a key outside the range passed KeyGroupOf")
	}
}
