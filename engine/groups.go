package engine

import (
	"encoding/binary"
	"fmt"
)

// GroupTable interns encoded keys (KeyEncoder output) into dense group ids and remembers the
// key group of each, partitioned so that all groups of one key group can be listed without
// scanning others. It is pointer-free: keys live in one byte arena, per-group facts in flat
// slices indexed by group id, and each key group has an open-addressing (linear probing) slot
// array holding hash<<32 | id+1. The Go GC therefore never scans per-group memory.
//
// When every key has the same size (no VARCHAR field), key id lives at arena[id*size:], so a
// lookup touches one slot and one key, and removal leaves no garbage; otherwise keys are
// appended to the arena with an offset per id, and the arena is compacted when mostly garbage.
//
// Ids of removed groups are reserved until EndBatch, so a batch can still address state by the
// ids it saw; afterwards they are reused.
type GroupTable struct {
	maxParallelism int
	kgMask         int // maxParallelism-1 when it is a power of two, else -1
	kgStart, kgEnd int
	parts          []groupPart // indexed by keyGroup - kgStart

	keySize int     // bytes of every key when fixed, else 0
	ids     int     // ids handed out: per-group slices have this length
	keyOff  []int64 // variable-size keys: arena offset of each group's key; -1 when the id is free
	keyLen  []int32 // variable-size keys: key length
	keyHash []int32
	keyKG   []uint16 // key group - kgStart
	alive   []bool   // the id belongs to a live group
	arena   []byte
	garbage int // arena bytes of removed keys

	free    []int32 // ids ready for reuse
	pending []int32 // ids removed in the current batch
	live    int
}

type groupPart struct {
	slots []uint64 // 0 empty, else uint64(uint32(hash))<<32 | uint64(id+1); len is a power of two
	count int
}

// NewGroupTable returns an empty table for the inclusive key-group range [kgStart, kgEnd].
// keySize is the size of every key when it is fixed (KeyEncoder.FixedSize), else 0.
func NewGroupTable(maxParallelism, kgStart, kgEnd, keySize int) *GroupTable {
	mask := -1
	if maxParallelism&(maxParallelism-1) == 0 {
		mask = maxParallelism - 1
	}
	return &GroupTable{
		maxParallelism: maxParallelism,
		kgMask:         mask,
		kgStart:        kgStart,
		kgEnd:          kgEnd,
		parts:          make([]groupPart, kgEnd-kgStart+1),
		keySize:        keySize,
	}
}

// Len is the number of live groups.
func (t *GroupTable) Len() int { return t.live }

// Cap is one more than the largest id ever handed out: per-group slices must have this length.
func (t *GroupTable) Cap() int { return t.ids }

// KeyGroupOf maps a key hash to its key group and checks that it lies in the table's range.
func (t *GroupTable) KeyGroupOf(hash int32) (int, error) {
	var kg int
	if t.kgMask >= 0 { // MurmurHashInt is non-negative, so the mask equals the modulo
		kg = int(MurmurHashInt(hash)) & t.kgMask
	} else {
		kg = KeyGroup(hash, t.maxParallelism)
	}
	if kg < t.kgStart || kg > t.kgEnd {
		return kg, fmt.Errorf("%w: key belongs to key group %d, outside this operator's range [%d, %d] (max parallelism %d)",
			ErrData, kg, t.kgStart, t.kgEnd, t.maxParallelism)
	}
	return kg, nil
}

// Find returns the id of key (hash = HashRow(key), in key group kg), or -1.
func (t *GroupTable) Find(key []byte, hash int32, kg int) int32 {
	p := &t.parts[kg-t.kgStart]
	if p.count == 0 {
		return -1
	}
	mask := len(p.slots) - 1
	tag := uint64(uint32(hash)) << 32
	for i := slotIndex(hash, mask); ; i = (i + 1) & mask {
		s := p.slots[i]
		if s == 0 {
			return -1
		}
		if s&^0xffffffff == tag {
			id := int32(s&0xffffffff) - 1
			if t.keyEquals(id, key) {
				return id
			}
		}
	}
}

// Insert adds key, which must not be present, and returns its new id.
func (t *GroupTable) Insert(key []byte, hash int32, kg int) int32 {
	var id int32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		id = int32(t.ids)
		t.ids++
		t.keyHash = append(t.keyHash, 0)
		t.keyKG = append(t.keyKG, 0)
		t.alive = append(t.alive, false)
		if t.keySize > 0 {
			t.arena = append(t.arena, make([]byte, t.keySize)...)
		} else {
			t.keyOff = append(t.keyOff, 0)
			t.keyLen = append(t.keyLen, 0)
		}
	}
	t.keyHash[id] = hash
	t.keyKG[id] = uint16(kg - t.kgStart)
	if t.keySize > 0 {
		copy(t.arena[int(id)*t.keySize:], key)
	} else {
		t.keyOff[id] = int64(len(t.arena))
		t.keyLen[id] = int32(len(key))
		t.arena = append(t.arena, key...)
	}
	p := &t.parts[kg-t.kgStart]
	if (p.count+1)*4 > len(p.slots)*3 {
		t.resize(p)
	}
	p.put(hash, id)
	t.live++
	t.alive[id] = true
	return id
}

