package pg

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// keyParam collects one lookup key's values of a batch into the array parameter of the batched
// statement. Its element type mirrors what pgjdbc binds for Flink's per-key statement (setInt →
// int4, setString → varchar, setFloat → float4, …), so PostgreSQL resolves the same `=` operator;
// DATE, TIME and TIMESTAMP go as pgjdbc's untyped text does, typed as the column (sqlType).
type keyParam struct {
	name    string
	t       Type
	sqlType string         // the array's element type in the statement: int4, varchar, date, …
	colOID  uint32         // the key column's type, for DATE/TIME/TIMESTAMP keys
	zone    *time.Location // the JVM's default zone: TIMESTAMP keys on timestamptz columns
}

// pgjdbcType is the parameter type pgjdbc gives a key of Flink type t (JdbcRowDataLookupFunction
// binds keys through the dialect's external converter), or "" when the column decides (DATE,
// TIME, TIMESTAMP: untyped text).
func pgjdbcType(t Type) (string, error) {
	switch t.Kind {
	case Boolean:
		return "bool", nil
	case TinyInt, SmallInt:
		return "int2", nil
	case Int:
		return "int4", nil
	case BigInt:
		return "int8", nil
	case Float:
		return "float4", nil
	case Double:
		return "float8", nil
	case Decimal:
		return "numeric", nil
	case Char, Varchar:
		return "varchar", nil
	case Bytes:
		return "bytea", nil
	case Date, Time, Timestamp:
		return "", nil
	}
	return "", fmt.Errorf("Flink type %s cannot be a lookup key of the JDBC PostgreSQL lookup", t)
}

// temporalType is the array element type of a DATE, TIME or TIMESTAMP key on a column of type
// oid (what PostgreSQL infers for pgjdbc's untyped parameter), or an error when this package does
// not replicate the text pgjdbc sends for that pair.
func temporalType(name string, t Type, oid uint32) (string, error) {
	switch {
	case t.Kind == Date && oid == pgtype.DateOID:
		return "date", nil
	case t.Kind == Time && oid == pgtype.TimeOID:
		return "time", nil
	case t.Kind == Timestamp && oid == pgtype.TimestampOID:
		return "timestamp", nil
	case t.Kind == Timestamp && oid == pgtype.TimestamptzOID:
		return "timestamptz", nil
	}
	return "", fmt.Errorf("key %s: a %s key on a PostgreSQL %s column is not supported (pgjdbc's untyped text would be cast to it)", name, t, oidName(oid))
}

// values builds the array parameter from the key's values of the distinct keys; every value was
// checked by checkKey.
func (p *keyParam) values(keys [][]any, i int) (any, error) {
	switch p.t.Kind {
	case Boolean:
		return collect(keys, i, func(v any) bool { return v.(bool) }), nil
	case TinyInt:
		return collect(keys, i, func(v any) int16 { return int16(v.(int8)) }), nil
	case SmallInt:
		return collect(keys, i, func(v any) int16 { return v.(int16) }), nil
	case Int:
		return collect(keys, i, func(v any) int32 { return v.(int32) }), nil
	case BigInt:
		return collect(keys, i, func(v any) int64 { return v.(int64) }), nil
	case Float:
		return collect(keys, i, func(v any) float32 { return v.(float32) }), nil
	case Double:
		return collect(keys, i, func(v any) float64 { return v.(float64) }), nil
	case Decimal:
		return collect(keys, i, func(v any) pgtype.Numeric {
			return pgtype.Numeric{Int: v.(DecimalValue).Big(), Exp: -int32(p.t.Scale), Valid: true}
		}), nil
	case Char, Varchar:
		return collect(keys, i, func(v any) string { return v.(string) }), nil
	case Bytes:
		return collect(keys, i, func(v any) []byte { return v.([]byte) }), nil
	case Date:
		return collect(keys, i, func(v any) pgtype.Date {
			return pgtype.Date{Time: time.Unix(int64(v.(int32))*86400, 0).UTC(), Valid: true}
		}), nil
	case Time:
		// Time.valueOf(LocalTime) keeps whole seconds only
		return collect(keys, i, func(v any) pgtype.Time {
			return pgtype.Time{Microseconds: int64(v.(int32)) / 1000 * 1_000_000, Valid: true}
		}), nil
	case Timestamp:
		if p.colOID == pgtype.TimestamptzOID {
			// pgjdbc sends the wall clock with the JVM zone's offset: that instant
			return collect(keys, i, func(v any) pgtype.Timestamptz {
				w := wallOf(v.(TimestampValue))
				l := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), p.zone)
				return pgtype.Timestamptz{Time: l, Valid: true}
			}), nil
		}
		return collect(keys, i, func(v any) pgtype.Timestamp {
			return pgtype.Timestamp{Time: wallOf(v.(TimestampValue)), Valid: true}
		}), nil
	}
	return nil, fmt.Errorf("key %s: unsupported type %s", p.name, p.t)
}

