package pg

import (
	"fmt"
	"math/big"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// column decodes one result column into Flink values exactly as the JDBC connector's
// PostgreSQL converter does (AbstractDialectConverter.createInternalConverter over pgjdbc's
// getObject): dst is the scan target, reused row after row; get converts the last scanned value.
type column struct {
	dst any
	get func() (any, error)
}

// ConversionError is a value Flink's converter cannot turn into its declared type. Retry
// reports whether Flink's lookup retries it: pgjdbc raises some of these as SQLException
// (retried), the converter others as ClassCastException (the job fails at once).
type ConversionError struct {
	Column string
	Msg    string
	Retry  bool
}

func (e *ConversionError) Error() string { return fmt.Sprintf("column %s: %s", e.Column, e.Msg) }

// scalar converts one non-array value; the returned scan target and getter work as column's.
// OIDs accepted per Flink type are the pairs whose Java conversion this package replicates;
// others are errors at Open (Flink would store a wrongly boxed value or throw
// ClassCastException).
func scalar(name string, oid uint32, t Type, zone *time.Location) (*column, error) {
	bad := func(msg string, retry bool) error { return &ConversionError{Column: name, Msg: msg, Retry: retry} }
	switch {
	case t.Kind == Boolean && oid == pgtype.BoolOID:
		var v pgtype.Bool
		return &column{&v, func() (any, error) { return nullable(v.Valid, v.Bool) }}, nil
	case oid == pgtype.Int2OID && (t.Kind == TinyInt || t.Kind == SmallInt || t.Kind == Int):
		// pgjdbc returns Integer; Flink narrows with byteValue/shortValue (silent wrap)
		var v pgtype.Int2
		return &column{&v, func() (any, error) { return nullable(v.Valid, narrow(int64(v.Int16), t.Kind)) }}, nil
	case oid == pgtype.Int4OID && (t.Kind == TinyInt || t.Kind == SmallInt || t.Kind == Int):
		var v pgtype.Int4
		return &column{&v, func() (any, error) { return nullable(v.Valid, narrow(int64(v.Int32), t.Kind)) }}, nil
	case t.Kind == BigInt && oid == pgtype.Int8OID:
		var v pgtype.Int8
		return &column{&v, func() (any, error) { return nullable(v.Valid, v.Int64) }}, nil
	case t.Kind == Float && oid == pgtype.Float4OID:
		var v pgtype.Float4
		return &column{&v, func() (any, error) { return nullable(v.Valid, v.Float32) }}, nil
	case t.Kind == Double && oid == pgtype.Float8OID:
		var v pgtype.Float8
		return &column{&v, func() (any, error) { return nullable(v.Valid, v.Float64) }}, nil
	case t.Kind == Decimal && oid == pgtype.NumericOID:
		var v pgtype.Numeric
		return &column{&v, func() (any, error) {
			if !v.Valid {
				return nil, nil
			}
			if v.NaN {
				// pgjdbc's getObject gives a Double NaN: ClassCastException in the converter
				return nil, bad("numeric NaN cannot be a "+t.String()+" (Flink: ClassCastException)", false)
			}
			if v.InfinityModifier != pgtype.Finite {
				// pgjdbc's getBigDecimal throws PSQLException, which Flink's lookup retries
				return nil, bad("numeric infinity: Bad value for type BigDecimal", true)
			}
			return decimal(v.Int, v.Exp, t), nil
		}}, nil
	case (t.Kind == Char || t.Kind == Varchar) &&
		(oid == pgtype.TextOID || oid == pgtype.VarcharOID || oid == pgtype.BPCharOID):
		// the Java string as is: bpchar keeps its blank padding, no trim or truncation
		var v pgtype.Text
		return &column{&v, func() (any, error) { return nullable(v.Valid, v.String) }}, nil
	case t.Kind == Bytes && oid == pgtype.ByteaOID:
		var v []byte // nil for NULL; a fresh (possibly empty) slice per value
		return &column{&v, func() (any, error) {
			if v == nil {
				return nil, nil
			}
			return v, nil
		}}, nil
	case t.Kind == Date && oid == pgtype.DateOID:
		var v pgtype.Date
		return &column{&v, func() (any, error) {
			if !v.Valid {
				return nil, nil
			}
			if v.InfinityModifier != pgtype.Finite || v.Time.Before(gregorianStart) {
				return nil, bad(fmt.Sprintf("date %s: java.sql.Date does not keep it (infinity, or before 1582-10-15)", v.Time.Format("2006-01-02")), false)
			}
			return int32(v.Time.Unix() / 86400), nil
		}}, nil
	case t.Kind == Time && oid == pgtype.TimeOID:
		var v pgtype.Time
		return &column{&v, func() (any, error) {
			if !v.Valid {
				return nil, nil
			}
			if v.Microseconds >= 86400_000_000 {
				return nil, bad("time 24:00:00 has no java.sql.Time value", false)
			}
			// Time.toLocalTime() has whole seconds: the fraction is always lost
			return int32(v.Microseconds / 1_000_000 * 1000), nil
		}}, nil
	case t.Kind == Timestamp && oid == pgtype.TimestampOID:
		var v pgtype.Timestamp
		return &column{&v, func() (any, error) {
			if !v.Valid {
				return nil, nil
			}
			if v.InfinityModifier != pgtype.Finite {
				return nil, bad("timestamp infinity has no java.sql.Timestamp value", false)
			}
			w := v.Time // the wall clock, as UTC
			if w.Before(gregorianStart) {
				return nil, bad("timestamp "+w.Format(time.DateTime)+" before 1582-10-15: java.sql.Timestamp does not keep it", false)
			}
			if inGap(w, zone) {
				return nil, bad("timestamp "+w.Format(time.DateTime)+" is in a daylight-saving gap of "+zone.String()+" (Flink shifts it)", false)
			}
			return timestampOf(w), nil
		}}, nil
	case t.Kind == Timestamp && oid == pgtype.TimestamptzOID:
		var v pgtype.Timestamptz
		return &column{&v, func() (any, error) {
			if !v.Valid {
				return nil, nil
			}
			if v.InfinityModifier != pgtype.Finite {
				return nil, bad("timestamptz infinity has no java.sql.Timestamp value", false)
			}
			// the wall clock of the instant in the JVM's default zone
			l := v.Time.In(zone)
			w := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
			if w.Before(gregorianStart) {
				return nil, bad("timestamptz "+w.Format(time.DateTime)+" before 1582-10-15: java.sql.Timestamp does not keep it", false)
			}
			return timestampOf(w), nil
		}}, nil
	}
	return nil, fmt.Errorf("column %s: PostgreSQL type %s does not map to Flink type %s in Flink's JDBC PostgreSQL converter (or its conversion is not replicated)", name, oidName(oid), t)
}

// arrayColumn decodes a one-dimensional PostgreSQL array into ARRAY<T>: the converter maps
// getArray()'s elements one by one; multi-dimensional arrays fail in Flink (ClassCastException).
// Supported element pairs are those whose pgjdbc element class equals the scalar getObject's.
func arrayColumn(name string, oid uint32, t Type, zone *time.Location) (*column, error) {
	elemOID, ok := arrayElem[oid]
	if !ok || t.Elem == nil || t.Elem.Kind == Array || t.Elem.Kind == TinyInt || t.Elem.Kind == SmallInt ||
		t.Elem.Kind == Bytes || t.Elem.Kind == Date || t.Elem.Kind == Time || t.Elem.Kind == Timestamp {
		return nil, fmt.Errorf("column %s: PostgreSQL type %s does not map to Flink type %s (arrays: BOOLEAN, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, CHAR/VARCHAR elements)", name, oidName(oid), t)
	}
	e, err := scalar(name, elemOID, *t.Elem, zone)
	if err != nil {
		return nil, fmt.Errorf("column %s: PostgreSQL type %s does not map to Flink type %s", name, oidName(oid), t)
	}
	switch dst := e.dst.(type) {
	case *pgtype.Bool:
		return arrayOf(name, dst, e.get), nil
	case *pgtype.Int4:
		return arrayOf(name, dst, e.get), nil
	case *pgtype.Int8:
		return arrayOf(name, dst, e.get), nil
	case *pgtype.Float4:
		return arrayOf(name, dst, e.get), nil
	case *pgtype.Float8:
		return arrayOf(name, dst, e.get), nil
	case *pgtype.Numeric:
		return arrayOf(name, dst, e.get), nil
	case *pgtype.Text:
		return arrayOf(name, dst, e.get), nil
	}
	return nil, fmt.Errorf("column %s: PostgreSQL type %s does not map to Flink type %s", name, oidName(oid), t)
}

// arrayOf scans into a pgtype.Array[E]; each element is copied into *elem and converted by get.
func arrayOf[E any](name string, elem *E, get func() (any, error)) *column {
	var v pgtype.Array[E]
	return &column{&v, func() (any, error) {
		if !v.Valid {
			return nil, nil
		}
		if len(v.Dims) > 1 {
			return nil, &ConversionError{Column: name, Msg: "multi-dimensional array (Flink: ClassCastException)"}
		}
		out := make([]any, len(v.Elements))
		for i, x := range v.Elements {
			*elem = x
			val, err := get()
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	}}
}

var arrayElem = map[uint32]uint32{
	pgtype.BoolArrayOID:    pgtype.BoolOID,
	pgtype.Int4ArrayOID:    pgtype.Int4OID,
	pgtype.Int8ArrayOID:    pgtype.Int8OID,
	pgtype.Float4ArrayOID:  pgtype.Float4OID,
	pgtype.Float8ArrayOID:  pgtype.Float8OID,
	pgtype.NumericArrayOID: pgtype.NumericOID,
	pgtype.TextArrayOID:    pgtype.TextOID,
	pgtype.VarcharArrayOID: pgtype.VarcharOID,
	pgtype.BPCharArrayOID:  pgtype.BPCharOID,
}

// newColumn is the decoder of a result column of PostgreSQL type oid declared as Flink type t.
func newColumn(name string, oid uint32, t Type, zone *time.Location) (*column, error) {
	if t.Kind == Array {
		return arrayColumn(name, oid, t, zone)
	}
	return scalar(name, oid, t, zone)
}

func nullable(valid bool, v any) (any, error) {
	if !valid {
		return nil, nil
	}
	return v, nil
}

// narrow is Java's narrowing of an int (byteValue, shortValue): two's-complement wrap.
func narrow(v int64, k Kind) any {
	switch k {
	case TinyInt:
		return int8(v)
	case SmallInt:
		return int16(v)
	}
	return int32(v)
}

var ten = big.NewInt(10)

// decimal is DecimalData.fromBigDecimal(value, p, s) for value = u × 10^exp: rounded HALF_UP
// (half away from zero) to scale s, and NULL (nil) when the result has more than p digits.
func decimal(u *big.Int, exp int32, t Type) any {
	v := new(big.Int).Set(u)
	shift := int64(exp) + int64(t.Scale)
	if shift >= 0 {
		v.Mul(v, new(big.Int).Exp(ten, big.NewInt(shift), nil))
	} else {
		d := new(big.Int).Exp(ten, big.NewInt(-shift), nil)
		q, r := new(big.Int).QuoRem(v, d, new(big.Int))
		// |r| * 2 >= d rounds away from zero
		if r.Sign() != 0 && new(big.Int).Mul(new(big.Int).Abs(r), big.NewInt(2)).Cmp(d) >= 0 {
			if v.Sign() < 0 {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		v = q
	}
	digits := len(new(big.Int).Abs(v).String()) // BigDecimal.precision(): 1 for zero
	if digits > t.Precision {
		return nil
	}
	d, _ := DecimalOf(v) // p <= 38 digits always fit
	return d
}

// gregorianStart is the first day java.sql's hybrid calendar and PostgreSQL's proleptic
// Gregorian one agree on without question; earlier values are refused rather than guessed.
var gregorianStart = time.Date(1582, 10, 15, 0, 0, 0, 0, time.UTC)

func timestampOf(w time.Time) TimestampValue {
	ns := int64(w.Nanosecond())
	return TimestampValue{Millis: w.Unix()*1000 + ns/1_000_000, NanoOfMilli: int32(ns % 1_000_000)}
}

// inGap reports whether wall clock w (fields read as UTC) does not exist in zone (a
// daylight-saving gap), where java.sql.Timestamp would shift it.
func inGap(w time.Time, zone *time.Location) bool {
	if zone == time.UTC {
		return false
	}
	l := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), zone)
	return l.Hour() != w.Hour() || l.Minute() != w.Minute() || l.Day() != w.Day()
}

var typeMap = pgtype.NewMap()

func oidName(oid uint32) string {
	if t, ok := typeMap.TypeForOID(oid); ok {
		return t.Name
	}
	return fmt.Sprintf("oid %d", oid)
}
