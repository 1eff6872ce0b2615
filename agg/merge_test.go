package agg

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// Tests of partial state and merge, the two halves of Flink's two-phase aggregation: a local
// aggregate folds rows and writes each key's accumulator row; a global aggregate merges those
// rows into its state (MiniBatchLocalGroupAggFunction, MiniBatchGlobalGroupAggFunction).

// mergeCombo is one (function, argument type, retraction) the tests cover.
type mergeCombo struct {
	fn, typ string
	retract bool
}

var mergeTypes = []string{"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE",
	"DECIMAL(10, 2)", "DECIMAL(38, 4)", "DECIMAL(38, 0)", "VARCHAR", "DATE", "TIMESTAMP(3)"}

// mergeCombos lists every native (function, argument type, retraction).
func mergeCombos() []mergeCombo {
	var out []mergeCombo
	for _, fn := range []string{"COUNT(*)", "COUNT", "SUM", "SUM0", "AVG", "MIN", "MAX"} {
		for _, typ := range mergeTypes {
			arg, err := engine.ParseType(typ)
			if err != nil {
				panic(err)
			}
			if fn != "COUNT(*)" && fn != "COUNT" && kernels.Support(fn, arg) != nil {
				continue
			}
			if fn == "COUNT(*)" && typ != "BIGINT" {
				continue
			}
			for _, retract := range []bool{false, true} {
				out = append(out, mergeCombo{fn, typ, retract})
			}
		}
	}
	return out
}

func (c mergeCombo) String() string { return fmt.Sprintf("%s(%s)/retract=%v", c.fn, c.typ, c.retract) }

// mapView reports whether the combo's accumulator merges in Go only.
func (c mergeCombo) mapView() bool { return c.retract && (c.fn == "MIN" || c.fn == "MAX") }

// tameValue draws a value for which folding everything and merging partial states must agree:
// integers anywhere (two's-complement addition is associative), floating point integers small
// enough that every sum is exact and no -0.0 or NaN (whose outcome depends on order), DECIMAL
// small enough never to overflow for sums, anything for MIN/MAX but NaN and -0.0.
func tameValue(r *rand.Rand, t engine.Type, fn string, pool int) any {
	if r.IntN(8) == 0 {
		return nil
	}
	switch t.ID {
	case engine.Float:
		return float32(r.IntN(2001) - 1000)
	case engine.Double:
		return float64(r.IntN(2001) - 1000)
	case engine.Decimal:
		if fn == "MIN" || fn == "MAX" {
			return randomDecimal(r, t, r.IntN(pool), pool)
		}
		return big.NewInt(r.Int64N(2_000_001) - 1_000_000)
	}
	t.Nullable = false
	return randomValue(r, t, pool)
}

// mergeStream is a random row stream for one group-by: values, groups, actions (+1, -1) and
// the partition each row goes to.
type mergeStream struct {
	vals  []any
	gids  []int32
	acts  []int8
	parts []int
}

func genStream(r *rand.Rand, c mergeCombo, arg engine.Type, groups, parts int, tame bool) mergeStream {
	var s mergeStream
	pool := 2 + r.IntN(30)
	live := make([][]any, groups) // per group: accumulated values (MIN/MAX with retraction, tame)
	for range r.IntN(400) {
		g := int32(r.IntN(groups))
		var v any
		if tame {
			v = tameValue(r, arg, c.fn, pool)
		} else {
			v = randomValue(r, arg, pool)
		}
		act := int8(1)
		if c.retract && r.IntN(3) == 0 {
			act = -1
		}
		part := r.IntN(parts)
		if tame && c.mapView() {
			// A valid changelog (retract only what was accumulated), split by value, so every
			// partition sees each value's counts stay non-negative, as the whole stream does.
			if act < 0 {
				if len(live[g]) == 0 {
					act = 1
				} else {
					j := r.IntN(len(live[g]))
					v = live[g][j]
					live[g] = append(live[g][:j], live[g][j+1:]...)
				}
			}
			if act > 0 && v != nil {
				live[g] = append(live[g], v)
			}
			part = int(hashAny(v) % uint64(parts))
		}
		s.vals, s.gids, s.acts, s.parts = append(s.vals, v), append(s.gids, g), append(s.acts, act), append(s.parts, part)
	}
	return s
}

