// Package snapshot frames the state of one Flink key group as a self-delimiting, validated blob.
// The host writes one blob per non-empty key group into Flink's raw keyed state; on restore
// every field is checked before the operator reads a byte of the payload.
//
// Layout (little-endian):
//
//	offset size field
//	0      4    magic "FRYS"
//	4      2    format version (1)
//	6      2    reserved, 0
//	8      4    operator kind id (FNV-32a of the kind name)
//	12     4    max parallelism
//	16     4    key group
//	20     8    spec fingerprint (engine.Spec.Fingerprint)
//	28     8    payload length in bytes
//	36     4    CRC32C of the payload
//	40     …    payload
package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"

	"github.com/ferrystream/ferry/engine"
)

// Version is the blob format version this package writes and reads.
const Version = 1

// HeaderSize is the size of the fixed header before the payload.
const HeaderSize = 40

const magic = "FRYS"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header identifies whose state a blob holds.
type Header struct {
	Kind           string
	MaxParallelism int
	KeyGroup       int
	Fingerprint    uint64
}

// KindID is the 32-bit id of an operator kind name stored in blobs.
func KindID(kind string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(kind))
	return h.Sum32()
}

// Size is the blob size for a payload of n bytes.
func Size(n int) int { return HeaderSize + n }

// Encode writes the blob for payload into dst, which must hold Size(len(payload)) bytes.
func Encode(dst []byte, h Header, payload []byte) {
	copy(dst, magic)
	binary.LittleEndian.PutUint16(dst[4:], Version)
	binary.LittleEndian.PutUint16(dst[6:], 0)
	binary.LittleEndian.PutUint32(dst[8:], KindID(h.Kind))
	binary.LittleEndian.PutUint32(dst[12:], uint32(h.MaxParallelism))
	binary.LittleEndian.PutUint32(dst[16:], uint32(h.KeyGroup))
	binary.LittleEndian.PutUint64(dst[20:], h.Fingerprint)
	binary.LittleEndian.PutUint64(dst[28:], uint64(len(payload)))
	binary.LittleEndian.PutUint32(dst[36:], crc32.Checksum(payload, castagnoli))
	copy(dst[HeaderSize:], payload)
}

// Decode validates blob against the state the restoring operator expects and returns its
// payload, which aliases blob. Errors wrap engine.ErrData and say precisely what is wrong.
func Decode(blob []byte, want Header) ([]byte, error) {
	bad := func(format string, args ...any) ([]byte, error) {
		return nil, fmt.Errorf("%w: state blob for key group %d: %s", engine.ErrData, want.KeyGroup, fmt.Sprintf(format, args...))
	}
	if len(blob) < HeaderSize {
		return bad("truncated: %d bytes, header needs %d", len(blob), HeaderSize)
	}
	if string(blob[:4]) != magic {
		return bad("not a Ferry state blob (magic %q)", blob[:4])
	}
	if v := binary.LittleEndian.Uint16(blob[4:]); v != Version {
		return bad("unknown format version %d (this library reads version %d)", v, Version)
	}
	if k := binary.LittleEndian.Uint32(blob[8:]); k != KindID(want.Kind) {
		return bad("written by another operator kind (id %#x), not %s", k, want.Kind)
	}
	if mp := int(binary.LittleEndian.Uint32(blob[12:])); mp != want.MaxParallelism {
		return bad("max parallelism changed from %d to %d; Flink cannot redistribute key groups across a change of max parallelism", mp, want.MaxParallelism)
	}
	if kg := int(binary.LittleEndian.Uint32(blob[16:])); kg != want.KeyGroup {
		return bad("holds key group %d", kg)
	}
	if fp := binary.LittleEndian.Uint64(blob[20:]); fp != want.Fingerprint {
		return bad("written by an operator with a different spec (fingerprint %016x, expected %016x): the query or its state layout changed", fp, want.Fingerprint)
	}
	n := binary.LittleEndian.Uint64(blob[28:])
	if n != uint64(len(blob)-HeaderSize) {
		return bad("payload length %d, but %d bytes follow the header (truncated or padded)", n, len(blob)-HeaderSize)
	}
	payload := blob[HeaderSize:]
	if sum := crc32.Checksum(payload, castagnoli); sum != binary.LittleEndian.Uint32(blob[36:]) {
		return bad("checksum mismatch: the blob is corrupt")
	}
	return payload, nil
}
