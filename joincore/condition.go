package joincore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/ferrystream/ferry/engine"
)

// Expr is one node of a residual join condition (params "condition"): the part of the join
// condition beyond the equi keys and the time bounds, Flink's JoinSpec nonEquiCondition, which
// Flink evaluates with generated code (JoinUtil.generateConditionFunction) for every pair of rows
// in range. A pair joins only when the condition is TRUE; NULL (unknown) rejects it, as the
// generated `return result;` returns false for a NULL result.
type Expr struct {
	// Op is and, or, not, is_null, is_not_null, eq, ne, lt, le, gt, ge (predicates), plus,
	// minus (integer arithmetic), cast (numeric widening), field or literal.
	Op   string `json:"op"`
	Args []Expr `json:"args,omitempty"`
	// Field (op field) indexes the joined row: the left input's fields, then the right input's.
	Field int `json:"field,omitempty"`
	// Type is the result type of a literal, plus, minus or cast, as Flink SQL writes it.
	Type string `json:"type,omitempty"`
	// Value is a literal's value as text; absent for NULL. Integers, DATE (days since epoch):
	// decimal digits; DECIMAL: plain decimal text of the literal's scale; FLOAT/DOUBLE: Java's
	// Float/Double.toString; BOOLEAN: true or false; TIMESTAMP: "millis" or "millis,nanos"
	// (epoch milliseconds, nano of millisecond); VARCHAR: the string itself.
	Value *string `json:"value,omitempty"`
}

// scalar is one evaluated value. Which fields hold it depends on its static type: i for
// TINYINT..BIGINT, DATE, BOOLEAN (0 or 1) and the millis of a TIMESTAMP (ns its nano of
// millisecond); f for FLOAT and DOUBLE (a FLOAT's float32 value, exactly); s for VARCHAR (bytes
// owned by the row); hi:lo, a 128-bit two's-complement unscaled value, for DECIMAL.
type scalar struct {
	null bool
	i    int64
	ns   int32
	f    float64
	lo   uint64
	s    []byte
}

// evalFn evaluates a compiled expression on the left and right rows of a pair.
type evalFn func(l, r []byte) scalar

// compiled is a compiled expression and its static type.
type compiled struct {
	t    engine.Type
	eval evalFn
}

// Condition is a compiled residual condition over two row layouts.
type Condition struct {
	eval evalFn
}

// Holds reports whether the condition is TRUE for the pair (left row l, right row r).
func (c *Condition) Holds(l, r []byte) bool {
	v := c.eval(l, r)
	return !v.null && v.i != 0
}

// unsupported is the error of a condition part Ferry does not evaluate: engine.ErrUnsupported,
// so the planner keeps Flink's operator with this reason.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: residual join condition: %s", engine.ErrUnsupported, fmt.Sprintf(format, args...))
}

// CompileCondition compiles a residual condition over the joined row of left and right.
func CompileCondition(e *Expr, left, right *RowLayout) (*Condition, error) {
	c, err := compileExpr(e, left, right)
	if err != nil {
		return nil, err
	}
	if c.t.ID != engine.Boolean {
		return nil, engine.ParamError("condition", "of type %s, want BOOLEAN", c.t)
	}
	return &Condition{eval: c.eval}, nil
}

var boolType = engine.Type{ID: engine.Boolean, Nullable: true}

func isInteger(t engine.Type) bool { return t.ID >= engine.TinyInt && t.ID <= engine.BigInt }

func isNumeric(t engine.Type) bool {
	return isInteger(t) || t.ID == engine.Float || t.ID == engine.Double
}