func hashAny(v any) uint64 {
	var h uint64 = 1469598103934665603
	for _, b := range []byte(enginetest.Format(v)) {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}

// foldAll folds rows (a subset given by keep) into r in random batch sizes, in order.
func foldAll(r *rig, s mergeStream, keep func(i int) bool, rnd *rand.Rand) {
	var vals []any
	var gids []int32
	var acts []int8
	flush := func() {
		if len(vals) > 0 {
			r.fold(vals, gids, acts, enginetest.Options{Offset: rnd.IntN(3), Garbage: rnd})
		}
		vals, gids, acts = vals[:0], gids[:0], acts[:0]
	}
	size := 1 + rnd.IntN(64)
	for i := range s.vals {
		if !keep(i) {
			continue
		}
		vals, gids, acts = append(vals, s.vals[i]), append(gids, s.gids[i]), append(acts, s.acts[i])
		if len(vals) >= size {
			flush()
			size = 1 + rnd.IntN(64)
		}
	}
	flush()
}

// fmtValues renders values for comparison (NaN as NaN, -0.0 apart from 0.0).
func fmtValues(vs []any) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(enginetest.Format(v))
	}
	return b.String()
}

func allGroups(n int) []int32 {
	gs := make([]int32, n)
	for g := range gs {
		gs[g] = int32(g)
	}
	return gs
}

// mergePartitions merges the partial states of parts (each partition's groups, shuffled, the
// partitions in order) into dst, in batches that may hold several partitions, as a global
// aggregate receives local aggregates' rows. MapView accumulators merge in Go.
func mergePartitions(t *testing.T, dst *rig, parts []*rig, rnd *rand.Rand) {
	t.Helper()
	var types []engine.Type
	var rows [][]any
	var gids []int32
	flush := func() {
		if len(rows) > 0 {
			if _, err := dst.merge(types, rows, gids, rnd.IntN(2), rnd); err != nil {
				t.Fatal(err)
			}
		}
		rows, gids = nil, nil
	}
	for _, p := range parts {
		groups := allGroups(p.groups)
		rnd.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
		if gm, ok := dst.acc.(kernels.GroupMerger); ok {
			gm.MergeGroupsFrom(p.acc, groups, groups, make([]bool, len(groups)))
			continue
		}
		ts, prow := p.partial(groups)
		types = ts
		rows, gids = append(rows, prow...), append(gids, groups...)
		if rnd.IntN(2) == 0 {
			flush()
		}
	}
	flush()
}

// TestMergeMatchesFold splits random row streams into partitions, folds each partition into
// its own accumulator (a local aggregate), merges their partial states into a fresh one (a
// global aggregate) and checks it holds what folding the whole stream into one accumulator
// gives: values, NULLs and the partial state itself. The streams are those for which Flink's
// merge is exact (tameValue; for MIN/MAX with retraction, valid changelogs split by value).
func TestMergeMatchesFold(t *testing.T) {
	for _, c := range mergeCombos() {
		t.Run(c.String(), func(t *testing.T) {
			arg, _ := engine.ParseType(c.typ)
			for seed := range uint64(12) {
				rnd := rand.New(rand.NewPCG(seed, 77))
				groups, nparts := 1+rnd.IntN(6), 1+rnd.IntN(4)
				s := genStream(rnd, c, arg, groups, nparts, true)
				whole := newRig(t, c.fn, c.typ, c.retract, groups)
				foldAll(whole, s, func(int) bool { return true }, rnd)
				parts := make([]*rig, nparts)
				for p := range parts {
					parts[p] = newRig(t, c.fn, c.typ, c.retract, groups)
					foldAll(parts[p], s, func(i int) bool { return s.parts[i] == p }, rnd)
				}
				merged := newRig(t, c.fn, c.typ, c.retract, groups)
				mergePartitions(t, merged, parts, rnd)
				if got, want := fmtValues(merged.values()), fmtValues(whole.values()); got != want {
					t.Fatalf("seed %d: merged values [%s], folded [%s]", seed, got, want)
				}
				if c.mapView() {
					continue
				}
				_, got := merged.partial(allGroups(groups))
				_, want := whole.partial(allGroups(groups))
				for g := range got {
					if a, b := fmtValues(got[g]), fmtValues(want[g]); a != b {
						t.Fatalf("seed %d group %d: merged partial state [%s], folded [%s]", seed, g, a, b)
					}
				}
			}
		})
	}
}

