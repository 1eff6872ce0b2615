// Package snapshot frames the state of one Flink key group as a sequence of self-delimiting,
// validated, zstd-compressed chunks. The payload inside is the operator's: an
// engine.KeyedState's Snapshot output (docs/state.md). The host writes the chunks of every non-empty key group into
// Flink's raw keyed state; on restore every header field and checksum is checked before the
// operator reads a byte of the payload. Chunks bound memory: a huge key group is written and read
// MaxChunk payload bytes at a time.
//
// Chunk layout (little-endian):
//
//	offset size field
//	0      4    magic "FRYS"
//	4      2    format version (3)
//	6      2    flags: bit 0 last chunk of the key group, bit 1 payload is zstd-compressed
//	8      4    operator kind id (FNV-32a of the kind name)
//	12     4    max parallelism
//	16     4    key group
//	20     4    chunk index within the key group, from 0
//	24     8    state fingerprint (engine.KeyedState.Fingerprint)
//	32     4    payload length before compression
//	36     4    stored length: the bytes that follow the header
//	40     4    CRC32C of the stored bytes
//	44     4    CRC32C of header bytes 0..43
//	48     …    stored bytes
package snapshot

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"runtime"

	"github.com/klauspost/compress/zstd"

	"github.com/ferrystream/ferry/engine"
)

// Version is the format version this package writes and reads. Version 3 (ABI 4) holds the
// engine.KeyedState payload: keys with uvarint lengths, then TTL, timers and per-key states.
const Version = 3

// HeaderSize is the size of a chunk's fixed header.
const HeaderSize = 48

// MaxChunk is the payload size after which an operator starts a new chunk. A snapshot writes every
// key group at once and keeps one unfinished chunk per key group, so this bounds its memory to
// about 128 KiB per key group; zstd compresses in blocks of at most that size anyway.
const MaxChunk = 128 << 10

// MaxPayload bounds a chunk's payload (a chunk may exceed MaxChunk by one group's state); restore
// refuses larger ones, so snapshot must not write them.
const MaxPayload = 1 << 30

const (
	flagLast = 1 << 0
	flagZstd = 1 << 1
)

const magic = "FRYS"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// One encoder and one decoder for the whole process, each with the state for up to
// codecConcurrency EncodeAll or DecodeAll calls at a time (further calls wait): the operators of
// a TaskManager snapshot and restore at once, and a snapshot compresses on several goroutines.
var (
	codecConcurrency = min(runtime.GOMAXPROCS(0), 8)
	encoder, _       = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(codecConcurrency))
	decoder, _       = zstd.NewReader(nil, zstd.WithDecoderConcurrency(codecConcurrency), zstd.WithDecoderMaxMemory(MaxPayload))
)

// Header identifies whose state a chunk holds and where it sits in its key group.
type Header struct {
	Kind           string
	MaxParallelism int
	KeyGroup       int
	Fingerprint    uint64
	Chunk          int  // index within the key group
	Last           bool // the key group's last chunk
}

// KindID is the 32-bit id of an operator kind name stored in chunks.
func KindID(kind string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(kind))
	return h.Sum32()
}

