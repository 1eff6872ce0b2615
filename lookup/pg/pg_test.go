package pg

import (
	"context"
	"errors"
	"math"
	"math/big"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrystream/ferry/internal/pgtest"
)

// Every test here runs against the real PostgreSQL that pgtest starts for this binary.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func mustType(t *testing.T, s string) Type {
	t.Helper()
	ty, err := ParseType(s)
	if err != nil {
		t.Fatal(err)
	}
	return ty
}

func cols(t *testing.T, spec ...string) []Column {
	t.Helper()
	var out []Column
	for _, s := range spec {
		name, ty, _ := strings.Cut(s, " ")
		out = append(out, Column{Name: name, Type: mustType(t, ty)})
	}
	return out
}

// counter counts the statements the pool sends (one per round trip of a lookup).
type counter struct{ n atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func open(t *testing.T, cfg Config) *Lookuper {
	t.Helper()
	l, err := Open(context.Background(), pgtest.Server(t).DSN(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func lookup(t *testing.T, l *Lookuper, keys ...[]any) [][]Row {
	t.Helper()
	out, err := l.Lookup(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func dec(t *testing.T, s string) DecimalValue {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		t.Fatal(s)
	}
	d, _ := DecimalOf(v)
	return d
}

func ts(wall time.Time) TimestampValue {
	return TimestampValue{Millis: wall.UnixMilli(), NanoOfMilli: int32(wall.Nanosecond() % 1_000_000)}
}

// TestTypes checks every column type against the value Flink's JDBC PostgreSQL converter gives
// (docs/operators/lookup-join.md#types): NULLs, integer narrowing, NUMERIC rounded HALF_UP and
// NULL on overflow, blank-padded CHAR, bytea with zero bytes, dates and timestamps before 1970
// with fractions, TIME losing its fraction, TIMESTAMPTZ as the zone's wall clock, arrays.
func TestTypes(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE lk_types (id int4, b bool, s int2, i int4, big int8, r float4, d float8,
		n numeric(10,3), n2 numeric, t text, vc varchar(10), c char(5), by bytea, dt date, tm time(6),
		ts timestamp(6), tz timestamptz(6), ai int4[], at text[], an numeric[])`,
		`INSERT INTO lk_types (id) VALUES (1)`,
		`INSERT INTO lk_types VALUES (2, true, -32768, 300, 9223372036854775807, 1.5, '-0', 12.345, 12345.67,
		'', 'héllo', 'ab', '\x000100', '1969-12-31', '12:34:56.789', '1969-12-31 23:59:59.123456',
		'2024-03-10 12:00:00.5+00', '{1,NULL,3}', '{"a",NULL,""}', '{1.005,NULL}')`,
		`INSERT INTO lk_types VALUES (3, false, 32767, -1, -9223372036854775808, 'NaN', 'Infinity', -12.345, 0.05,
		'x y ', 'ab ', 'abcde', '', '1582-10-15', '23:59:59.999999', '1900-01-01 00:00:00.000001',
		'1969-12-31 23:59:59.999999-01', '{}', '{}', '{-1.005}')`)
	fields := cols(t, "id INT", "b BOOLEAN", "s SMALLINT", "i INT", "i TINYINT", "i SMALLINT", "big BIGINT",
		"r FLOAT", "d DOUBLE", "n DECIMAL(10, 2)", "n2 DECIMAL(5, 1)", "t STRING", "vc VARCHAR(10)", "c CHAR(5)",
		"by BYTES", "dt DATE", "tm TIME(3)", "ts TIMESTAMP(6)", "tz TIMESTAMP(6)", "ai ARRAY<INT>",
		"at ARRAY<STRING>", "an ARRAY<DECIMAL(10, 2)>")
	for _, zone := range []*time.Location{time.UTC, time.FixedZone("+05:30", 19800)} {
		l := open(t, Config{Table: "lk_types", Keys: cols(t, "id INT"), Fields: fields, Zone: zone})
		got := lookup(t, l, []any{int32(1)}, []any{int32(2)}, []any{int32(3)})
		null := make(Row, len(fields))
		null[0] = int32(1)
		tz2 := time.Date(2024, 3, 10, 12, 0, 0, 500_000_000, time.UTC).In(zone)
		tz3 := time.Date(1970, 1, 1, 0, 59, 59, 999_999_000, time.UTC).In(zone)
		wall := func(l time.Time) TimestampValue {
			return ts(time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC))
		}
		want := [][]Row{{null}, {{int32(2), true, int16(-32768), int32(300), int8(44), int16(300), int64(math.MaxInt64),
			float32(1.5), math.Copysign(0, -1), dec(t, "1235"), nil, "", "héllo", "ab   ", []byte{0, 1, 0},
			int32(-1), int32(45296000), TimestampValue{Millis: -877, NanoOfMilli: 456000}, wall(tz2),
			[]any{int32(1), nil, int32(3)}, []any{"a", nil, ""}, []any{dec(t, "101"), nil}}},
			{{int32(3), false, int16(32767), int32(-1), int8(-1), int16(-1), int64(math.MinInt64),
				float32(math.NaN()), math.Inf(1), dec(t, "-1235"), dec(t, "1"), "x y ", "ab ", "abcde", []byte{},
				int32(-141427), int32(86399000), ts(time.Date(1900, 1, 1, 0, 0, 0, 1000, time.UTC)), wall(tz3),
				[]any{}, []any{}, []any{dec(t, "-101")}}}}
		for k := range want {
			if len(got[k]) != 1 {
				t.Fatalf("zone %s key %d: %d rows", zone, k+1, len(got[k]))
			}
			for c := range fields {
				g, w := got[k][0][c], want[k][0][c]
				if f, ok := w.(float32); ok && f != f {
					if g, ok := g.(float32); !ok || g == g {
						t.Errorf("zone %s key %d %s: got %#v, want NaN", zone, k+1, fields[c].Name, got[k][0][c])
					}
					continue
				}
				if f, ok := w.(float64); ok && f == 0 {
					if g, ok := g.(float64); !ok || math.Float64bits(g) != math.Float64bits(f) {
						t.Errorf("zone %s key %d %s: got %#v, want -0.0", zone, k+1, fields[c].Name, got[k][0][c])
					}
					continue
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("zone %s key %d %s (%s): got %#v, want %#v", zone, k+1, fields[c].Name, fields[c].Type, g, w)
				}
			}
		}
	}
	// the 1582 gap and infinities are refused, not guessed
	pgtest.Exec(t, `INSERT INTO lk_types (id, dt) VALUES (4, '1582-10-10')`, `INSERT INTO lk_types (id, ts) VALUES (5, 'infinity')`)
	l := open(t, Config{Table: "lk_types", Keys: cols(t, "id INT"), Fields: cols(t, "dt DATE", "ts TIMESTAMP(3)")})
	for _, k := range []int32{4, 5} {
		_, err := l.Lookup(context.Background(), [][]any{{k}})
		var ce *ConversionError
		if !errors.As(err, &ce) || ce.Retry {
			t.Errorf("key %d: got %v, want a non-retried ConversionError", k, err)
		}
	}
}

// TestBatch: composite keys, several rows per key (all of them, duplicates included, in the
// per-key statement's order), missing keys, duplicate keys in one batch, and ONE statement per
// batch (counted by the client's tracer and by the server's pg_stat_statements).
func TestBatch(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE lk_batch (a int4, b varchar(10), v text, w int8)`,
		`INSERT INTO lk_batch VALUES (1,'x','r1',10),(1,'y','r2',20),(1,'x','r3',30),(2,'x','r4',40),(1,'x','r1',10),(NULL,'x','rn',0)`)
	var cnt counter
	l := open(t, Config{Table: "lk_batch", Keys: cols(t, "a INT", "b STRING"), Fields: cols(t, "v STRING", "w BIGINT"), Tracer: &cnt})
	before := pgtest.BatchedStatements(t, "lk_batch")
	got := lookup(t, l, []any{int32(1), "x"}, []any{int32(2), "y"}, []any{int32(2), "x"}, []any{int32(1), "x"}, []any{int32(1), "y"})
	if n := cnt.n.Load(); n != 1 {
		t.Errorf("%d statements for one batch, want 1", n)
	}
	if n := pgtest.BatchedStatements(t, "lk_batch") - before; n != 1 {
		t.Errorf("server ran the batched statement %d times, want 1", n)
	}
	r1 := []Row{{"r1", int64(10)}, {"r3", int64(30)}, {"r1", int64(10)}}
	want := [][]Row{r1, nil, {{"r4", int64(40)}}, r1, {{"r2", int64(20)}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	// the within-key order is the standalone per-key statement's (a plain heap table: insertion order)
	c, err := pgx.Connect(context.Background(), pgtest.Server(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(context.Background(), l.PerKeySQL(), int32(1), "x")
	if err != nil {
		t.Fatal(err)
	}
	var single []Row
	for rows.Next() {
		var v string
		var w int64
		if err := rows.Scan(&v, &w); err != nil {
			t.Fatal(err)
		}
		single = append(single, Row{v, w})
	}
	if !reflect.DeepEqual(single, r1) {
		t.Errorf("per-key statement %q returns %v, the batch %v", l.PerKeySQL(), single, r1)
	}
	// the plan is a scan per key driven by the unnested keys, even with nested loops disabled:
	// what keeps each key's rows contiguous and in the per-key statement's order
	tx, err := c.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(context.Background(), "SET LOCAL enable_nestloop = off"); err != nil {
		t.Fatal(err)
	}
	plan, err := tx.Query(context.Background(), "EXPLAIN (COSTS OFF) "+l.SQL(), []int32{1, 2}, []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for plan.Next() {
		var line string
		if err := plan.Scan(&line); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	if len(lines) < 3 || lines[0] != "Nested Loop" || !strings.Contains(lines[1], "Function Scan on __ferry_k") {
		t.Errorf("plan of the batched statement:\n%s", strings.Join(lines, "\n"))
	}
	// an empty batch sends nothing
	lookup(t, l)
	if n := cnt.n.Load(); n != 1 {
		t.Errorf("an empty batch sent a statement")
	}
}

// TestKeyBinding: keys are bound as pgjdbc binds them, so the same rows match as in Flink:
// a VARCHAR key against char(n) ignores trailing blanks, against text it is exact; a FLOAT key
// is a float4 (2.2f does not match a float8 2.2); a TIME key loses its fraction; DATE and
// TIMESTAMP keys, TIMESTAMP keys on timestamptz read in the JVM zone; DECIMAL, BOOLEAN, BYTES,
// SMALLINT keys; duplicates by exact Flink value (NaN alike, -0.0 apart).
func TestKeyBinding(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE lk_keys (c char(4), t text, f8 float8, f4 float4, tm time(3), dt date, ts timestamp(3),
		tz timestamptz, n numeric(6,2), bo bool, by bytea, sm int2, v int4)`,
		`INSERT INTO lk_keys VALUES ('ab', 'ab', 2.2, 2.5, '12:34:56', '2024-02-29', '2024-01-01 10:00:00.123',
		'2024-01-01 10:00:00+00', 1.50, true, '\x00ff', -7, 1)`,
		`INSERT INTO lk_keys VALUES (NULL, NULL, NULL, 'NaN', '12:34:56.789', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 2)`)
	one := cols(t, "v INT")
	type tc struct {
		key   string
		vals  []any
		want  []int32 // v of the matched rows, per value
		zone  *time.Location
		label string
	}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	cases := []tc{
		{"c STRING", []any{"ab", "ab  ", "ab "}, []int32{1, 1, 1}, nil, "bpchar = varchar ignores trailing blanks"},
		{"t STRING", []any{"ab", "ab "}, []int32{1}, nil, "text = varchar is exact"},
		{"f8 FLOAT", []any{float32(2.2)}, nil, nil, "float4 2.2 widened differs from float8 2.2"},
		{"f8 DOUBLE", []any{2.2}, []int32{1}, nil, "double"},
		{"f4 FLOAT", []any{float32(2.5), float32(math.NaN())}, []int32{1, 2}, nil, "float4, NaN = NaN in PostgreSQL"},
		{"tm TIME(3)", []any{int32(45296000), int32(45296789)}, []int32{1, 1}, nil, "the key's fraction is dropped; the row with a fraction never matches"},
		{"dt DATE", []any{int32(19782)}, []int32{1}, nil, "date"},
		{"ts TIMESTAMP(3)", []any{ts(time.Date(2024, 1, 1, 10, 0, 0, 123e6, time.UTC))}, []int32{1}, nil, "timestamp"},
		{"tz TIMESTAMP(3)", []any{ts(time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC))}, []int32{1}, nil, "timestamptz in UTC"},
		{"tz TIMESTAMP(3)", []any{ts(time.Date(2024, 1, 1, 19, 0, 0, 0, time.UTC)), ts(time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC))}, []int32{1}, tokyo, "timestamptz: the wall clock in Tokyo"},
		{"n DECIMAL(6, 2)", []any{dec(t, "150")}, []int32{1}, nil, "numeric 1.50 = 1.5"},
		{"bo BOOLEAN", []any{true, false}, []int32{1}, nil, "bool"},
		{"by BYTES", []any{[]byte{0, 0xff}, []byte{0}}, []int32{1}, nil, "bytea"},
		{"sm SMALLINT", []any{int16(-7)}, []int32{1}, nil, "int2"},
		{"sm TINYINT", []any{int8(-7)}, []int32{1}, nil, "TINYINT binds as int2"},
	}
	for _, c := range cases {
		l := open(t, Config{Table: "lk_keys", Keys: cols(t, c.key), Fields: one, Zone: c.zone})
		var keys [][]any
		for _, v := range c.vals {
			keys = append(keys, []any{v})
		}
		got := lookup(t, l, keys...)
		var vs []int32
		for _, rows := range got {
			for _, r := range rows {
				vs = append(vs, r[0].(int32))
			}
		}
		if !reflect.DeepEqual(vs, c.want) {
			t.Errorf("%s (%s): got v=%v, want %v", c.key, c.label, vs, c.want)
		}
	}
	// dedup by exact Flink value: every NaN alike, -0.0 apart from 0.0 (Float.equals)
	var cnt counter
	l := open(t, Config{Table: "lk_keys", Keys: cols(t, "f8 DOUBLE"), Fields: one, Tracer: &cnt})
	nan2 := math.Float64frombits(0x7ff8000000000001)
	got := lookup(t, l, []any{math.NaN()}, []any{nan2}, []any{0.0}, []any{math.Copysign(0, -1)})
	if len(got) != 4 || cnt.n.Load() != 1 {
		t.Fatalf("got %v in %d statements", got, cnt.n.Load())
	}
	keys := map[string]bool{}
	for _, v := range []float64{math.NaN(), nan2, 0, math.Copysign(0, -1)} {
		keys[string(appendKey(nil, v))] = true
	}
	if len(keys) != 3 {
		t.Errorf("%d distinct encodings of NaN, NaN', 0.0, -0.0; want 3", len(keys))
	}
}

// fakeClock is a settable clock for the cache.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)} }
func rowsOf(vs ...int32) []Row           { return rowsFrom(vs) }
func rowsFrom(vs []int32) []Row {
	r := []Row{}
	for _, v := range vs {
		r = append(r, Row{v})
	}
	return r
}

// TestCache: Flink's DefaultLookupCache semantics with a fake clock.
func TestCache(t *testing.T) {
	if _, err := NewCache(CacheOptions{MaxRows: -1}, nil); err == nil || !strings.Contains(err.Error(), "lookup.partial-cache.max-rows") {
		t.Errorf("a cache without bounds: %v", err)
	}
	clk := newClock()
	c, _ := NewCache(CacheOptions{MaxRows: -1, ExpireAfterWrite: 10 * time.Second, CacheMissingKey: true}, clk.now)
	c.Put("a", rowsOf(1))
	c.Put("miss", nil)
	clk.add(9 * time.Second)
	if r, ok := c.Get("a"); !ok || !reflect.DeepEqual(r, rowsOf(1)) {
		t.Errorf("a at 9s: %v %v", r, ok)
	}
	if r, ok := c.Get("miss"); !ok || len(r) != 0 {
		t.Errorf("a cached miss: %v %v", r, ok)
	}
	clk.add(time.Second) // expire-after-write: reads do not extend it; expired at exactly 10 s
	if _, ok := c.Get("a"); ok {
		t.Error("a at 10s: still cached after expire-after-write")
	}

	clk = newClock()
	c, _ = NewCache(CacheOptions{MaxRows: -1, ExpireAfterAccess: 10 * time.Second, CacheMissingKey: false}, clk.now)
	c.Put("a", rowsOf(1))
	c.Put("miss", nil)
	if _, ok := c.Get("miss"); ok {
		t.Error("cache-missing-key=false cached a miss")
	}
	for i := 0; i < 3; i++ {
		clk.add(9 * time.Second)
		if _, ok := c.Get("a"); !ok {
			t.Fatalf("a expired at read %d although read every 9 s", i)
		}
	}
	clk.add(10 * time.Second)
	if _, ok := c.Get("a"); ok {
		t.Error("a cached 10 s after its last read")
	}

	// max-rows counts keys, evicting the least recently used
	c, _ = NewCache(CacheOptions{MaxRows: 2, CacheMissingKey: true}, nil)
	c.Put("a", rowsOf(1, 2, 3))
	c.Put("b", rowsOf(4))
	c.Get("a")
	c.Put("c", rowsOf(5))
	if _, ok := c.Get("b"); ok || c.Len() != 2 {
		t.Errorf("b was not evicted (len %d)", c.Len())
	}
	if _, ok := c.Get("a"); !ok {
		t.Error("a, recently read, was evicted")
	}

	// through a Lookuper: cached keys and misses send nothing; only the rest is fetched
	pgtest.Exec(t, `CREATE TABLE lk_cache (k int4, v int4)`, `INSERT INTO lk_cache VALUES (1, 10), (2, 20)`)
	clk = newClock()
	cache, _ := NewCache(CacheOptions{MaxRows: 100, ExpireAfterWrite: time.Minute, CacheMissingKey: true}, clk.now)
	var cnt counter
	l := open(t, Config{Table: "lk_cache", Keys: cols(t, "k INT"), Fields: cols(t, "v INT"), Cache: cache, Tracer: &cnt})
	lookup(t, l, []any{int32(1)}, []any{int32(3)})
	pgtest.Exec(t, `UPDATE lk_cache SET v = 11 WHERE k = 1`, `INSERT INTO lk_cache VALUES (3, 30)`)
	got := lookup(t, l, []any{int32(1)}, []any{int32(3)})
	if cnt.n.Load() != 1 || !reflect.DeepEqual(got, [][]Row{rowsOf(10), {}}) {
		t.Errorf("cached: got %v after %d statements, want the cached [10] and miss in 1", got, cnt.n.Load())
	}
	got = lookup(t, l, []any{int32(2)}, []any{int32(1)})
	if cnt.n.Load() != 2 || !reflect.DeepEqual(got, [][]Row{rowsOf(20), rowsOf(10)}) {
		t.Errorf("partly cached: got %v after %d statements", got, cnt.n.Load())
	}
	clk.add(time.Minute)
	got = lookup(t, l, []any{int32(1)}, []any{int32(3)})
	if !reflect.DeepEqual(got, [][]Row{rowsOf(11), rowsOf(30)}) {
		t.Errorf("expired: got %v, want the table's new rows", got)
	}
}
