package enginetest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/ferrystream/ferry/engine"
)

// Row is one decoded changelog row: its RowKind and values in Batch's representation.
type Row struct {
	Kind   engine.RowKind
	Values []any
}

// String renders a row like Flink's test harnesses: "+I[1, 2.5, null]". -0.0 prints with its
// bits so it never compares equal to 0.0. Every NaN prints as NaN: the sign and payload of a NaN
// produced by arithmetic depend on operand order, which neither Java's JIT nor Go's compiler fix
// (JLS 4.2.3), so they are not part of Flink's observable contract.
func (r Row) String() string {
	var b strings.Builder
	b.WriteString([...]string{"+I", "-U", "+U", "-D"}[r.Kind&3])
	b.WriteByte('[')
	for i, v := range r.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Format(v))
	}
	b.WriteByte(']')
	return b.String()
}

// Format renders one value.
func Format(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case float32:
		if x == 0 && math.Signbit(float64(x)) {
			return "-0.0f"
		}
		return fmt.Sprint(x) + "f"
	case float64:
		if x == 0 && math.Signbit(x) {
			return "-0.0"
		}
		return fmt.Sprint(x)
	case string:
		return fmt.Sprintf("%q", x)
	case *big.Int:
		return x.String()
	case Timestamp:
		return fmt.Sprintf("ts(%d,%d)", x.Millis, x.Nanos)
	}
	return fmt.Sprint(v)
}

// Rows decodes an output batch.
func Rows(o *engine.OutBatch) []Row {
	if o.Len == 0 {
		return nil
	}
	out := make([]Row, o.Len)
	kinds := o.Kinds()
	for j := range out {
		out[j].Kind = kinds[j]
		for c := range o.Cols[:len(o.Cols)-1] {
			out[j].Values = append(out[j].Values, value(&o.Cols[c], j))
		}
	}
	return out
}

func value(c *engine.OutColumn, j int) any {
	if c.Valid != nil && c.Valid[j>>3]&(1<<(j&7)) == 0 {
		return nil
	}
	t := c.Type
	if t.ID == engine.Boolean {
		return c.Data[j>>3]&(1<<(j&7)) != 0
	}
	if t.Variable() {
		return string(c.Data[c.Offs[j]:c.Offs[j+1]])
	}
	w := t.Width()
	d := c.Data[j*w : (j+1)*w]
	switch t.ID {
	case engine.TinyInt:
		return int64(int8(d[0]))
	case engine.SmallInt:
		return int64(int16(binary.LittleEndian.Uint16(d)))
	case engine.Int, engine.Date:
		return int64(int32(binary.LittleEndian.Uint32(d)))
	case engine.BigInt:
		return int64(binary.LittleEndian.Uint64(d))
	case engine.Float:
		return math.Float32frombits(binary.LittleEndian.Uint32(d))
	case engine.Double:
		return math.Float64frombits(binary.LittleEndian.Uint64(d))
	case engine.Decimal:
		be := make([]byte, 16)
		for i := range be {
			be[i] = d[15-i]
		}
		v := new(big.Int).SetBytes(be)
		if d[15]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), 128))
		}
		return v
	case engine.Timestamp:
		ts := Timestamp{Millis: int64(binary.LittleEndian.Uint64(d))}
		if w == 12 {
			ts.Nanos = int32(binary.LittleEndian.Uint32(d[8:]))
		}
		return ts
	}
	panic(fmt.Sprintf("type %v", t))
}
