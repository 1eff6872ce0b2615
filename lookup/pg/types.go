package pg

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Kind is the root of a Flink logical type the PostgreSQL dialect of Flink's JDBC connector
// supports (PostgresDialect.supportedTypes), as far as this package handles it.
type Kind uint8

const (
	Boolean Kind = iota + 1
	TinyInt
	SmallInt
	Int
	BigInt
	Float
	Double
	Decimal
	Char
	Varchar
	Bytes
	Date
	Time
	Timestamp
	Array
)

// Type is a Flink logical type: Precision and Scale for DECIMAL, Precision for TIME and
// TIMESTAMP, Length for CHAR/VARCHAR (0: STRING), Elem for ARRAY. Nullability does not matter
// here: every value may be NULL.
type Type struct {
	Kind      Kind
	Precision int
	Scale     int
	Length    int
	Elem      *Type
}

// plainNames are the kinds that take no parameters, by their names as Flink SQL writes them:
// String renders them, ParseType reads them (plainKinds).
var plainNames = map[Kind]string{
	Boolean: "BOOLEAN", TinyInt: "TINYINT", SmallInt: "SMALLINT", Int: "INT", BigInt: "BIGINT",
	Float: "FLOAT", Double: "DOUBLE", Bytes: "BYTES", Date: "DATE",
}

// plainKinds is plainNames reversed, with the aliases INTEGER and STRING (VARCHAR of no length).
var plainKinds = func() map[string]Kind {
	m := map[string]Kind{"INTEGER": Int, "STRING": Varchar}
	for k, n := range plainNames {
		m[n] = k
	}
	return m
}()

// String renders the type as Flink SQL writes it.
func (t Type) String() string {
	if n, ok := plainNames[t.Kind]; ok {
		return n
	}
	switch t.Kind {
	case Decimal:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case Char:
		return fmt.Sprintf("CHAR(%d)", t.Length)
	case Varchar:
		if t.Length == 0 {
			return "STRING"
		}
		return fmt.Sprintf("VARCHAR(%d)", t.Length)
	case Time:
		return fmt.Sprintf("TIME(%d)", t.Precision)
	case Timestamp:
		return fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	case Array:
		if t.Elem == nil {
			return "ARRAY<?>"
		}
		return "ARRAY<" + t.Elem.String() + ">"
	}
	return fmt.Sprintf("TYPE(%d)", t.Kind)
}

// ParseType parses a Flink SQL type: BOOLEAN, TINYINT, SMALLINT, INT/INTEGER, BIGINT, FLOAT,
// DOUBLE, DECIMAL(p, s), CHAR(n), VARCHAR(n), STRING, BYTES, DATE, TIME[(p)], TIMESTAMP[(p)],
// ARRAY<T>; a trailing NOT NULL is ignored. Types the PostgreSQL dialect rejects at plan time
// (VARBINARY(n), BINARY(n), TIMESTAMP precision outside 1..6) and TIMESTAMP_LTZ (no converter in
// connector 4.0.0) are errors.
func ParseType(s string) (Type, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	u = strings.TrimSpace(strings.TrimSuffix(u, " NOT NULL"))
	if strings.HasPrefix(u, "ARRAY<") && strings.HasSuffix(u, ">") {
		e, err := ParseType(u[len("ARRAY<") : len(u)-1])
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: Array, Elem: &e}, nil
	}
	name, args := u, []int(nil)
	if i := strings.IndexByte(u, '('); i >= 0 && strings.HasSuffix(u, ")") {
		name = strings.TrimSpace(u[:i])
		for _, a := range strings.Split(u[i+1:len(u)-1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(a))
			if err != nil {
				return Type{}, fmt.Errorf("type %q: bad parameter %q", s, a)
			}
			args = append(args, n)
		}
	}
	arg := func(i, def int) int {
		if i < len(args) {
			return args[i]
		}
		return def
	}
	if k, ok := plainKinds[name]; ok {
		return Type{Kind: k}, nil
	}
	var t Type
	switch name {
	case "DECIMAL", "NUMERIC", "DEC":
		t = Type{Kind: Decimal, Precision: arg(0, 10), Scale: arg(1, 0)}
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return Type{}, fmt.Errorf("type %q: DECIMAL precision must be 1..38 and scale 0..precision", s)
		}
	case "CHAR":
		t = Type{Kind: Char, Length: arg(0, 1)}
	case "VARCHAR":
		t = Type{Kind: Varchar, Length: arg(0, 1)}
	case "TIME":
		t = Type{Kind: Time, Precision: arg(0, 0)}
	case "TIMESTAMP":
		t = Type{Kind: Timestamp, Precision: arg(0, 6)}
		if t.Precision < 1 || t.Precision > 6 {
			return Type{}, fmt.Errorf("type %q: the PostgreSQL dialect supports TIMESTAMP precision 1..6", s)
		}
	case "VARBINARY", "BINARY":
		return Type{}, fmt.Errorf("the PostgreSQL dialect doesn't support type: %s", u)
	case "TIMESTAMP_LTZ", "TIMESTAMP WITH LOCAL TIME ZONE":
		return Type{}, fmt.Errorf("type %s: Flink's JDBC connector 4.0.0 has no converter for it", u)
	default:
		return Type{}, fmt.Errorf("unsupported type %q", s)
	}
	return t, nil
}

// Values of Flink's internal representation, one Go type per Kind (NULL is nil everywhere):
//
//	BOOLEAN bool; TINYINT int8; SMALLINT int16; INT int32; BIGINT int64; FLOAT float32;
//	DOUBLE float64; DECIMAL DecimalValue (unscaled at the type's scale); CHAR/VARCHAR string
//	(UTF-8, as is); BYTES []byte; DATE int32 (days since 1970-01-01); TIME int32 (milliseconds
//	of the day); TIMESTAMP TimestampValue; ARRAY []any of element values.

// DecimalValue is a DECIMAL(p, s) value as its unscaled integer (value × 10^s) in 128-bit two's
// complement, the layout of Ferry's Arrow decimal128 columns; every Flink DECIMAL fits.
type DecimalValue struct {
	Lo uint64
	Hi int64
}

var two64 = new(big.Int).Lsh(big.NewInt(1), 64)

// DecimalOf returns the 128-bit form of an unscaled value; ok is false outside ±2^127.
func DecimalOf(u *big.Int) (d DecimalValue, ok bool) {
	if u.BitLen() > 127 {
		return DecimalValue{}, false
	}
	lo := new(big.Int).And(u, new(big.Int).Sub(two64, big.NewInt(1)))
	hi := new(big.Int).Rsh(u, 64) // arithmetic shift: floor
	return DecimalValue{Lo: lo.Uint64(), Hi: hi.Int64()}, true
}

// Big returns the unscaled value.
func (d DecimalValue) Big() *big.Int {
	v := big.NewInt(d.Hi)
	v.Mul(v, two64)
	return v.Add(v, new(big.Int).SetUint64(d.Lo))
}

// TimestampValue is Flink's TimestampData: milliseconds since 1970-01-01T00:00 (floor) and the
// nanoseconds within that millisecond (0..999999).
type TimestampValue struct {
	Millis      int64
	NanoOfMilli int32
}
