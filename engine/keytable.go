package engine

import (
	"encoding/binary"
	"fmt"
)

// KeyTable interns encoded keys (KeyEncoder output) into dense key ids and remembers the key
// group of each, partitioned so that all keys of one key group can be listed without scanning
// others. It is pointer-free: keys live in one byte arena, per-key facts in flat slices indexed by
// key id, and each key group has an Index from key hash to id. The Go GC therefore never scans
// per-key memory.
//
// When every key has the same size (no VARCHAR field), key id lives at arena[id*size:], so a
// lookup touches one slot and one key, and removal leaves no garbage; otherwise keys are
// appended to the arena with an offset per id, and the arena is compacted when mostly garbage.
//
// Ids of removed keys are reserved until EndBatch, so a batch can still address state by the
// ids it saw; afterwards they are reused.
type KeyTable struct {
	maxParallelism int
	kgMask         int // maxParallelism-1 when it is a power of two, else -1
	kgStart, kgEnd int
	parts          []Index // indexed by keyGroup - kgStart

	keySize int     // bytes of every key when fixed, else 0
	ids     int     // ids handed out: per-key slices have this length
	keyOff  []int64 // variable-size keys: arena offset of each key; -1 when the id is free
	keyLen  []int32 // variable-size keys: key length
	keyHash []int32
	keyKG   []uint16 // key group - kgStart
	alive   []bool   // the id belongs to a live key
	arena   []byte
	garbage int // arena bytes of removed keys

	warmIDs  []int32 // Warm's scratch
	warmOffs []int64
	warmSink byte // Warm's loads, kept

	free    []int32 // ids ready for reuse
	pending []int32 // ids removed in the current batch
	live    int
}

// NewKeyTable returns an empty table for the inclusive key-group range [kgStart, kgEnd].
// keySize is the size of every key when it is fixed (KeyEncoder.FixedSize), else 0.
func NewKeyTable(maxParallelism, kgStart, kgEnd, keySize int) *KeyTable {
	mask := -1
	if maxParallelism&(maxParallelism-1) == 0 {
		mask = maxParallelism - 1
	}
	return &KeyTable{
		maxParallelism: maxParallelism,
		kgMask:         mask,
		kgStart:        kgStart,
		kgEnd:          kgEnd,
		parts:          make([]Index, kgEnd-kgStart+1),
		keySize:        keySize,
	}
}

// Len is the number of live keys.
func (t *KeyTable) Len() int { return t.live }

// Cap is one more than the largest id ever handed out: per-key slices must have this length.
func (t *KeyTable) Cap() int { return t.ids }

// KeySize is the size of every key when it is fixed, else 0.
func (t *KeyTable) KeySize() int { return t.keySize }

