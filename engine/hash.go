package engine

import (
	"encoding/binary"
	"math/bits"
)

// Flink's MurmurHash3 variants (flink-table-common MurmurHashUtils, flink-core MathUtils).

const murmurSeed = 42 // MurmurHashUtils.DEFAULT_SEED

func mixK1(k uint32) uint32 {
	k *= 0xcc9e2d51
	k = bits.RotateLeft32(k, 15)
	return k * 0x1b873593
}

func mixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// HashRow is BinaryRowData.hashCode: MurmurHashUtils.hashBytesByWords over the whole row with
// seed 42, reading 4-byte little-endian words. len(row) must be a multiple of 4 (rows are
// multiples of 8).
func HashRow(row []byte) int32 {
	h := uint32(murmurSeed)
	for i := 0; i+4 <= len(row); i += 4 {
		h = mixH1(h, mixK1(binary.LittleEndian.Uint32(row[i:])))
	}
	return int32(fmix32(h ^ uint32(len(row))))
}

// MurmurHashInt is MathUtils.murmurHash(int): the re-hash applied to a key's hashCode before
// key-group assignment. The result is non-negative.
func MurmurHashInt(code int32) int32 {
	k := mixK1(uint32(code))
	h := bits.RotateLeft32(k, 13)*5 + 0xe6546b64
	h = fmix32(h ^ 4)
	r := int32(h)
	switch {
	case r >= 0:
		return r
	case r != -1<<31:
		return -r
	}
	return 0
}

// KeyGroup is KeyGroupRangeAssignment.assignToKeyGroup for a key whose hashCode is hash.
func KeyGroup(hash int32, maxParallelism int) int {
	return int(MurmurHashInt(hash)) % maxParallelism
}

// KeyGroupRange is computeKeyGroupRangeForOperatorIndex: the inclusive key-group range of
// subtask index out of parallelism, for maxParallelism key groups.
func KeyGroupRange(maxParallelism, parallelism, index int) (start, end int) {
	start = (index*maxParallelism + parallelism - 1) / parallelism
	end = ((index+1)*maxParallelism - 1) / parallelism
	return start, end
}