func compileExpr(e *Expr, left, right *RowLayout) (compiled, error) {
	args := make([]compiled, len(e.Args))
	for i := range e.Args {
		c, err := compileExpr(&e.Args[i], left, right)
		if err != nil {
			return compiled{}, err
		}
		args[i] = c
	}
	arity := func(n int) error {
		if len(args) != n {
			return engine.ParamError("condition", "%s takes %d arguments, not %d", e.Op, n, len(args))
		}
		return nil
	}
	switch e.Op {
	case "field":
		if err := arity(0); err != nil {
			return compiled{}, err
		}
		return compileField(e.Field, left, right)
	case "literal":
		if err := arity(0); err != nil {
			return compiled{}, err
		}
		return compileLiteral(e)
	case "and", "or":
		if len(args) < 2 {
			return compiled{}, engine.ParamError("condition", "%s takes at least 2 arguments", e.Op)
		}
		for _, a := range args {
			if a.t.ID != engine.Boolean {
				return compiled{}, engine.ParamError("condition", "%s of %s", e.Op, a.t)
			}
		}
		acc := args[0]
		for _, a := range args[1:] {
			acc = logic(e.Op == "and", acc, a)
		}
		return acc, nil
	case "not":
		if err := arity(1); err != nil {
			return compiled{}, err
		}
		if args[0].t.ID != engine.Boolean {
			return compiled{}, engine.ParamError("condition", "NOT of %s", args[0].t)
		}
		a := args[0].eval
		return compiled{boolType, func(l, r []byte) scalar {
			v := a(l, r)
			return scalar{null: v.null, i: 1 - v.i}
		}}, nil
	case "is_null", "is_not_null":
		if err := arity(1); err != nil {
			return compiled{}, err
		}
		a, want := args[0].eval, e.Op == "is_null"
		return compiled{engine.Type{ID: engine.Boolean}, func(l, r []byte) scalar {
			return boolOf(a(l, r).null == want)
		}}, nil
	case "eq", "ne", "lt", "le", "gt", "ge":
		if err := arity(2); err != nil {
			return compiled{}, err
		}
		return compileComparison(e.Op, args[0], args[1])
	case "plus", "minus":
		if err := arity(2); err != nil {
			return compiled{}, err
		}
		return compileArithmetic(e, args[0], args[1])
	case "cast":
		if err := arity(1); err != nil {
			return compiled{}, err
		}
		return compileCast(e, args[0])
	}
	return compiled{}, unsupported("operator %q", e.Op)
}

func boolOf(b bool) scalar {
	if b {
		return scalar{i: 1}
	}
	return scalar{}
}

// logic is SQL's three-valued AND (and) or OR of a and b, as Flink's generateAnd/generateOr.
func logic(and bool, a, b compiled) compiled {
	ea, eb := a.eval, b.eval
	// The dominant value: FALSE for AND, TRUE for OR.
	var dom int64
	if !and {
		dom = 1
	}
	return compiled{boolType, func(l, r []byte) scalar {
		x := ea(l, r)
		if !x.null && x.i == dom {
			return x
		}
		y := eb(l, r)
		switch {
		case !y.null && y.i == dom:
			return y
		case x.null || y.null:
			return scalar{null: true}
		}
		return scalar{i: 1 - dom}
	}}
}

// compileField reads field f of the joined row from the left row (f < left fields) or the right.
func compileField(f int, left, right *RowLayout) (compiled, error) {
	nl := len(left.types)
	if f < 0 || f >= nl+len(right.types) {
		return compiled{}, engine.ParamError("condition", "field %d out of range (the joined row has %d fields)", f, nl+len(right.types))
	}
	side, c := left, f
	if f >= nl {
		side, c = right, f-nl
	}
	read, t := fieldReader(side, c)
	if read == nil {
		return compiled{}, unsupported("field %d of type %s", f, t)
	}
	off := side.off[c]
	bit, mask := c>>3, byte(1)<<(c&7)
	if f < nl {
		return compiled{t, func(l, _ []byte) scalar {
			if l[bit]&mask != 0 {
				return scalar{null: true}
			}
			return read(l, l[off:])
		}}, nil
	}
	return compiled{t, func(_, r []byte) scalar {
		if r[bit]&mask != 0 {
			return scalar{null: true}
		}
		return read(r, r[off:])
	}}, nil
}

