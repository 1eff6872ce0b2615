package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// KeyEncoder encodes the grouping key of every row of a batch exactly as Flink's key selector
// does (BinaryRowDataKeySelector: a generated projection into a BinaryRowData written by
// BinaryRowWriter, RowKind byte 0), and hashes each key with BinaryRowData.hashCode. The
// encodings are what Flink hashes for shuffles and key groups, so equal encodings mean equal
// Flink keys.
//
// Layout of a key row of n fields (docs/state.md#keys-and-key-groups): a header of
// ((n+63+8)/64)*8 bytes (byte 0 the RowKind, null bit i at bit i+8), one 8-byte slot per field,
// then the variable part in field order. VARCHAR up to 7 bytes lives in its slot (top byte
// 0x80|len; BINARY/VARBINARY alike); longer ones go to the variable part, padded to 8 bytes, with slot (offset<<32)|len.
// Non-compact DECIMAL reserves 16 bytes (BigInteger.toByteArray at the start, slot
// (offset<<32)|len) and non-compact TIMESTAMP reserves 8 bytes (millis, slot
// (offset<<32)|nanoOfMillisecond), also when NULL.
//
// A KeyEncoder owns its scratch memory, reused across batches; it is not safe for concurrent use.
type KeyEncoder struct {
	cols       []int
	types      []Type
	headerSize int
	fixedSize  int
	fixedVar   int  // variable-part bytes every row reserves (non-compact DECIMAL/TIMESTAMP)
	hasVarchar bool // some key field is VARCHAR or BINARY/VARBINARY

	buf    []byte  // encoded keys of the current batch, back to back
	offs   []int32 // row i is buf[offs[i]:offs[i+1]]
	cursor []int32 // per-row write position in the variable part, relative to the row
	hashes []int32
}

// NewKeyEncoder returns an encoder for the key fields cols of a row whose field types are types.
func NewKeyEncoder(cols []int, types []Type) *KeyEncoder {
	e := &KeyEncoder{cols: cols}
	for _, c := range cols {
		t := types[c]
		e.types = append(e.types, t)
		switch {
		case t.Variable():
			e.hasVarchar = true
		case t.ID == Decimal && !t.Compact():
			e.fixedVar += 16
		case t.ID == Timestamp && !t.Compact():
			e.fixedVar += 8
		}
	}
	n := len(cols)
	e.headerSize = ((n + 63 + 8) / 64) * 8
	e.fixedSize = e.headerSize + 8*n
	return e
}

// maxKeyBytes bounds the encoded keys of one batch: row offsets are int32, as in BinaryRowData.
const maxKeyBytes = math.MaxInt32

// Encode encodes and hashes the keys of all rows of b. It fails, before encoding anything, when
// the batch's encoded keys would exceed 2 GiB.
func (e *KeyEncoder) Encode(b *Batch) error {
	rows := b.Len
	e.offs = grow(e.offs, rows+1)
	e.hashes = grow(e.hashes, rows)
	base := int32(e.fixedSize + e.fixedVar)
	for i := 0; i < rows; i++ {
		e.offs[i+1] = base
	}
	total := int64(base) * int64(rows)
	for k, c := range e.cols {
		if !e.types[k].Variable() {
			continue
		}
		col := &b.Cols[c]
		for i := 0; i < rows; i++ {
			if l := col.Offs[col.Offset+i+1] - col.Offs[col.Offset+i]; l > 7 && !col.IsNull(i) {
				padded := (l + 7) &^ 7
				e.offs[i+1] += padded // may wrap; total decides before offs is used
				total += int64(padded)
			}
		}
	}
	if total > maxKeyBytes {
		return fmt.Errorf("%w: the batch's grouping keys take %d bytes, more than 2 GiB; send smaller batches", ErrData, total)
	}
	e.offs[0] = 0
	for i := 0; i < rows; i++ {
		e.offs[i+1] += e.offs[i]
	}
	size := int(e.offs[rows])
	e.buf = grow(e.buf, size)
	clear(e.buf)
	if e.fixedVar > 0 || e.hasVarchar {
		e.cursor = grow(e.cursor, rows)
		for i := range e.cursor {
			e.cursor[i] = int32(e.fixedSize)
		}
	}
	for k, c := range e.cols {
		e.encodeField(k, &b.Cols[c], rows)
	}
	for i := 0; i < rows; i++ {
		e.hashes[i] = HashRow(e.buf[e.offs[i]:e.offs[i+1]])
	}
	return nil
}

// FixedSize is the size of every encoded key when it does not vary (no VARCHAR field), else 0.
func (e *KeyEncoder) FixedSize() int {
	if e.hasVarchar {
		return 0
	}
	return e.fixedSize + e.fixedVar
}

// Key returns the encoded key of row i of the last encoded batch.
func (e *KeyEncoder) Key(i int) []byte { return e.buf[e.offs[i]:e.offs[i+1]] }

// Hashes returns BinaryRowData.hashCode of the key of every row of the last encoded batch.
func (e *KeyEncoder) Hashes() []int32 { return e.hashes }

// Hash returns BinaryRowData.hashCode of the key of row i of the last encoded batch.
func (e *KeyEncoder) Hash(i int) int32 { return e.hashes[i] }