// collect maps the i-th value of every key through f.
func collect[E any](keys [][]any, i int, f func(any) E) []E {
	out := make([]E, len(keys))
	for j, k := range keys {
		out[j] = f(k[i])
	}
	return out
}

// wallOf is the wall clock of a TIMESTAMP value, as a UTC time.Time.
func wallOf(v TimestampValue) time.Time {
	return time.UnixMilli(v.Millis).Add(time.Duration(v.NanoOfMilli)).UTC()
}

// checkKey checks that v (not NULL) is a value of the key's Flink type that this package binds
// as pgjdbc would, and returns it.
func (p *keyParam) checkKey(v any) error {
	want := ""
	if check, ok := plainValues[p.t.Kind]; ok {
		want = check(v)
	}
	switch p.t.Kind {
	case Char, Varchar:
		s, ok := v.(string)
		want = pick(ok, "string")
		if ok && containsNUL(s) {
			return fmt.Errorf("key %s: a string with a NUL character cannot be sent to PostgreSQL", p.name)
		}
	case Date:
		d, ok := v.(int32)
		want = pick(ok, "int32 (epoch days)")
		if ok && time.Unix(int64(d)*86400, 0).UTC().Before(gregorianStart) {
			return fmt.Errorf("key %s: DATE before 1582-10-15 is not sent as pgjdbc would", p.name)
		}
	case Time:
		ms, ok := v.(int32)
		want = pick(ok, "int32 (millisecond of the day)")
		if ok && (ms < 0 || ms >= 86400_000) {
			return fmt.Errorf("key %s: TIME value %d ms is outside the day", p.name, ms)
		}
	case Timestamp:
		ts, ok := v.(TimestampValue)
		want = pick(ok, "TimestampValue")
		if ok {
			w := wallOf(ts)
			switch {
			case ts.NanoOfMilli < 0 || ts.NanoOfMilli >= 1_000_000 || ts.NanoOfMilli%1000 != 0:
				return fmt.Errorf("key %s: %+v is not a TIMESTAMP(p <= 6) value", p.name, ts)
			case w.Before(gregorianStart):
				return fmt.Errorf("key %s: TIMESTAMP before 1582-10-15 is not sent as pgjdbc would", p.name)
			case inGap(w, p.zone):
				return fmt.Errorf("key %s: TIMESTAMP %s is in a daylight-saving gap of %s (pgjdbc shifts it)", p.name, w.Format(time.DateTime), p.zone)
			}
		}
	}
	if want != "" {
		return fmt.Errorf("key %s (%s): got a Go %T, want %s", p.name, p.t, v, want)
	}
	return nil
}

func pick(ok bool, want string) string {
	if ok {
		return ""
	}
	return want
}

// plainValues are the kinds whose key values need no check beyond their Go type (types.go): each
// returns "" when v has that type, else the type's name.
var plainValues = map[Kind]func(v any) string{
	Boolean: expect[bool]("bool"), TinyInt: expect[int8]("int8"), SmallInt: expect[int16]("int16"),
	Int: expect[int32]("int32"), BigInt: expect[int64]("int64"), Float: expect[float32]("float32"),
	Double: expect[float64]("float64"), Decimal: expect[DecimalValue]("DecimalValue"), Bytes: expect[[]byte]("[]byte"),
}

// expect checks that a value is a T: "" when it is, else want (the name of T).
func expect[T any](want string) func(v any) string {
	return func(v any) string {
		_, ok := v.(T)
		return pick(ok, want)
	}
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

// appendKey appends a checked key value to b so that two keys have equal encodings exactly when
// Flink's cache (GenericRowData.equals over the boxed values) holds them equal: floats by
// floatToIntBits (every NaN alike, -0.0 apart from 0.0), strings and bytes by content.
func appendKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case bool:
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case int8:
		return append(b, byte(x))
	case int16:
		return binary.LittleEndian.AppendUint16(b, uint16(x))
	case int32:
		return binary.LittleEndian.AppendUint32(b, uint32(x))
	case int64:
		return binary.LittleEndian.AppendUint64(b, uint64(x))
	case float32:
		bits := math.Float32bits(x)
		if x != x {
			bits = 0x7fc00000
		}
		return binary.LittleEndian.AppendUint32(b, bits)
	case float64:
		bits := math.Float64bits(x)
		if x != x {
			bits = 0x7ff8000000000000
		}
		return binary.LittleEndian.AppendUint64(b, bits)
	case DecimalValue:
		b = binary.LittleEndian.AppendUint64(b, x.Lo)
		return binary.LittleEndian.AppendUint64(b, uint64(x.Hi))
	case string:
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...)
	case []byte:
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...)
	case TimestampValue:
		b = binary.LittleEndian.AppendUint64(b, uint64(x.Millis))
		return binary.LittleEndian.AppendUint32(b, uint32(x.NanoOfMilli))
	}
	panic(fmt.Sprintf("appendKey: unchecked %T", v)) // checkKey admits only the types above
}