// fieldReader returns how to read a non-NULL field c of layout from its row and slot.
func fieldReader(side *RowLayout, c int) (func(row, s []byte) scalar, engine.Type) {
	t := side.types[c]
	le := binary.LittleEndian
	switch t.ID {
	case engine.Boolean:
		return func(_, s []byte) scalar { return scalar{i: int64(s[0] & 1)} }, t
	case engine.TinyInt:
		return func(_, s []byte) scalar { return scalar{i: int64(int8(s[0]))} }, t
	case engine.SmallInt:
		return func(_, s []byte) scalar { return scalar{i: int64(int16(le.Uint16(s)))} }, t
	case engine.Int, engine.Date:
		return func(_, s []byte) scalar { return scalar{i: int64(int32(le.Uint32(s)))} }, t
	case engine.BigInt:
		return func(_, s []byte) scalar { return scalar{i: int64(le.Uint64(s))} }, t
	case engine.Timestamp:
		if t.Precision <= 3 {
			return func(_, s []byte) scalar { return scalar{i: int64(le.Uint64(s))} }, t
		}
		return func(_, s []byte) scalar { return scalar{i: int64(le.Uint64(s)), ns: int32(le.Uint32(s[8:]))} }, t
	case engine.Float:
		return func(_, s []byte) scalar { return scalar{f: float64(math.Float32frombits(le.Uint32(s)))} }, t
	case engine.Double:
		return func(_, s []byte) scalar { return scalar{f: math.Float64frombits(le.Uint64(s))} }, t
	case engine.Decimal:
		return func(_, s []byte) scalar { return scalar{lo: le.Uint64(s), i: int64(le.Uint64(s[8:]))} }, t
	case engine.Varchar:
		return func(row, s []byte) scalar {
			o, n := le.Uint32(s), le.Uint32(s[4:])
			return scalar{s: row[o : o+n]}
		}, t
	}
	return nil, t
}

func compileLiteral(e *Expr) (compiled, error) {
	t, err := engine.ParseType(e.Type)
	if err != nil {
		return compiled{}, engine.ParamError("condition", "literal: %v", err)
	}
	if e.Value == nil {
		t.Nullable = true
		return compiled{t, func(_, _ []byte) scalar { return scalar{null: true} }}, nil
	}
	t.Nullable = false
	v, err := parseLiteral(t, *e.Value)
	if err != nil {
		return compiled{}, engine.ParamError("condition", "literal %q of type %s: %v", *e.Value, t, err)
	}
	return compiled{t, func(_, _ []byte) scalar { return v }}, nil
}

func parseLiteral(t engine.Type, text string) (scalar, error) {
	switch t.ID {
	case engine.Boolean:
		b, err := strconv.ParseBool(text)
		return boolOf(b), err
	case engine.TinyInt, engine.SmallInt, engine.Int, engine.BigInt, engine.Date:
		bits := map[engine.TypeID]int{engine.TinyInt: 8, engine.SmallInt: 16, engine.Int: 32, engine.Date: 32, engine.BigInt: 64}[t.ID]
		n, err := strconv.ParseInt(text, 10, bits)
		return scalar{i: n}, err
	case engine.Float:
		f, err := strconv.ParseFloat(text, 32)
		return scalar{f: f}, err
	case engine.Double:
		f, err := strconv.ParseFloat(text, 64)
		return scalar{f: f}, err
	case engine.Varchar:
		return scalar{s: []byte(text)}, nil
	case engine.Timestamp:
		ms, ns, _ := strings.Cut(text, ",")
		m, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return scalar{}, err
		}
		var n int64
		if ns != "" {
			if n, err = strconv.ParseInt(ns, 10, 32); err != nil || n < 0 || n > 999_999 {
				return scalar{}, fmt.Errorf("nano of millisecond %q", ns)
			}
		}
		return scalar{i: m, ns: int32(n)}, nil
	case engine.Decimal:
		r, ok := new(big.Rat).SetString(text)
		if !ok {
			return scalar{}, fmt.Errorf("not a decimal")
		}
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
		if !r.IsInt() || r.Num().BitLen() > 127 {
			return scalar{}, fmt.Errorf("not a DECIMAL with scale %d", t.Scale)
		}
		return decimalScalar(r.Num()), nil
	}
	return scalar{}, unsupported("literal of type %s", t)
}