// TestMergeMatchesFlinkMerge runs arbitrary streams — NaN, infinities, -0.0, integer
// boundaries, DECIMAL sums that overflow to NULL, retractions of values never accumulated —
// split at random, against the reference model of Flink's accumulators and merge: each
// partition's partial state must be Flink's accumulator row, and every merged row must record
// the values Flink's merge produces before and after it.
func TestMergeMatchesFlinkMerge(t *testing.T) {
	for _, c := range mergeCombos() {
		t.Run(c.String(), func(t *testing.T) {
			arg, _ := engine.ParseType(c.typ)
			for seed := range uint64(12) {
				rnd := rand.New(rand.NewPCG(seed, 78))
				groups, nparts := 1+rnd.IntN(5), 1+rnd.IntN(4)
				s := genStream(rnd, c, arg, groups, nparts, false)
				refOf := func() refAgg { return newRefGroupAgg(newRig(t, c.fn, c.typ, c.retract, 1).spec).create()[0] }
				parts := make([]*rig, nparts)
				refs := make([][]refAgg, nparts) // per partition, per group
				for p := range parts {
					parts[p] = newRig(t, c.fn, c.typ, c.retract, groups)
					foldAll(parts[p], s, func(i int) bool { return s.parts[i] == p }, rnd)
					refs[p] = make([]refAgg, groups)
					for g := range refs[p] {
						refs[p][g] = refOf()
					}
				}
				for i, v := range s.vals {
					ref := refs[s.parts[i]][s.gids[i]]
					if s.acts[i] > 0 {
						ref.accumulate(v)
					} else {
						ref.retract(v)
					}
				}
				merged := newRig(t, c.fn, c.typ, c.retract, groups)
				mref := make([]refAgg, groups)
				for g := range mref {
					mref[g] = refOf()
				}
				for p, part := range parts {
					gs := allGroups(groups)
					rnd.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
					var want []any
					for _, g := range gs {
						want = append(want, mref[g].value())
						if c.mapView() {
							refMergeAcc(mref[g], refs[p][g])
						} else {
							refMergePartial(mref[g], refPartial(refs[p][g]))
						}
						want = append(want, mref[g].value())
					}
					var got []any
					if c.mapView() {
						merged.acc.(kernels.GroupMerger).MergeGroupsFrom(part.acc, gs, gs, make([]bool, len(gs)))
						got = merged.recorded(len(gs))
					} else {
						types, rows := part.partial(gs)
						for j, g := range gs {
							if a, b := fmtValues(rows[j]), fmtValues(refPartial(refs[p][g])); a != b {
								t.Fatalf("seed %d partition %d group %d: partial state [%s], Flink's accumulator [%s]", seed, p, g, a, b)
							}
						}
						var err error
						if got, err = merged.merge(types, rows, gs, rnd.IntN(2), rnd); err != nil {
							t.Fatal(err)
						}
					}
					if a, b := fmtValues(got), fmtValues(want); a != b {
						t.Fatalf("seed %d partition %d: merged values before/after [%s], Flink's [%s]", seed, p, a, b)
					}
				}
			}
		})
	}
}

// mergeCase merges partial rows given by hand into one group and lists the value after each.
type mergeCase struct {
	name    string
	fn, typ string
	retract bool
	rows    [][]any
	want    string
}

