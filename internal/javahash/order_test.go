package javahash

import (
	"slices"
	"testing"
)

// TestHashMapOrder checks the emulation of java.util.HashMap's table growth and iteration order
// on hand-computed cases; GroupAggregateDifferentialTest#miniBatchManyKeys checks it against
// Flink's own bundle operator on thousands of keys.
func TestHashMapOrder(t *testing.T) {
	// 12 keys fit a 16-bucket table (threshold 12); the 13th doubles it. Order is by bucket,
	// then by insertion: hash 17 and 1 share bucket 1 of 16 but not of 32.
	tableLen := 0
	hashes := []int32{17, 1, 5, 3, 2, 4, 6, 7, 8, 9, 10, 11}
	order, _ := Order(hashes, &tableLen, nil, nil)
	if tableLen != 16 || !slices.Equal(order, []int32{0, 1, 4, 3, 5, 2, 6, 7, 8, 9, 10, 11}) {
		t.Fatalf("12 keys: table %d, order %v", tableLen, order)
	}
	hashes = append(hashes, 12)
	tableLen = 0
	order, _ = Order(hashes, &tableLen, nil, nil)
	if tableLen != 32 || !slices.Equal(order, []int32{1, 4, 3, 5, 2, 6, 7, 8, 9, 10, 11, 12, 0}) {
		t.Fatalf("13 keys: table %d, order %v", tableLen, order)
	}
	// HashMap.clear keeps the table: a later bundle of two keys still spreads them over 32.
	order, _ = Order([]int32{17, 1}, &tableLen, nil, nil)
	if tableLen != 32 || !slices.Equal(order, []int32{1, 0}) {
		t.Fatalf("after clear: table %d, order %v", tableLen, order)
	}
	// The high half of the hash is folded into the bucket: (h ^ h>>>16) & (n-1).
	tableLen = 0
	order, _ = Order([]int32{1 << 16, 3}, &tableLen, nil, nil)
	if !slices.Equal(order, []int32{0, 1}) { // bucket 1, bucket 3
		t.Fatalf("spread: order %v", order)
	}
	// Nine keys in one bucket of a table shorter than 64: the ninth resizes instead of
	// treeifying (16 -> 32), splitting the chain by the next hash bit.
	tableLen = 0
	same := []int32{0, 16, 32, 48, 64, 80, 96, 112, 128}
	order, _ = Order(same, &tableLen, nil, nil)
	if tableLen != 32 || !slices.Equal(order, []int32{0, 2, 4, 6, 8, 1, 3, 5, 7}) {
		t.Fatalf("long chain: table %d, order %v", tableLen, order)
	}
}
