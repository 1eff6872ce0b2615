// Package exchange is the frame codec of Ferry's columnar exchange (docs/abi.md#frames): the
// local aggregate routes its partial rows to the consumer's channels as Flink's
// KeyGroupStreamPartitioner would, and packs each channel's rows into frames, byte blobs holding
// a header and the rows in the slab layout of engine.OutBatch; the global aggregate decodes
// frames back into views of those rows. Frame format v1, little-endian:
//
//	off 0  u32 magic 0x31465846 ("FXF1")
//	off 4  u16 version (1)
//	off 6  u16 flags (0; a reader refuses unknown bits)
//	off 8  i32 kgFirst, off 12 i32 kgLast: the smallest and largest key group of the rows
//	off 16 i32 maxParallelism: the consumer's max parallelism the key groups are computed for
//	off 20 i32 parallelism: the channel count the sender routed for
//	off 24 i32 channel: kg*parallelism/maxParallelism of every row
//	off 28 i32 rows (>= 1)
//	off 32 u64 fingerprint of the row type (Fingerprint)
//	off 40 per column a u32 byte size (VARCHAR/BINARY; 0 for the others), then per column a u8
//	       "has nulls" (0 or 1), zero-padded to a multiple of 8 bytes
//	then   the body: engine.SlabSize bytes laid out as engine.Carve lays them out for the wire
//	       types (WireTypes: every column nullable), the RowKind column included (every row +I);
//	       a column's bitmap is present even when it has no nulls (it is then ignored)
//
// Every frame's length is a multiple of 8 bytes.
package exchange

import (
	"hash/fnv"
	"strings"

	"github.com/ferrystream/ferry/engine"
)

// Frame format constants.
const (
	Magic   = 0x31465846 // "FXF1" little-endian
	Version = 1
	// HeaderSize is the fixed part of the header, before the column directory.
	HeaderSize = 40
	// DefaultTargetBytes is the body size a sender keeps frames under unless one row is larger.
	DefaultTargetBytes = 256 << 10
)

// Header is the fixed part of a frame's header.
type Header struct {
	KGFirst, KGLast int // inclusive key-group range of the rows
	MaxParallelism  int // the consumer's max parallelism (the number of key groups)
	Parallelism     int // the number of channels the sender routed for
	Channel         int // the destination channel of every row
	Rows            int
	Fingerprint     uint64
}

// DirSize is the size of the column directory of a frame of n columns.
func DirSize(n int) int { return (5*n + 7) &^ 7 }

// WireTypes are types as frames lay them out: every column nullable. Flink and the native local
// need not agree on which partial fields are NOT NULL (the host checks their types, not their
// nullability), so neither the layout nor the fingerprint depends on it; a reader refuses nulls
// in a column its own type declares NOT NULL.
func WireTypes(types []engine.Type) []engine.Type {
	wire := make([]engine.Type, len(types))
	for i, t := range types {
		t.Nullable = true
		wire[i] = t
	}
	return wire
}

// Fingerprint identifies a row type whatever its nullability: FNV-1a 64 of its wire types'
// engine.Type strings (e.g. "DECIMAL(10, 2)"), joined by ",". A reader refuses a frame of another
// type.
func Fingerprint(types []engine.Type) uint64 {
	names := make([]string, len(types))
	for i, t := range WireTypes(types) {
		names[i] = t.String()
	}
	h := fnv.New64a()
	h.Write([]byte(strings.Join(names, ",")))
	return h.Sum64()
}

// Channel is the channel of key group kg among parallelism channels for maxParallelism key
// groups: KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup.
func Channel(kg, parallelism, maxParallelism int) int { return kg * parallelism / maxParallelism }