// decimalScalar is the two's-complement 128-bit form of n (|n| < 2^127).
func decimalScalar(n *big.Int) scalar {
	u := new(big.Int).Set(n)
	if n.Sign() < 0 {
		u.Add(u, new(big.Int).Lsh(big.NewInt(1), 128))
	}
	lo := new(big.Int).And(u, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	hi := new(big.Int).Rsh(u, 64).Uint64()
	return scalar{lo: lo, i: int64(hi)}
}

// decimalBig is the unscaled value of a DECIMAL scalar.
func decimalBig(v scalar) *big.Int {
	n := new(big.Int).Lsh(big.NewInt(v.i), 64)
	return n.Add(n, new(big.Int).SetUint64(v.lo))
}

// compareOps turns a three-way comparison into each operator's result.
var compareOps = map[string]func(c int) bool{
	"eq": func(c int) bool { return c == 0 },
	"ne": func(c int) bool { return c != 0 },
	"lt": func(c int) bool { return c < 0 },
	"le": func(c int) bool { return c <= 0 },
	"gt": func(c int) bool { return c > 0 },
	"ge": func(c int) bool { return c >= 0 },
}

// compileComparison is Flink's generateEquals/generateComparison for operands of one type
// family, NULL when either is NULL:
//   - integers of any width, compared after Java's widening to long;
//   - FLOAT and DOUBLE (and integers against them) with Java's primitive operators after binary
//     numeric promotion (to float unless a DOUBLE is involved): NaN is unordered and unequal
//     to everything, -0.0 equals 0.0;
//   - DECIMAL against DECIMAL, by value (DecimalData.compareTo, any scales);
//   - BOOLEAN (false < true, Boolean.compare), DATE (days);
//   - VARCHAR: equals for = and <>, BinaryStringData.compareTo otherwise: unsigned bytes of
//     the UTF-8, then length (rows that crossed an exchange carry no Java String);
//   - TIMESTAMP of any precisions: TimestampData.compareTo (millisecond, then nanosecond).
func compileComparison(op string, a, b compiled) (compiled, error) {
	test := compareOps[op]
	ea, eb := a.eval, b.eval
	var three func(x, y scalar) int
	switch {
	case isInteger(a.t) && isInteger(b.t), a.t.ID == engine.Date && b.t.ID == engine.Date,
		a.t.ID == engine.Boolean && b.t.ID == engine.Boolean:
		three = func(x, y scalar) int { return cmp.Compare(x.i, y.i) }
	case isNumeric(a.t) && isNumeric(b.t):
		toA, toB := floatOf(a.t), floatOf(b.t)
		if a.t.ID != engine.Double && b.t.ID != engine.Double {
			toA, toB = float32Of(a.t), float32Of(b.t)
		}
		// Java's primitive operators, not a total order: decide each operator on its own.
		javaOp := map[string]func(x, y float64) bool{
			"eq": func(x, y float64) bool { return x == y },
			"ne": func(x, y float64) bool { return x != y },
			"lt": func(x, y float64) bool { return x < y },
			"le": func(x, y float64) bool { return x <= y },
			"gt": func(x, y float64) bool { return x > y },
			"ge": func(x, y float64) bool { return x >= y },
		}[op]
		return compiled{boolType, func(l, r []byte) scalar {
			x, y := ea(l, r), eb(l, r)
			if x.null || y.null {
				return scalar{null: true}
			}
			return boolOf(javaOp(toA(x), toB(y)))
		}}, nil
	case a.t.ID == engine.Decimal && b.t.ID == engine.Decimal:
		if a.t.Scale == b.t.Scale {
			three = func(x, y scalar) int {
				if c := cmp.Compare(x.i, y.i); c != 0 {
					return c
				}
				return cmp.Compare(x.lo, y.lo)
			}
		} else {
			sa, sb := a.t.Scale, b.t.Scale
			three = func(x, y scalar) int {
				return new(big.Rat).SetFrac(decimalBig(x), pow10(sa)).Cmp(new(big.Rat).SetFrac(decimalBig(y), pow10(sb)))
			}
		}
	case a.t.ID == engine.Varchar && b.t.ID == engine.Varchar:
		three = func(x, y scalar) int { return bytes.Compare(x.s, y.s) }
	case a.t.ID == engine.Timestamp && b.t.ID == engine.Timestamp:
		three = func(x, y scalar) int {
			if c := cmp.Compare(x.i, y.i); c != 0 {
				return c
			}
			return cmp.Compare(x.ns, y.ns)
		}
	default:
		return compiled{}, unsupported("comparison of %s with %s", a.t, b.t)
	}
	return compiled{boolType, func(l, r []byte) scalar {
		x, y := ea(l, r), eb(l, r)
		if x.null || y.null {
			return scalar{null: true}
		}
		return boolOf(test(three(x, y)))
	}}, nil
}

func pow10(n int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil) }