// KeyGroupOf maps a key hash to its key group and checks that it lies in the table's range.
func (t *KeyTable) KeyGroupOf(hash int32) (int, error) {
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
func (t *KeyTable) Find(key []byte, hash int32, kg int) int32 {
	x, tag := &t.parts[kg-t.kgStart], uint32(hash)
	for id, pos := x.Probe(tag, x.Home(tag)); id >= 0; id, pos = x.Probe(tag, pos) {
		if t.keyEquals(id, key) {
			return id
		}
	}
	return -1
}

// WarmKeys is the state size, in keys, from which warming a batch's lookups and state accesses
// before the work pays: below it the per-key slices mostly stay in the CPU's caches, and the warm
// loops only cost (tests/perf with WarmKeys 0: about 10 % slower at 10 K keys; docs/benchmarks.md
// has the gain above it).
const WarmKeys = 1 << 16

// Warm reads, for each key of a batch (hash hashes[i], key group kgs[i]), the index slot its
// lookup starts at and then the stored key of the id found there, in two loops with no dependency
// between keys: the CPU overlaps their cache misses, which Find, one key after another, would
// take in turn (a slot, then a key). It changes nothing, and does nothing for a table of fewer
// than WarmKeys keys.
func (t *KeyTable) Warm(hashes, kgs []int32) {
	if t.live < WarmKeys {
		return
	}
	ids, sink := t.warmIDs[:0], t.warmSink
	for i, h := range hashes {
		x := &t.parts[int(kgs[i])-t.kgStart]
		if x.count == 0 {
			continue
		}
		s := x.slots[x.Home(uint32(h))]
		if s != 0 {
			ids = append(ids, int32(uint32(s))-1)
		}
	}
	if t.keySize > 0 {
		for _, id := range ids {
			sink ^= t.arena[int(id)*t.keySize]
		}
	} else {
		offs := t.warmOffs[:0]
		for _, id := range ids {
			offs = append(offs, t.keyOff[id])
		}
		for _, off := range offs {
			if off >= 0 {
				sink ^= t.arena[off]
			}
		}
		t.warmOffs = offs
	}
	t.warmIDs, t.warmSink = ids, sink // the sink keeps the loads from being optimised away
}

// Insert adds key, which must not be present, and returns its new id.
func (t *KeyTable) Insert(key []byte, hash int32, kg int) int32 {
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
	t.parts[kg-t.kgStart].Insert(uint32(hash), id)
	t.live++
	t.alive[id] = true
	return id
}

// Remove deletes key id from the index. The id stays reserved until EndBatch.
func (t *KeyTable) Remove(id int32) {
	t.parts[t.keyKG[id]].Delete(uint32(t.keyHash[id]), id)
	if t.keySize == 0 {
		t.garbage += int(t.keyLen[id])
		t.keyOff[id] = -1
	}
	t.pending = append(t.pending, id)
	t.live--
	t.alive[id] = false
}

// EndBatch makes the ids removed since the last call reusable and compacts the key arena when
// most of it is garbage. Callers reset per-key state of the returned ids before they are
// reused; the slice is valid until the next call.
func (t *KeyTable) EndBatch() []int32 {
	done := t.pending
	t.free = append(t.free, done...)
	t.pending = t.pending[:0]
	if t.garbage > 1<<16 && t.garbage*2 > len(t.arena) {
		t.compact()
	}
	return done
}

// Live reports whether id belongs to a live key (ids below Cap may be free or pending).
func (t *KeyTable) Live(id int32) bool { return t.alive[id] }

// Key returns the encoded key of a live id.
func (t *KeyTable) Key(id int32) []byte {
	if t.keySize > 0 {
		off := int(id) * t.keySize
		return t.arena[off : off+t.keySize]
	}
	off := t.keyOff[id]
	return t.arena[off : off+int64(t.keyLen[id])]
}

// KeyGroupLen is the number of live keys in key group kg.
func (t *KeyTable) KeyGroupLen(kg int) int { return t.parts[kg-t.kgStart].Len() }

// keyGroupIndex returns the key group of id minus the range's start, and whether id belongs to a
// live key (ids below Cap may be free or pending).
func (t *KeyTable) keyGroupIndex(id int32) (int, bool) { return int(t.keyKG[id]), t.alive[id] }

// Bytes estimates the memory the table owns.
func (t *KeyTable) Bytes() int64 {
	n := int64(cap(t.arena)) + int64(cap(t.keyOff))*8 + int64(cap(t.keyLen)+cap(t.keyHash))*4 + int64(cap(t.keyKG))*2
	for i := range t.parts {
		n += t.parts[i].Bytes()
	}
	return n
}

// keyEquals compares a stored key with key 8 bytes at a time: encoded keys are BinaryRowData
// rows, always a multiple of 8 bytes long, and mostly short (16 bytes for one BIGINT).
func (t *KeyTable) keyEquals(id int32, key []byte) bool {
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

func (t *KeyTable) compact() {
	arena := make([]byte, 0, len(t.arena)-t.garbage)
	for id, off := range t.keyOff {
		if off >= 0 {
			t.keyOff[id] = int64(len(arena))
			arena = append(arena, t.arena[off:off+int64(t.keyLen[id])]...)
		}
	}
	t.arena, t.garbage = arena, 0
}
