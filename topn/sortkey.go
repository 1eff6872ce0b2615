package topn

import (
	"encoding/binary"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// Null markers of a sort field: NULL before or after every value, as SortFieldSpec.nullIsLast
// says, whatever the field's direction (Flink's generated comparator does not negate it).
const (
	nullFirst byte = 0
	notNull   byte = 1
	nullLast  byte = 2
)

// sortKeyEncoder encodes the sort key of a stored row so that bytes.Compare orders two keys as
// Flink's generated RecordComparator over the sort fields does, and two keys are equal exactly
// when the comparator says 0, which for the types it takes (no FLOAT/DOUBLE) is also when Flink's
// sort-key BinaryRowData are equal. Per field: a null marker, then for a value its bytes in an
// order-preserving form, inverted for DESC:
//
//   - integers, DATE, TIME, DECIMAL (its 128-bit unscaled value, of the column's one scale) and a
//     TIMESTAMP's millisecond: big-endian with the sign bit flipped;
//   - a TIMESTAMP(p > 3)'s nanosecond of the millisecond: big-endian after its millisecond
//     (TimestampData.compareTo);
//   - BOOLEAN: 0 or 1 (false before true);
//   - VARCHAR: its UTF-8 bytes with 0x00 written 0x00 0xFF, then 0x00 0x01, which orders as
//     BinaryStringData.compareTo (unsigned bytes, a prefix first) and ends where the value ends.
type sortKeyEncoder struct {
	layout *joincore.RowLayout
	keys   []SortKey
}

// encode appends the sort key of row (encoded with layout) to dst.
func (e *sortKeyEncoder) encode(dst []byte, row []byte) []byte {
	for _, k := range e.keys {
		var v []byte
		null := e.layout.IsNull(row, k.Field)
		if !null {
			v = e.layout.Field(row, k.Field)
		}
		dst = e.appendField(dst, k, null, v)
	}
	return dst
}

// encodeRow appends the sort key of row i of in to dst: the bytes encode gives for the row
// encoded.
func (e *sortKeyEncoder) encodeRow(dst []byte, in *engine.Batch, i int) []byte {
	for _, k := range e.keys {
		col := &in.Cols[k.Field]
		var v []byte
		null := col.IsNull(i)
		if !null {
			switch e.layout.Types()[k.Field].ID {
			case engine.Varchar:
				v = col.Bytes(i)
			case engine.Boolean:
				v = falseTrue[:1]
				if col.Bool(i) {
					v = falseTrue[1:]
				}
			default:
				v = col.Fixed(i)
			}
		}
		dst = e.appendField(dst, k, null, v)
	}
	return dst
}

// falseTrue holds a BOOLEAN's byte for false and for true.
var falseTrue = [2]byte{0, 1}

// appendField appends sort field k of a value to dst: NULL, or v as joincore.RowLayout.Field
// gives it.
func (e *sortKeyEncoder) appendField(dst []byte, k SortKey, null bool, v []byte) []byte {
	if null {
		if k.NullsLast {
			return append(dst, nullLast)
		}
		return append(dst, nullFirst)
	}
	dst = append(dst, notNull)
	start := len(dst)
	switch t := e.layout.Types()[k.Field]; t.ID {
	case engine.Boolean:
		dst = append(dst, v[0])
	case engine.Varchar:
		for _, b := range v {
			if b == 0 {
				dst = append(dst, 0, 0xFF)
			} else {
				dst = append(dst, b)
			}
		}
		dst = append(dst, 0, 1)
	case engine.Timestamp:
		dst = appendSigned(dst, v[:8])
		if t.Precision > 3 {
			dst = binary.BigEndian.AppendUint32(dst, binary.LittleEndian.Uint32(v[8:12]))
		}
	default: // integers, DATE, TIME (carried as INT), DECIMAL
		dst = appendSigned(dst, v)
	}
	if !k.Ascending {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}

// appendSigned appends the little-endian two's-complement integer v big-endian with its sign bit
// flipped, so that unsigned byte order is signed order.
func appendSigned(dst, v []byte) []byte {
	start := len(dst)
	for i := len(v) - 1; i >= 0; i-- {
		dst = append(dst, v[i])
	}
	dst[start] ^= 0x80
	return dst
}
