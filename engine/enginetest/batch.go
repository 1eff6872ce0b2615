// Package enginetest builds engine batches from Go values for tests, with the adversarial
// details real producers have: non-zero offsets and garbage under NULL slots.
package enginetest

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"

	"github.com/ferrystream/ferry/engine"
)

// Timestamp is a TIMESTAMP value: epoch milliseconds plus nanoseconds within the millisecond.
type Timestamp struct {
	Millis int64
	Nanos  int32
}

// Options shape how a batch is laid out in memory.
type Options struct {
	// Offset shifts every column's rows by this many elements (buffers hold junk before it).
	Offset int
	// Garbage fills the value bytes under NULL slots with random bytes instead of zeros.
	Garbage *rand.Rand
}

// Batch builds a batch of len(rows) rows. rows[i][c] is the value of column c: nil for NULL,
// bool, int64 (all integer types and DATE), float32, float64, string, *big.Int (DECIMAL
// unscaled) or Timestamp. kinds gives each row's RowKind.
func Batch(types []engine.Type, rows [][]any, kinds []engine.RowKind, opt Options) *engine.Batch {
	b := &engine.Batch{Len: len(rows), Kinds: append([]engine.RowKind(nil), kinds...)}
	for c, t := range types {
		b.Cols = append(b.Cols, column(t, c, rows, opt))
	}
	for _, k := range kinds {
		if k == engine.UpdateBefore || k == engine.Delete {
			b.Retracts = true
		}
	}
	return b
}

func column(t engine.Type, c int, rows [][]any, opt Options) engine.Column {
	off := opt.Offset
	n := off + len(rows)
	col := engine.Column{Type: t, Offset: off}
	hasNull := false
	for _, r := range rows {
		if r[c] == nil {
			hasNull = true
		}
	}
	if hasNull {
		col.Valid = make([]byte, (n+7)/8)
		for i, r := range rows {
			if r[c] != nil {
				j := off + i
				col.Valid[j>>3] |= 1 << (j & 7)
			}
		}
	}
	junk := func(b []byte) {
		if opt.Garbage != nil {
			for i := range b {
				b[i] = byte(opt.Garbage.Uint32())
			}
		}
	}
	switch t.ID {
	case engine.Boolean:
		col.Data = make([]byte, (n+7)/8)
		for i, r := range rows {
			j := off + i
			v, ok := r[c].(bool)
			if !ok && opt.Garbage != nil {
				v = opt.Garbage.IntN(2) == 1
			}
			if v {
				col.Data[j>>3] |= 1 << (j & 7)
			}
		}
	case engine.Varchar, engine.Binary: // values: string (or []byte for VARBINARY)
		col.Offs = make([]int32, n+1)
		var data []byte
		for i := 0; i < off; i++ {
			data = append(data, "junk"...)
			col.Offs[i+1] = int32(len(data))
		}
		for i, r := range rows {
			if s, ok := r[c].(string); ok {
				data = append(data, s...)
			} else if b, ok := r[c].([]byte); ok {
				data = append(data, b...)
			} else if opt.Garbage != nil {
				g := make([]byte, opt.Garbage.IntN(12))
				junk(g)
				data = append(data, g...)
			}
			col.Offs[off+i+1] = int32(len(data))
		}
		col.Data = data
	default:
		w := t.Width()
		col.Data = make([]byte, n*w)
		junk(col.Data[:off*w])
		for i, r := range rows {
			put(t, col.Data[(off+i)*w:(off+i+1)*w], r[c], junk)
		}
	}
	return col
}

func put(t engine.Type, dst []byte, v any, junk func([]byte)) {
	if v == nil {
		junk(dst)
		return
	}
	switch t.ID {
	case engine.TinyInt:
		dst[0] = byte(v.(int64))
	case engine.SmallInt:
		binary.LittleEndian.PutUint16(dst, uint16(v.(int64)))
	case engine.Int, engine.Date:
		binary.LittleEndian.PutUint32(dst, uint32(v.(int64)))
	case engine.BigInt:
		binary.LittleEndian.PutUint64(dst, uint64(v.(int64)))
	case engine.Float:
		binary.LittleEndian.PutUint32(dst, math.Float32bits(v.(float32)))
	case engine.Double:
		binary.LittleEndian.PutUint64(dst, math.Float64bits(v.(float64)))
	case engine.Decimal:
		PutDecimal128(dst, v.(*big.Int))
	case engine.Timestamp:
		ts := v.(Timestamp)
		if t.Compact() {
			binary.LittleEndian.PutUint64(dst, uint64(ts.Millis))
		} else {
			binary.LittleEndian.PutUint64(dst, uint64(ts.Millis))
			binary.LittleEndian.PutUint32(dst[8:], uint32(ts.Nanos))
		}
	}
}

// PutDecimal128 writes v as a 16-byte little-endian two's-complement integer.
func PutDecimal128(dst []byte, v *big.Int) {
	u := new(big.Int).Set(v)
	if u.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	be := u.FillBytes(make([]byte, 16))
	for i := range 16 {
		dst[i] = be[15-i]
	}
}