func TestMergeEdgeCases(t *testing.T) {
	max38 := new(big.Int).Sub(pow10Big(38), big.NewInt(1))
	b := big.NewInt
	nan := math.NaN()
	negZero := math.Copysign(0, -1)
	cases := []mergeCase{
		{name: "SUM: a NULL partial sum keeps the sum, the first non-NULL one replaces NULL",
			fn: "SUM", typ: "BIGINT", rows: [][]any{{nil}, {int64(5)}, {nil}, {int64(7)}},
			want: "null, 5, 5, 12"},
		{name: "SUM wraps in the argument type",
			fn: "SUM", typ: "INT", rows: [][]any{{int64(math.MaxInt32)}, {int64(1)}},
			want: "2147483647, -2147483648"},
		{name: "SUM with retraction: counts add, the value is NULL while the count is 0, negative counts are not",
			fn: "SUM", typ: "TINYINT", retract: true, rows: [][]any{{nil, int64(0)}, {int64(5), int64(1)}, {int64(-5), int64(-1)}, {int64(127), int64(-1)}, {int64(2), int64(2)}},
			want: "null, 5, null, 127, -127"},
		{name: "SUM over DECIMAL: overflow to NULL, a NULL partial keeps it, the next partial restarts it",
			fn: "SUM", typ: "DECIMAL(38, 0)", rows: [][]any{{max38}, {b(1)}, {nil}, {b(5)}, {b(2)}},
			want: "99999999999999999999999999999999999999, null, null, 5, 7"},
		{name: "SUM over DECIMAL with retraction: the count moves while the sum is NULL",
			fn: "SUM", typ: "DECIMAL(38, 0)", retract: true, rows: [][]any{{max38, int64(1)}, {b(1), int64(1)}, {b(3), int64(-2)}, {b(3), int64(1)}},
			want: "99999999999999999999999999999999999999, null, null, 6"},
		{name: "$SUM0 over DECIMAL: NULL once it overflows, and NULL + x is NULL",
			fn: "SUM0", typ: "DECIMAL(38, 0)", rows: [][]any{{max38}, {b(1)}, {b(-5)}, {nil}},
			want: "99999999999999999999999999999999999999, null, null, null"},
		{name: "$SUM0 over DECIMAL: a NULL partial (a local overflow) makes it NULL",
			fn: "SUM0", typ: "DECIMAL(10, 2)", rows: [][]any{{b(250)}, {nil}, {b(1)}},
			want: "250, null, null"},
		{name: "$SUM0 wraps",
			fn: "SUM0", typ: "BIGINT", rows: [][]any{{int64(math.MaxInt64)}, {int64(1)}},
			want: "9223372036854775807, -9223372036854775808"},
		{name: "AVG over DECIMAL: a NULL partial sum (overflow) stays NULL while counts add",
			fn: "AVG", typ: "DECIMAL(10, 2)", rows: [][]any{{b(300), int64(2)}, {nil, int64(1)}, {b(3), int64(1)}},
			want: "1500000, null, null"},
		{name: "AVG over DECIMAL: partial sums overflow in the merge",
			fn: "AVG", typ: "DECIMAL(38, 0)", rows: [][]any{{max38, int64(2)}, {b(1), int64(1)}},
			want: "null, null"},
		{name: "AVG: integer division truncates toward zero, negative counts divide",
			fn: "AVG", typ: "INT", retract: true, rows: [][]any{{int64(7), int64(2)}, {int64(-8), int64(1)}, {int64(-400), int64(-4)}},
			want: "3, 0, 401"},
		{name: "AVG over DOUBLE sums doubles",
			fn: "AVG", typ: "FLOAT", rows: [][]any{{0.5, int64(1)}, {math.Inf(1), int64(1)}, {math.Inf(-1), int64(1)}},
			want: "0.5f, +Inff, NaNf"},
		{name: "COUNT adds partial counts, negative ones too, wrapping",
			fn: "COUNT", typ: "BIGINT", retract: true, rows: [][]any{{int64(3)}, {int64(-5)}, {int64(math.MaxInt64)}, {int64(3)}},
			want: "3, -2, 9223372036854775805, -9223372036854775808"},
		{name: "COUNT(*)", fn: "COUNT(*)", typ: "BIGINT", rows: [][]any{{int64(0)}, {int64(2)}},
			want: "0, 2"},
		{name: "MAX over DOUBLE: a NaN partial wins only over NULL, and nothing replaces it (Java's >)",
			fn: "MAX", typ: "DOUBLE", rows: [][]any{{nan}, {5.0}, {nil}},
			want: "NaN, NaN, NaN"},
		{name: "MAX over DOUBLE: NaN never replaces a number",
			fn: "MAX", typ: "DOUBLE", rows: [][]any{{1.0}, {nan}, {2.0}},
			want: "1, 1, 2"},
		{name: "MIN over DOUBLE: -0.0 is not less than 0.0, the first one stays",
			fn: "MIN", typ: "DOUBLE", rows: [][]any{{0.0}, {negZero}, {-1.0}},
			want: "0, 0, -1"},
		{name: "MIN over VARCHAR: UTF-8 byte order (partial strings hold no Java String)",
			fn: "MIN", typ: "VARCHAR", rows: [][]any{{"b"}, {nil}, {"😀"}, {"\ue000"}, {""}},
			want: `"b", "b", "b", "b", ""`},
		{name: "MAX over DECIMAL", fn: "MAX", typ: "DECIMAL(5, 1)", rows: [][]any{{nil}, {b(-99999)}, {b(12)}, {b(11)}},
			want: "null, -99999, 12, 12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.fn, c.typ, c.retract, 1)
			types, err := r.acc.PartialTypes()
			if err != nil {
				t.Fatal(err)
			}
			var got []any
			rnd := rand.New(rand.NewPCG(1, 1))
			for _, row := range c.rows { // one merge call per row, then all rows in one call
				vals, err := r.merge(types, [][]any{row}, []int32{0}, 0, rnd)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, vals[1])
			}
			if s := fmtValues(got); s != c.want {
				t.Fatalf("got %s, want %s", s, c.want)
			}
			r = newRig(t, c.fn, c.typ, c.retract, 1)
			vals, err := r.merge(types, c.rows, make([]int32, len(c.rows)), 2, rnd)
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for i := range c.rows {
				got = append(got, vals[2*i+1])
			}
			if s := fmtValues(got); s != c.want {
				t.Fatalf("in one batch: got %s, want %s", s, c.want)
			}
		})
	}
}