// Encode appends the chunk for payload to dst. The payload is stored zstd-compressed unless
// compression does not make it smaller.
func Encode(dst []byte, h Header, payload []byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	flags := uint16(0)
	if h.Last {
		flags |= flagLast
	}
	dst = encoder.EncodeAll(payload, dst)
	if len(dst)-start-HeaderSize >= len(payload) {
		dst = append(dst[:start+HeaderSize], payload...)
	} else {
		flags |= flagZstd
	}
	stored := dst[start+HeaderSize:]
	hd := dst[start : start+HeaderSize]
	copy(hd, magic)
	binary.LittleEndian.PutUint16(hd[4:], Version)
	binary.LittleEndian.PutUint16(hd[6:], flags)
	binary.LittleEndian.PutUint32(hd[8:], KindID(h.Kind))
	binary.LittleEndian.PutUint32(hd[12:], uint32(h.MaxParallelism))
	binary.LittleEndian.PutUint32(hd[16:], uint32(h.KeyGroup))
	binary.LittleEndian.PutUint32(hd[20:], uint32(h.Chunk))
	binary.LittleEndian.PutUint64(hd[24:], h.Fingerprint)
	binary.LittleEndian.PutUint32(hd[32:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hd[36:], uint32(len(stored)))
	binary.LittleEndian.PutUint32(hd[40:], crc32.Checksum(stored, castagnoli))
	binary.LittleEndian.PutUint32(hd[44:], crc32.Checksum(hd[:44], castagnoli))
	return dst
}

// Decode validates chunk against the state the restoring operator expects (want's kind, max
// parallelism, key group and fingerprint) and returns its header and payload. The payload is
// decompressed into scratch (reused) or aliases chunk. Errors wrap engine.ErrData and say
// precisely what is wrong.
func Decode(chunk []byte, want Header, scratch []byte) (Header, []byte, error) {
	bad := func(format string, args ...any) (Header, []byte, error) {
		return Header{}, nil, fmt.Errorf("%w: state blob for key group %d: %s", engine.ErrData, want.KeyGroup, fmt.Sprintf(format, args...))
	}
	if len(chunk) < HeaderSize {
		return bad("truncated: %d bytes, the header needs %d", len(chunk), HeaderSize)
	}
	if string(chunk[:4]) != magic {
		return bad("not a Ferry state blob (magic %q)", chunk[:4])
	}
	if v := binary.LittleEndian.Uint16(chunk[4:]); v != Version {
		return bad("unknown format version %d (this library reads version %d)", v, Version)
	}
	if binary.LittleEndian.Uint32(chunk[44:]) != crc32.Checksum(chunk[:44], castagnoli) {
		return bad("header checksum mismatch: the blob is corrupt")
	}
	flags := binary.LittleEndian.Uint16(chunk[6:])
	if flags&^(flagLast|flagZstd) != 0 {
		return bad("unknown flags %#x", flags)
	}
	if k := binary.LittleEndian.Uint32(chunk[8:]); k != KindID(want.Kind) {
		return bad("written by another operator kind (id %#x), not %s", k, want.Kind)
	}
	if mp := int(binary.LittleEndian.Uint32(chunk[12:])); mp != want.MaxParallelism {
		return bad("max parallelism changed from %d to %d; Flink cannot redistribute key groups across a change of max parallelism", mp, want.MaxParallelism)
	}
	if kg := int(binary.LittleEndian.Uint32(chunk[16:])); kg != want.KeyGroup {
		return bad("holds key group %d", kg)
	}
	if fp := binary.LittleEndian.Uint64(chunk[24:]); fp != want.Fingerprint {
		return bad("written by an operator with a different spec (fingerprint %016x, expected %016x): the query or its state layout changed", fp, want.Fingerprint)
	}
	raw := int(binary.LittleEndian.Uint32(chunk[32:]))
	stored := chunk[HeaderSize:]
	if n := int(binary.LittleEndian.Uint32(chunk[36:])); n != len(stored) {
		return bad("stored length %d, but %d bytes follow the header (truncated or padded)", n, len(stored))
	}
	if binary.LittleEndian.Uint32(chunk[40:]) != crc32.Checksum(stored, castagnoli) {
		return bad("payload checksum mismatch: the blob is corrupt")
	}
	if raw > MaxPayload {
		return bad("payload of %d bytes exceeds the %d-byte limit", raw, MaxPayload)
	}
	h := Header{
		Kind: want.Kind, MaxParallelism: want.MaxParallelism, KeyGroup: want.KeyGroup, Fingerprint: want.Fingerprint,
		Chunk: int(binary.LittleEndian.Uint32(chunk[20:])), Last: flags&flagLast != 0,
	}
	if flags&flagZstd == 0 {
		if raw != len(stored) {
			return bad("payload length %d differs from the %d stored bytes", raw, len(stored))
		}
		return h, stored, nil
	}
	payload, err := decoder.DecodeAll(stored, scratch[:0])
	if err != nil {
		return bad("cannot decompress: %v", err)
	}
	if len(payload) != raw {
		return bad("decompressed to %d bytes, header says %d", len(payload), raw)
	}
	return h, payload, nil
}