func (e *KeyEncoder) encodeField(k int, col *Column, rows int) {
	t := e.types[k]
	slot := e.headerSize + 8*k
	buf, offs := e.buf, e.offs
	if col.Valid != nil {
		nullByte, nullBit := (k+8)>>3, byte(1)<<((k+8)&7)
		for i := 0; i < rows; i++ {
			if col.IsNull(i) {
				buf[int(offs[i])+nullByte] |= nullBit
			}
		}
	}
	// One loop per layout, so no per-row type switch; NULL slots stay zero (BinaryRowWriter's
	// setNullAt), except that non-compact DECIMAL/TIMESTAMP reserve their variable part anyway.
	switch {
	case t.ID == Boolean:
		for i := 0; i < rows; i++ {
			if !col.IsNull(i) && col.Bool(i) {
				buf[int(offs[i])+slot] = 1
			}
		}
	case t.Variable(): // VARCHAR and BINARY/VARBINARY: BinaryRowWriter.writeString and writeBinary lay bytes out alike
		for i := 0; i < rows; i++ {
			if col.IsNull(i) {
				continue
			}
			row := buf[offs[i]:offs[i+1]]
			s := row[slot : slot+8]
			v := col.Bytes(i)
			if len(v) <= 7 {
				copy(s, v)
				s[7] = 0x80 | byte(len(v))
			} else {
				cur := e.cursor[i]
				copy(row[cur:], v)
				binary.LittleEndian.PutUint64(s, uint64(cur)<<32|uint64(len(v)))
				e.cursor[i] = cur + int32((len(v)+7)&^7)
			}
		}
	case t.ID == Decimal && t.Compact():
		// The unscaled value fits the low 8 bytes of the 16-byte Arrow decimal.
		encodeFixed(buf, offs, slot, col, rows, Values[int64](&Column{Data: col.Data, Offset: 2 * col.Offset}, 2*rows), 2)
	case t.ID == Decimal:
		e.encodeReserved(slot, col, rows, 16, func(i int, part []byte) uint32 {
			return uint32(putUnscaledBytes(part, col.Fixed(i)))
		})
	case t.ID == Timestamp && !t.Compact():
		e.encodeReserved(slot, col, rows, 8, func(i int, part []byte) uint32 {
			v := col.Fixed(i)
			copy(part, v[:8])
			return binary.LittleEndian.Uint32(v[8:12]) // nano of millisecond
		})
	default: // fixed width: TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, TIMESTAMP(p<=3)
		switch t.Width() {
		case 1:
			encodeFixed(buf, offs, slot, col, rows, Values[int8](col, rows), 1)
		case 2:
			encodeFixed(buf, offs, slot, col, rows, Values[int16](col, rows), 1)
		case 4:
			encodeFixed(buf, offs, slot, col, rows, Values[int32](col, rows), 1)
		default:
			encodeFixed(buf, offs, slot, col, rows, Values[int64](col, rows), 1)
		}
	}
}

// encodeReserved lays out a non-compact DECIMAL or TIMESTAMP field: every row, NULL or not,
// reserves width bytes of its variable part (BinaryRowWriter does), whose offset goes into the
// high 32 bits of the slot; for a row that is not NULL, put writes the value into the reserved
// bytes and returns the slot's low 32 bits (the unscaled value's length, the nano of millisecond).
func (e *KeyEncoder) encodeReserved(slot int, col *Column, rows int, width int32, put func(i int, part []byte) uint32) {
	for i := 0; i < rows; i++ {
		row := e.buf[e.offs[i]:e.offs[i+1]]
		cur := e.cursor[i]
		e.cursor[i] = cur + width
		low := uint32(0)
		if !col.IsNull(i) {
			low = put(i, row[cur:cur+width])
		}
		binary.LittleEndian.PutUint64(row[slot:], uint64(cur)<<32|uint64(low))
	}
}

// encodeFixed stores the raw little-endian bits of vals[i*stride] into the slot of row i, for
// rows that are not NULL; the slot's remaining bytes stay zero (no sign extension, as
// BinaryRowWriter.writeInt and friends).
func encodeFixed[T Scalar](buf []byte, offs []int32, slot int, col *Column, rows int, vals []T, stride int) {
	if col.Valid == nil {
		for i := 0; i < rows; i++ {
			*(*T)(unsafe.Pointer(&buf[int(offs[i])+slot])) = vals[i*stride]
		}
		return
	}
	for i := 0; i < rows; i++ {
		if !col.IsNull(i) {
			*(*T)(unsafe.Pointer(&buf[int(offs[i])+slot])) = vals[i*stride]
		}
	}
}

// putUnscaledBytes writes the 16-byte little-endian two's-complement value le as Java's
// BigInteger.toByteArray does (minimal big-endian two's complement, at least one byte) into
// dst and returns the byte count.
func putUnscaledBytes(dst, le []byte) int {
	neg := le[15]&0x80 != 0
	sign := byte(0)
	if neg {
		sign = 0xff
	}
	// Drop redundant leading sign bytes, keeping one if the next byte's top bit disagrees.
	n := 16
	for n > 1 && le[n-1] == sign && (le[n-2]&0x80 != 0) == neg {
		n--
	}
	for i := 0; i < n; i++ {
		dst[i] = le[n-1-i]
	}
	return n
}

// grow returns s resized to n elements, reusing its array when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}