// TestPartialTypes pins the accumulator fields against Flink's getAggBufferTypes.
func TestPartialTypes(t *testing.T) {
	for _, c := range []struct {
		fn, typ string
		retract bool
		want    string
	}{
		{"COUNT(*)", "BIGINT", true, "[BIGINT]"},
		{"COUNT", "VARCHAR", false, "[BIGINT]"},
		{"SUM", "INT", false, "[INT]"},
		{"SUM", "TINYINT", true, "[TINYINT BIGINT]"},
		{"SUM", "DECIMAL(10, 2)", false, "[DECIMAL(38, 2)]"},
		{"SUM", "DECIMAL(10, 2)", true, "[DECIMAL(38, 2) BIGINT]"},
		{"SUM0", "FLOAT", false, "[FLOAT]"},
		{"SUM0", "DECIMAL(7, 7)", false, "[DECIMAL(38, 7)]"},
		{"AVG", "SMALLINT", false, "[BIGINT BIGINT]"},
		{"AVG", "FLOAT", true, "[DOUBLE BIGINT]"},
		{"AVG", "DECIMAL(10, 2)", false, "[DECIMAL(38, 2) BIGINT]"},
		{"MIN", "DATE", false, "[DATE]"},
		{"MAX", "TIMESTAMP(3)", false, "[TIMESTAMP(3)]"},
		{"MAX", "DECIMAL(5, 1)", false, "[DECIMAL(5, 1)]"},
		{"MIN", "VARCHAR", false, "[VARCHAR]"},
		{"MIN", "BIGINT", true, "[BYTES]"}, // the whole accumulator, encoded (minmax_retract_merge.go)
		{"MAX", "VARCHAR", true, "[BYTES]"},
	} {
		r := newRig(t, c.fn, c.typ, c.retract, 1)
		types, err := r.acc.PartialTypes()
		got := ""
		if err != nil {
			got = "error: " + err.Error()
			if !errors.Is(err, engine.ErrUnsupported) {
				t.Errorf("%s(%s): %v does not wrap ErrUnsupported", c.fn, c.typ, err)
			}
		} else {
			var names []string
			for _, ty := range types {
				if !ty.Nullable {
					t.Errorf("%s(%s): %s: Flink declares every accumulator field nullable", c.fn, c.typ, ty)
				}
				names = append(names, strings.TrimSuffix(ty.String(), " NOT NULL"))
			}
			got = fmt.Sprint(names)
		}
		if got != c.want {
			t.Errorf("%s(%s) retract=%v: %s, want %s", c.fn, c.typ, c.retract, got, c.want)
		}
	}
}

