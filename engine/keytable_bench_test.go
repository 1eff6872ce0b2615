package engine

import (
	"encoding/binary"
	"testing"
)

// BenchmarkKeyTableFind looks up random keys of a table of 1 M BIGINT keys over 128 key groups:
// the key lookup every row of a stateful operator makes (memory-bound at this size).
func BenchmarkKeyTableFind(b *testing.B) {
	const n = 1 << 20
	t := NewKeyTable(128, 0, 127, 16)
	keys := make([][]byte, n)
	hashes := make([]int32, n)
	kgs := make([]int, n)
	for i := range n {
		k := make([]byte, 16)
		binary.LittleEndian.PutUint64(k[8:], uint64(i)*7919)
		keys[i], hashes[i] = k, HashRow(k)
		kgs[i] = KeyGroup(hashes[i], 128)
		t.Insert(k, hashes[i], kgs[i])
	}
	x := uint32(1)
	for b.Loop() {
		x = x*1664525 + 1013904223
		j := int(x>>12) % n
		if t.Find(keys[j], hashes[j], kgs[j]) < 0 {
			b.Fatal("a present key not found")
		}
	}
}
