package engine

// Index is the one hash table layout of Ferry's state: an open-addressing index from 32-bit hash
// tags to int32 ids, used by the key table (one Index per key group), the per-key entry sets of
// the aggregates (DISTINCT value sets, the multisets of MIN/MAX with retraction) and the timers.
//
// Each slot holds uint64(tag)<<32 | uint64(id+1); 0 marks an empty slot. A lookup probes
// linearly from the tag's home slot; removal shifts the later members of the probe chain back
// (backward-shift deletion), so there are no tombstones and a chain never outgrows its entries.
// The slot array is pointer-free, so the Go GC never scans it; it is empty or a power of two of
// at least 8 slots and at most 3/4 full.
//
// The index stores tags and ids only: the owner keeps its entries (keys, values) in its own flat
// slices and confirms each candidate id a lookup (Home, Probe) yields by comparing the
// entry, since equal tags do not mean equal entries. Rehashing and removal need no callback into the owner: a slot's tag
// gives its home.
type Index struct {
	slots []uint64
	count int
}

// minSlots is the slot count of an index's first allocation.
const minSlots = 8

// home spreads a tag over a power-of-two slot array. Tags are hashes already, but the key
// table's tags are Flink's key hashes, whose murmur re-hash chose the key group, so the bits are
// re-mixed to decorrelate slot and key group.
func home(tag uint32, mask int) int {
	h := tag * 0x9e3779b1
	return int(h>>16^h) & mask
}

// Len is the number of ids in the index.
func (x *Index) Len() int { return x.count }

// Bytes is the memory the index owns.
func (x *Index) Bytes() int64 { return int64(cap(x.slots)) * 8 }

// Home is the position a lookup of tag starts from. A lookup walks the probe chain with Probe:
//
//	for id, pos := x.Probe(tag, x.Home(tag)); id >= 0; id, pos = x.Probe(tag, pos) {
//		if the entry of id equals the one looked for { return id }
//	}
//
// Its state is two integers, so it stays in registers, and both calls inline. The index must
// not change during a lookup.
func (x *Index) Home(tag uint32) int { return home(tag, len(x.slots)-1) }

// Probe returns the next id stored under tag at or after position pos of the probe chain, or -1
// when the chain ends, and the position to continue from.
func (x *Index) Probe(tag uint32, pos int) (id int32, next int) {
	if x.count == 0 {
		return -1, pos
	}
	mask := len(x.slots) - 1
	for {
		s := x.slots[pos&mask]
		if s == 0 {
			return -1, pos
		}
		pos++
		if uint32(s>>32) == tag {
			return int32(uint32(s)) - 1, pos
		}
	}
}

// Insert adds id under tag. The pair must not be present.
func (x *Index) Insert(tag uint32, id int32) {
	if (x.count+1)*4 > len(x.slots)*3 {
		x.grow()
	}
	x.put(uint64(tag)<<32 | uint64(id+1))
	x.count++
}

// put places slot value s (the index has room).
func (x *Index) put(s uint64) {
	mask := len(x.slots) - 1
	i := home(uint32(s>>32), mask)
	for x.slots[i] != 0 {
		i = (i + 1) & mask
	}
	x.slots[i] = s
}

func (x *Index) grow() {
	old := x.slots
	n := minSlots
	if len(old) > 0 {
		n = 2 * len(old)
	}
	x.slots = make([]uint64, n)
	for _, s := range old {
		if s != 0 {
			x.put(s)
		}
	}
}

// Delete removes id, stored under tag. The pair must be present.
func (x *Index) Delete(tag uint32, id int32) {
	mask := len(x.slots) - 1
	want := uint64(tag)<<32 | uint64(id+1)
	i := home(tag, mask)
	for x.slots[i] != want {
		i = (i + 1) & mask
	}
	for {
		x.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			s := x.slots[j]
			if s == 0 {
				x.count--
				return
			}
			// Move s into the hole at i unless its home lies cyclically in (i, j].
			h := home(uint32(s>>32), mask)
			if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
				x.slots[i] = s
				i = j
				break
			}
		}
	}
}