// Remove deletes group id from the index. The id stays reserved until EndBatch.
func (t *GroupTable) Remove(id int32) {
	p := &t.parts[t.keyKG[id]]
	mask := len(p.slots) - 1
	want := uint64(uint32(t.keyHash[id]))<<32 | uint64(id+1)
	i := slotIndex(t.keyHash[id], mask)
	for p.slots[i] != want {
		i = (i + 1) & mask
	}
	// Backward-shift deletion keeps every probe chain unbroken without tombstones.
	for {
		p.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			s := p.slots[j]
			if s == 0 {
				p.count--
				if t.keySize == 0 {
					t.garbage += int(t.keyLen[id])
					t.keyOff[id] = -1
				}
				t.pending = append(t.pending, id)
				t.live--
				t.alive[id] = false
				return
			}
			home := slotIndex(int32(s>>32), mask)
			// Move s into the hole at i unless its home lies cyclically in (i, j].
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				p.slots[i] = s
				i = j
				break
			}
		}
	}
}

// EndBatch makes the ids removed since the last call reusable and compacts the key arena when
// most of it is garbage. Callers reset per-group state of the returned ids before they are
// reused; the slice is valid until the next call.
func (t *GroupTable) EndBatch() []int32 {
	done := t.pending
	t.free = append(t.free, done...)
	t.pending = t.pending[:0]
	if t.garbage > 1<<16 && t.garbage*2 > len(t.arena) {
		t.compact()
	}
	return done
}

// Live reports whether id belongs to a live group (ids below Cap may be free or pending).
func (t *GroupTable) Live(id int32) bool { return t.alive[id] }

// Key returns the encoded key of a live group.
func (t *GroupTable) Key(id int32) []byte {
	if t.keySize > 0 {
		off := int(id) * t.keySize
		return t.arena[off : off+t.keySize]
	}
	off := t.keyOff[id]
	return t.arena[off : off+int64(t.keyLen[id])]
}

// KeyGroupLen is the number of live groups in key group kg.
func (t *GroupTable) KeyGroupLen(kg int) int { return t.parts[kg-t.kgStart].count }

// AppendKeyGroup appends the ids of the live groups of key group kg to ids, in slot order.
func (t *GroupTable) AppendKeyGroup(kg int, ids []int32) []int32 {
	for _, s := range t.parts[kg-t.kgStart].slots {
		if s != 0 {
			ids = append(ids, int32(s&0xffffffff)-1)
		}
	}
	return ids
}

// Bytes estimates the memory the table owns.
func (t *GroupTable) Bytes() int64 {
	n := int64(cap(t.arena)) + int64(cap(t.keyOff))*8 + int64(cap(t.keyLen)+cap(t.keyHash))*4 + int64(cap(t.keyKG))*2
	for i := range t.parts {
		n += int64(cap(t.parts[i].slots)) * 8
	}
	return n
}

// keyEquals compares a stored key with key 8 bytes at a time: encoded keys are BinaryRowData
// rows, always a multiple of 8 bytes long, and mostly short (16 bytes for one BIGINT).
func (t *GroupTable) keyEquals(id int32, key []byte) bool {
	var stored []byte
	if t.keySize > 0 {
		off := int(id) * t.keySize
		stored = t.arena[off : off+t.keySize]
	} else {
		if int(t.keyLen[id]) != len(key) {
			return false
		}
		stored = t.arena[t.keyOff[id] : t.keyOff[id]+int64(len(key))]
	}
	if len(stored) != len(key) {
		return false
	}
	for i := 0; i+8 <= len(key); i += 8 {
		if binary.LittleEndian.Uint64(stored[i:]) != binary.LittleEndian.Uint64(key[i:]) {
			return false
		}
	}
	return true
}

func (t *GroupTable) resize(p *groupPart) {
	old := p.slots
	n := 8
	if len(old) > 0 {
		n = len(old) * 2
	}
	p.slots, p.count = make([]uint64, n), 0
	for _, s := range old {
		if s != 0 {
			p.put(int32(s>>32), int32(s&0xffffffff)-1)
		}
	}
}

func (p *groupPart) put(hash int32, id int32) {
	mask := len(p.slots) - 1
	i := slotIndex(hash, mask)
	for p.slots[i] != 0 {
		i = (i + 1) & mask
	}
	p.slots[i] = uint64(uint32(hash))<<32 | uint64(id+1)
	p.count++
}

func (t *GroupTable) compact() {
	arena := make([]byte, 0, len(t.arena)-t.garbage)
	for id, off := range t.keyOff {
		if off >= 0 {
			t.keyOff[id] = int64(len(arena))
			arena = append(arena, t.arena[off:off+int64(t.keyLen[id])]...)
		}
	}
	t.arena, t.garbage = arena, 0
}

// slotIndex spreads a key hash over a power-of-two slot array. The key group was derived from
// MurmurHashInt(hash), so the raw bits are re-mixed to decorrelate slot and key group.
func slotIndex(hash int32, mask int) int {
	h := uint32(hash) * 0x9e3779b1
	return int(h>>16^h) & mask
}