// TestMergeRejects checks what merge refuses, before changing any state.
func TestMergeRejects(t *testing.T) {
	rnd := rand.New(rand.NewPCG(2, 2))
	bigint := engine.Type{ID: engine.BigInt, Nullable: true}
	for _, c := range []struct {
		fn, typ string
		retract bool
		types   []engine.Type
		rows    [][]any
		is      error
		msg     string
	}{
		{"COUNT", "BIGINT", false, []engine.Type{bigint}, [][]any{{int64(1)}, {nil}}, engine.ErrData,
			"partial state column 0 holds NULL at row 1, which Flink's local aggregate never writes there"},
		{"SUM", "INT", true, []engine.Type{{ID: engine.Int, Nullable: true}, bigint}, [][]any{{nil, nil}}, engine.ErrData,
			"partial state column 1 holds NULL at row 0"},
		{"AVG", "DOUBLE", false, []engine.Type{{ID: engine.Double, Nullable: true}, bigint}, [][]any{{nil, int64(1)}}, engine.ErrData,
			"partial state column 0 holds NULL"},
		{"SUM0", "INT", false, []engine.Type{{ID: engine.Int, Nullable: true}}, [][]any{{nil}}, engine.ErrData, "holds NULL"},
		{"SUM", "INT", false, []engine.Type{bigint}, [][]any{{int64(1)}}, engine.ErrInvalid,
			"partial state column 0 is BIGINT, want INT"},
		{"AVG", "DECIMAL(10, 2)", false, []engine.Type{{ID: engine.Decimal, Precision: 38, Scale: 3, Nullable: true}, bigint}, [][]any{{big.NewInt(1), int64(1)}}, engine.ErrInvalid,
			"is DECIMAL(38, 3), want DECIMAL(38, 2)"},
		{"SUM", "INT", true, []engine.Type{{ID: engine.Int, Nullable: true}}, [][]any{{int64(1)}}, engine.ErrInvalid,
			"partial state columns [0, 2) outside the batch's 1 columns"},
		{"MIN", "DOUBLE", true, []engine.Type{{ID: engine.Double, Nullable: true}}, [][]any{{1.0}}, engine.ErrInvalid,
			"partial state column 0 is DOUBLE, want BYTES"},
		{"MAX", "VARCHAR", true, []engine.Type{dataview.MinMaxType}, [][]any{{"\x00\x05\x00\x00\x00ab"}}, engine.ErrData,
			"row 0: accumulator's extreme: malformed data: key of 5 bytes, 2 left"},
	} {
		r := newRig(t, c.fn, c.typ, c.retract, 1)
		before := fmtValues(r.values())
		_, err := r.merge(c.types, c.rows, make([]int32, len(c.rows)), 0, rnd)
		if !errors.Is(err, c.is) || !strings.Contains(fmt.Sprint(err), c.msg) {
			t.Errorf("%s(%s): %v, want %v containing %q", c.fn, c.typ, err, c.is, c.msg)
		}
		if after := fmtValues(r.values()); after != before {
			t.Errorf("%s(%s): value %s after a refused merge, %s before", c.fn, c.typ, after, before)
		}
	}
}

// TestMapViewMergeGroups walks MinWithRetractAggFunction.merge's count rules by hand: a positive
// count merged down to 0 removes the value and, being the extreme, triggers the rescan (which
// may pick a value whose count is negative, leaving mapSize 0 and the value NULL); a count
// merged up from negative joins mapSize; the other's extreme replaces one from a mapSize-0
// accumulator.
func TestMapViewMergeGroups(t *testing.T) {
	for _, typ := range []string{"BIGINT", "DECIMAL(10, 0)", "VARCHAR"} {
		val := func(x int64) any {
			switch typ {
			case "VARCHAR":
				return fmt.Sprintf("v%02d", x)
			case "DECIMAL(10, 0)":
				return big.NewInt(x)
			}
			return x
		}
		state := func(rows ...int64) *rig { // positive: accumulate, negative: retract
			r := newRig(t, "MIN", typ, true, 1)
			for _, x := range rows {
				act := int8(1)
				if x < 0 {
					act, x = -1, -x
				}
				r.fold([]any{val(x)}, []int32{0}, []int8{act}, enginetest.Options{})
			}
			return r
		}
		acc := state(5)
		steps := []struct {
			other *rig
			want  string // value before, after
		}{
			{state(-5, -3), fmt.Sprintf("%s, null", enginetest.Format(val(5)))},                        // 5: 1-1=0 removed; rescan finds 3 (count -1): mapSize 0
			{state(7), fmt.Sprintf("null, %s", enginetest.Format(val(7)))},                             // mapSize 0: the other's extreme 7 is taken
			{state(3, 3), fmt.Sprintf("%s, %s", enginetest.Format(val(7)), enginetest.Format(val(3)))}, // 3: -1+2 = 1 joins mapSize
			{state(-3, -7), fmt.Sprintf("%s, null", enginetest.Format(val(3)))},                        // both back to 0: empty
			{state(9), fmt.Sprintf("null, %s", enginetest.Format(val(9)))},
		}
		for i, st := range steps {
			acc.acc.(kernels.GroupMerger).MergeGroupsFrom(st.other.acc, []int32{0}, []int32{0}, make([]bool, 1))
			if got := fmtValues(acc.recorded(1)); got != st.want {
				t.Fatalf("%s step %d: %s, want %s", typ, i, got, st.want)
			}
		}
		// Within one accumulator: group 1 into group 0.
		r := newRig(t, "MAX", typ, true, 2)
		r.fold([]any{val(4), val(6), val(6)}, []int32{0, 1, 1}, []int8{1, 1, -1}, enginetest.Options{})
		r.fold([]any{val(8)}, []int32{1}, []int8{1}, enginetest.Options{})
		r.acc.(kernels.GroupMerger).MergeGroupsFrom(r.acc, []int32{1}, []int32{0}, make([]bool, 1))
		if got, want := fmtValues(r.values()), fmtValues([]any{val(8), val(8)}); got != want {
			t.Fatalf("%s: merging group 1 into group 0: %s, want %s", typ, got, want)
		}
	}
}

