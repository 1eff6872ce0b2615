package engine

import (
	"fmt"
	"strconv"
	"strings"
)

// TypeID names a Flink logical type root that Ferry knows how to carry.
type TypeID uint8

const (
	Boolean TypeID = iota + 1
	TinyInt
	SmallInt
	Int
	BigInt
	Float
	Double
	Decimal
	Varchar
	Date
	Timestamp
	// Binary is BINARY(n), VARBINARY(n) and BYTES (Flink's byte[]): bytes laid out as VARCHAR's,
	// Arrow's binary ("z"). It is also the type of Ferry's own opaque encodings (the data views
	// of partial rows, docs/abi.md).
	Binary
)

// Type is a Flink logical type with its parameters. Precision and Scale apply to DECIMAL;
// Precision applies to TIMESTAMP.
type Type struct {
	ID        TypeID
	Precision int
	Scale     int
	Nullable  bool
}

// String renders the type the way Flink SQL writes it, with NOT NULL when not nullable.
func (t Type) String() string {
	var s string
	switch t.ID {
	case Boolean:
		s = "BOOLEAN"
	case TinyInt:
		s = "TINYINT"
	case SmallInt:
		s = "SMALLINT"
	case Int:
		s = "INT"
	case BigInt:
		s = "BIGINT"
	case Float:
		s = "FLOAT"
	case Double:
		s = "DOUBLE"
	case Decimal:
		s = fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case Varchar:
		s = "VARCHAR"
	case Binary:
		s = "BYTES"
	case Date:
		s = "DATE"
	case Timestamp:
		s = fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	default:
		s = fmt.Sprintf("TYPE(%d)", t.ID)
	}
	if !t.Nullable {
		s += " NOT NULL"
	}
	return s
}

// Compact reports whether Flink stores values of t inline in a BinaryRowData slot:
// DECIMAL with precision <= 18 and TIMESTAMP with precision <= 3 (DecimalData.isCompact,
// TimestampData.isCompact). Other types are always compact except VARCHAR.
func (t Type) Compact() bool {
	switch t.ID {
	case Decimal:
		return t.Precision <= 18
	case Timestamp:
		return t.Precision <= 3
	case Varchar, Binary:
		return false
	}
	return true
}

// SameAs reports whether t and o are the same type, nullability aside.
func (t Type) SameAs(o Type) bool {
	return t.ID == o.ID && t.Precision == o.Precision && t.Scale == o.Scale
}

// Variable reports whether values of t have variable length: VARCHAR and VARBINARY, laid out
// as validity, int32 offsets and data.
func (t Type) Variable() bool { return t.ID == Varchar || t.ID == Binary }

// Width is the byte width of one value in the Arrow data buffer; 0 for bit-packed BOOLEAN and
// for VARCHAR, whose values are variable.
func (t Type) Width() int {
	switch t.ID {
	case TinyInt:
		return 1
	case SmallInt:
		return 2
	case Int, Date, Float:
		return 4
	case BigInt, Double:
		return 8
	case Decimal:
		return 16
	case Timestamp:
		if t.Precision <= 3 {
			return 8
		}
		return 12
	}
	return 0
}

// ArrowFormat is the Arrow C Data format string a column of type t crosses the boundary with
// (docs/abi.md).
func (t Type) ArrowFormat() string {
	switch t.ID {
	case Boolean:
		return "b"
	case TinyInt:
		return "c"
	case SmallInt:
		return "s"
	case Int:
		return "i"
	case BigInt:
		return "l"
	case Float:
		return "f"
	case Double:
		return "g"
	case Decimal:
		return fmt.Sprintf("d:%d,%d", t.Precision, t.Scale)
	case Varchar:
		return "u"
	case Binary:
		return "z"
	case Date:
		return "tdD"
	case Timestamp:
		if t.Precision <= 3 {
			return "tsm:"
		}
		return "w:12"
	}
	return ""
}

// ParseType parses a Flink SQL type name such as "BIGINT", "DECIMAL(10, 2)", "VARCHAR(20)",
// "TIMESTAMP(3)" or "INT NOT NULL". A trailing NOT NULL clears Nullable; otherwise the result
// is nullable.
func ParseType(s string) (Type, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	t := Type{Nullable: true}
	if strings.HasSuffix(u, " NOT NULL") {
		t.Nullable = false
		u = strings.TrimSpace(strings.TrimSuffix(u, " NOT NULL"))
	}
	name, params := u, []int(nil)
	if i := strings.IndexByte(u, '('); i >= 0 {
		if !strings.HasSuffix(u, ")") {
			return Type{}, fmt.Errorf("unknown type %q", s)
		}
		name = strings.TrimSpace(u[:i])
		for _, p := range strings.Split(u[i+1:len(u)-1], ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil {
				return Type{}, fmt.Errorf("unknown type %q: bad parameter %q", s, p)
			}
			params = append(params, n)
		}
	}
	noParams := func() error {
		if params != nil {
			return fmt.Errorf("type %q takes no parameters", s)
		}
		return nil
	}
	var err error
	switch name {
	case "BOOLEAN":
		t.ID, err = Boolean, noParams()
	case "TINYINT":
		t.ID, err = TinyInt, noParams()
	case "SMALLINT":
		t.ID, err = SmallInt, noParams()
	case "INT", "INTEGER":
		t.ID, err = Int, noParams()
	case "BIGINT":
		t.ID, err = BigInt, noParams()
	case "FLOAT", "REAL":
		t.ID, err = Float, noParams()
	case "DOUBLE", "DOUBLE PRECISION":
		t.ID, err = Double, noParams()
	case "DATE":
		t.ID, err = Date, noParams()
	case "STRING", "VARCHAR", "CHAR", "CHARACTER VARYING":
		t.ID = Varchar
		if len(params) > 1 || (len(params) == 1 && params[0] < 1) {
			err = fmt.Errorf("type %q: bad length", s)
		}
	case "BYTES", "VARBINARY", "BINARY VARYING", "BINARY":
		t.ID = Binary
		if len(params) > 1 || (len(params) == 1 && params[0] < 1) {
			err = fmt.Errorf("type %q: bad length", s)
		}
	case "DECIMAL", "DEC", "NUMERIC":
		t.ID, t.Precision, t.Scale = Decimal, 10, 0
		switch len(params) {
		case 0:
		case 1:
			t.Precision = params[0]
		case 2:
			t.Precision, t.Scale = params[0], params[1]
		default:
			err = fmt.Errorf("type %q: too many parameters", s)
		}
		if err == nil && (t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision) {
			err = fmt.Errorf("type %q: precision must be 1..38 and scale 0..precision", s)
		}
	case "TIMESTAMP", "TIMESTAMP WITHOUT TIME ZONE":
		t.ID, t.Precision = Timestamp, 6
		if len(params) == 1 {
			t.Precision = params[0]
		} else if len(params) > 1 {
			err = fmt.Errorf("type %q: too many parameters", s)
		}
		if err == nil && (t.Precision < 0 || t.Precision > 9) {
			err = fmt.Errorf("type %q: precision must be 0..9", s)
		}
	default:
		return Type{}, fmt.Errorf("unsupported type %q", s)
	}
	if err != nil {
		return Type{}, err
	}
	return t, nil
}