// floatOf converts a numeric scalar of type t to float64 as Java widens it to double.
func floatOf(t engine.Type) func(v scalar) float64 {
	if isInteger(t) {
		return func(v scalar) float64 { return float64(v.i) }
	}
	return func(v scalar) float64 { return v.f }
}

// float32Of converts a numeric scalar of type t (not DOUBLE) to float as Java widens it to float
// (round to nearest), as a float64 holding that float32 exactly.
func float32Of(t engine.Type) func(v scalar) float64 {
	if isInteger(t) {
		return func(v scalar) float64 { return float64(float32(v.i)) }
	}
	return func(v scalar) float64 { return v.f }
}

// compileArithmetic is Flink's generateBinaryArithmeticOperator for + and - on integer types:
// both operands cast to the result type, the operation in Java's wrapping arithmetic, the
// result cast to the result type; NULL when either operand is NULL.
func compileArithmetic(e *Expr, a, b compiled) (compiled, error) {
	t, err := engine.ParseType(e.Type)
	if err != nil {
		return compiled{}, engine.ParamError("condition", "%s: %v", e.Op, err)
	}
	if !isInteger(t) || !isInteger(a.t) || !isInteger(b.t) {
		return compiled{}, unsupported("%s of %s and %s giving %s (only integer arithmetic is native)", e.Op, a.t, b.t, t)
	}
	wrap := wrapper(t)
	ea, eb := a.eval, b.eval
	sign := int64(1)
	if e.Op == "minus" {
		sign = -1
	}
	t.Nullable = a.t.Nullable || b.t.Nullable
	return compiled{t, func(l, r []byte) scalar {
		x, y := ea(l, r), eb(l, r)
		if x.null || y.null {
			return scalar{null: true}
		}
		return scalar{i: wrap(x.i + sign*y.i)}
	}}, nil
}

// wrapper truncates an int64 to integer type t, as a Java cast to byte, short or int does.
func wrapper(t engine.Type) func(int64) int64 {
	switch t.ID {
	case engine.TinyInt:
		return func(v int64) int64 { return int64(int8(v)) }
	case engine.SmallInt:
		return func(v int64) int64 { return int64(int16(v)) }
	case engine.Int:
		return func(v int64) int64 { return int64(int32(v)) }
	}
	return func(v int64) int64 { return v }
}

// compileCast is a CAST that widens a number without changing its value: an integer to a wider
// integer, FLOAT or DOUBLE (rounded as Java's widening conversions round), or FLOAT to DOUBLE.
func compileCast(e *Expr, a compiled) (compiled, error) {
	t, err := engine.ParseType(e.Type)
	if err != nil {
		return compiled{}, engine.ParamError("condition", "cast: %v", err)
	}
	t.Nullable = a.t.Nullable
	ea := a.eval
	switch {
	case isInteger(a.t) && isInteger(t) && t.ID >= a.t.ID:
		return compiled{t, ea}, nil
	case isInteger(a.t) && (t.ID == engine.Double || t.ID == engine.Float), a.t.ID == engine.Float && t.ID == engine.Double:
		conv := floatOf(a.t)
		if t.ID == engine.Float {
			conv = float32Of(a.t)
		}
		return compiled{t, func(l, r []byte) scalar {
			v := ea(l, r)
			if v.null {
				return v
			}
			return scalar{f: conv(v)}
		}}, nil
	case a.t.ID == t.ID && (a.t.ID == engine.Boolean || a.t.ID == engine.Date || a.t.ID == engine.Float || a.t.ID == engine.Double):
		return compiled{t, ea}, nil
	}
	return compiled{}, unsupported("CAST(%s AS %s)", a.t, t)
}