// TestMapViewMergeSnapshot merges, snapshots and restores: the merged multiset is the
// accumulator's state like any other.
func TestMapViewMergeSnapshot(t *testing.T) {
	a, b := newRig(t, "MAX", "VARCHAR", true, 3), newRig(t, "MAX", "VARCHAR", true, 3)
	a.fold([]any{"x", "y", "z"}, []int32{0, 1, 2}, []int8{1, 1, -1}, enginetest.Options{})
	b.fold([]any{"z", "w", "y"}, []int32{2, 0, 1}, []int8{1, 1, -1}, enginetest.Options{})
	a.acc.(kernels.GroupMerger).MergeGroupsFrom(b.acc, []int32{0, 1, 2}, []int32{0, 1, 2}, make([]bool, 3))
	want := fmtValues(a.values())
	if want != `"x", null, null` {
		t.Fatalf("merged values %s", want)
	}
	c := newRig(t, "MAX", "VARCHAR", true, 3)
	for g := range int32(3) {
		if _, err := c.acc.Load(a.acc.Save(nil, g), g); err != nil {
			t.Fatal(err)
		}
	}
	c.fold([]any{"a"}, []int32{1}, []int8{1}, enginetest.Options{})
	a.fold([]any{"a"}, []int32{1}, []int8{1}, enginetest.Options{})
	if got, want := fmtValues(c.values()), fmtValues(a.values()); got != want {
		t.Fatalf("restored %s, merged %s", got, want)
	}
}

func TestPartialSupport(t *testing.T) {
	bigint, double := engine.Type{ID: engine.BigInt}, engine.Type{ID: engine.Double}
	dec := engine.Type{ID: engine.Decimal, Precision: 10, Scale: 2}
	for _, c := range []struct {
		call AggCall
		arg  engine.Type
		want string
	}{
		{AggCall{Func: "count", Args: []int{0}, Distinct: true}, double, "<nil>"},
		{AggCall{Func: "SUM", Args: []int{0}, Distinct: true}, bigint, "<nil>"},
		{AggCall{Func: "SUM", Args: []int{0}, Distinct: true}, double, "not supported natively: SUM(DISTINCT) over DOUBLE: the global aggregate folds the values in a java.util.HashMap's order: not native yet"},
		{AggCall{Func: "SUM0", Args: []int{0}, Distinct: true, Retract: true}, dec, "not supported natively: $SUM0(DISTINCT) over DECIMAL(10, 2): the global aggregate folds the values in a java.util.HashMap's order: not native yet"},
		{AggCall{Func: "MIN", Args: []int{0}, Distinct: true}, double, "not supported natively: MIN(DISTINCT) over DOUBLE: the global aggregate folds the values in a java.util.HashMap's order: not native yet"},
		{AggCall{Func: "MIN", Args: []int{0}, Distinct: true}, dec, "<nil>"},
		{AggCall{Func: "MAX", Args: []int{0}, Retract: true}, double, "<nil>"},
		{AggCall{Func: "MAX", Args: []int{0}, Retract: true, Distinct: true}, bigint, "<nil>"},
		{AggCall{Func: "MAX", Args: []int{0}}, bigint, "<nil>"},
		{AggCall{Func: "SUM", Args: []int{0}, Retract: true}, double, "<nil>"},
	} {
		err := PartialSupport(c.call, c.arg)
		if fmt.Sprint(err) != c.want || (err != nil && !errors.Is(err, engine.ErrUnsupported)) {
			t.Errorf("%+v: %v, want %s", c.call, err, c.want)
		}
	}
}
