package joincore

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// The joined row of the condition tests: left fields 0..8, right fields 9..17, both sides
//
//	i INT, b BIGINT, t TINYINT, f FLOAT, d DOUBLE, c DECIMAL(10, 2), s VARCHAR, ts TIMESTAMP(6), z BOOLEAN
//
// except that the right side's c is DECIMAL(12, 3).
func condTypes(scale int) []engine.Type {
	return []engine.Type{
		{ID: engine.Int, Nullable: true}, {ID: engine.BigInt, Nullable: true}, {ID: engine.TinyInt, Nullable: true},
		{ID: engine.Float, Nullable: true}, {ID: engine.Double, Nullable: true},
		{ID: engine.Decimal, Precision: 10 + scale - 2, Scale: scale, Nullable: true}, {ID: engine.Varchar, Nullable: true},
		{ID: engine.Timestamp, Precision: 6, Nullable: true}, {ID: engine.Boolean, Nullable: true},
	}
}

func condRow(l *RowLayout, vals []any) []byte {
	b := enginetest.Batch(l.types, [][]any{vals}, []engine.RowKind{0}, enginetest.Options{Offset: 2})
	return l.Encode(nil, b, 0)
}

// cond parses a condition written as JSON with the field names l.x / r.x for field references.
func cond(t *testing.T, src string, left, right *RowLayout) (*Condition, error) {
	t.Helper()
	names := []string{"i", "b", "t", "f", "d", "c", "s", "ts", "z"}
	for i := len(names) - 1; i >= 0; i-- { // "ts" before "t"
		src = strings.ReplaceAll(src, `"l.`+names[i]+`"`, `{"op":"field","field":`+itoa(i)+`}`)
		src = strings.ReplaceAll(src, `"r.`+names[i]+`"`, `{"op":"field","field":`+itoa(i+9)+`}`)
	}
	var e Expr
	if err := engine.StrictDecode([]byte(src), &e); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return CompileCondition(&e, left, right)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func lit(typ, v string) string {
	return `{"op":"literal","type":"` + typ + `","value":` + mustJSON(v) + `}`
}

func mustJSON(v string) string { b, _ := json.Marshal(v); return string(b) }

func op(name string, args ...string) string {
	return `{"op":"` + name + `","args":[` + strings.Join(args, ",") + `]}`
}

func typedOp(name, typ string, args ...string) string {
	return `{"op":"` + name + `","type":"` + typ + `","args":[` + strings.Join(args, ",") + `]}`
}

func TestConditionSemantics(t *testing.T) {
	left, right := NewRowLayout(condTypes(2)), NewRowLayout(condTypes(3))
	nan32 := float32(math.NaN())
	negZero := math.Copysign(0, -1)
	ts := func(ms int64, ns int32) enginetest.Timestamp { return enginetest.Timestamp{Millis: ms, Nanos: ns} }
	// left and right row pairs
	rows := map[string][2][]any{
		"plain": {
			{int64(5), int64(7), int64(127), float32(1.5), 2.5, big.NewInt(150), "ab", ts(10, 5), true},
			{int64(5), int64(5), int64(-128), float32(1.5), 2.5, big.NewInt(1500), "abc", ts(10, 7), false},
		},
		"nulls": {
			{nil, int64(1), nil, nil, nil, nil, nil, nil, nil},
			{int64(1), nil, nil, nil, nil, nil, "x", nil, nil},
		},
		"nan": {
			{int64(16777217), int64(math.MaxInt64), int64(1), nan32, negZero, big.NewInt(-1), "\u00ff", ts(-1, 999_999), false},
			{int64(math.MaxInt32), int64(1), int64(1), float32(16777216), 0.0, big.NewInt(-10), "\U0001F600", ts(-1, 999_999), true},
		},
	}
	cases := []struct {
		row, expr string
		want      bool
	}{
		{"plain", op("eq", `"l.i"`, `"r.i"`), true},
		{"plain", op("gt", `"l.b"`, `"r.b"`), true},
		{"plain", op("gt", `"l.i"`, `"r.b"`), false}, // INT vs BIGINT
		{"plain", op("lt", `"l.t"`, `"r.t"`), false},
		{"plain", op("eq", `"l.c"`, `"r.c"`), true}, // 1.50 = 1.500
		{"plain", op("lt", `"l.s"`, `"r.s"`), true},
		{"plain", op("lt", `"l.ts"`, `"r.ts"`), true},
		{"plain", op("gt", `"l.z"`, `"r.z"`), true}, // Boolean.compare
		{"plain", op("eq", `"l.f"`, `"r.d"`), false},
		{"plain", op("lt", `"l.f"`, `"r.d"`), true},
		{"plain", op("ne", `"l.s"`, lit("CHAR(2)", "ab")), false},
		{"plain", op("ge", typedOp("plus", "INT", `"l.i"`, lit("INT", "1")), `"r.b"`), true},
		{"plain", op("eq", typedOp("plus", "TINYINT", `"l.t"`, lit("TINYINT", "1")), `"r.t"`), true}, // 127 + 1 wraps to -128
		{"plain", op("eq", typedOp("minus", "BIGINT", `"l.b"`, `"r.i"`), lit("BIGINT", "2")), true},
		{"plain", op("lt", `"l.c"`, lit("DECIMAL(3, 2)", "1.51")), true},
		{"plain", op("eq", `"l.ts"`, lit("TIMESTAMP(6)", "10,5")), true},
		// three-valued logic: a pair joins only on TRUE
		{"nulls", op("eq", `"l.i"`, `"r.i"`), false},
		{"nulls", op("not", op("eq", `"l.i"`, `"r.i"`)), false},
		{"nulls", op("or", op("ne", `"l.s"`, `"r.s"`), op("is_null", `"r.b"`)), true},
		{"nulls", op("or", op("ne", `"l.s"`, `"r.s"`), op("is_not_null", `"r.b"`)), false},
		{"nulls", op("and", op("eq", `"l.i"`, `"r.i"`), op("eq", `"l.b"`, `"r.i"`)), false},
		{"nulls", op("not", op("and", op("eq", `"l.i"`, `"r.i"`), op("ne", `"l.b"`, `"r.i"`))), true}, // NULL AND FALSE = FALSE
		{"nulls", op("not", op("or", op("eq", `"l.i"`, `"r.i"`), op("eq", `"l.b"`, `"r.i"`))), false},
		{"nulls", op("is_null", typedOp("plus", "INT", `"l.i"`, `"r.i"`)), true},
		{"nulls", op("eq", `"l.b"`, `{"op":"literal","type":"BIGINT"}`), false},
		// Java's primitive comparisons: NaN, -0.0, float promotion
		{"nan", op("eq", `"l.f"`, `"l.f"`), false},
		{"nan", op("ne", `"l.f"`, `"l.f"`), true},
		{"nan", op("lt", `"l.f"`, `"r.f"`), false},
		{"nan", op("ge", `"l.f"`, `"r.f"`), false},
		{"nan", op("eq", `"l.d"`, `"r.d"`), true}, // -0.0 == 0.0
		{"nan", op("lt", `"l.d"`, `"r.d"`), false},
		{"nan", op("eq", `"l.i"`, `"r.f"`), true},  // 16777217 as float is 16777216
		{"nan", op("gt", `"l.i"`, `"r.i"`), false}, // but as int it is smaller than MAX_INT
		{"nan", op("eq", op("cast", `"l.i"`), `"r.f"`), false},
		{"nan", op("eq", typedOp("cast", "FLOAT", `"l.i"`), `"r.f"`), true}, // rounded as Java's (float) rounds
		{"nan", op("gt", `"l.c"`, `"r.c"`), false},                          // -0.01 = -0.010
		{"nan", op("eq", `"l.c"`, `"r.c"`), true},
		{"nan", op("lt", `"l.s"`, `"r.s"`), true},                                                                   // unsigned UTF-8 bytes
		{"nan", op("eq", `"l.ts"`, `"r.ts"`), true},                                                                 // same millis and nanos
		{"nan", op("eq", typedOp("plus", "BIGINT", `"l.b"`, `"r.b"`), lit("BIGINT", "-9223372036854775808")), true}, // long overflow
	}
	for _, c := range cases {
		if strings.Contains(c.expr, `"op":"cast","args"`) {
			c.expr = strings.Replace(c.expr, `"op":"cast","args"`, `"op":"cast","type":"DOUBLE","args"`, 1)
		}
		cd, err := cond(t, c.expr, left, right)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		pair := rows[c.row]
		if got := cd.Holds(condRow(left, pair[0]), condRow(right, pair[1])); got != c.want {
			t.Errorf("row %s: %s = %v, want %v", c.row, c.expr, got, c.want)
		}
	}
}

func TestConditionUnsupported(t *testing.T) {
	left, right := NewRowLayout(condTypes(2)), NewRowLayout(condTypes(3))
	for src, want := range map[string]string{
		op("eq", `"l.c"`, `"r.i"`):                                     "comparison of DECIMAL(10, 2) with INT",
		op("eq", `"l.s"`, `"r.i"`):                                     "comparison of VARCHAR with INT",
		op("like", `"l.s"`, `"r.s"`):                                   `operator "like"`,
		op("eq", typedOp("plus", "DOUBLE", `"l.d"`, `"r.d"`), `"r.d"`): "plus of DOUBLE with",
		op("eq", typedOp("cast", "INT", `"l.b"`), `"r.i"`):             "CAST(BIGINT AS INT)",
	} {
		_, err := cond(t, src, left, right)
		if err == nil || !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), strings.SplitN(want, " with", 2)[0]) {
			t.Errorf("%s: %v, want unsupported %q", src, err, want)
		}
	}
	if _, err := cond(t, `"l.i"`, left, right); err == nil || !strings.Contains(err.Error(), "want BOOLEAN") {
		t.Errorf("an INT condition: %v", err)
	}
	if _, err := cond(t, `{"op":"field","field":18}`, left, right); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("field out of range: %v", err)
	}
}
