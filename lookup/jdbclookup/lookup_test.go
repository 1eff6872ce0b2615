package jdbclookup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/internal/pgtest"
	"github.com/ferrystream/ferry/lookup/pg"
	"github.com/ferrystream/ferry/session"
)

// Every test here runs against the real PostgreSQL that pgtest starts for this binary.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// dsn is the server's connection string without credentials, as the JVM sends it.
func dsn(t *testing.T) string {
	s := pgtest.Server(t)
	return fmt.Sprintf("host=%s port=%s dbname=%s sslmode=disable", s.Host, s.Port, s.Database)
}

// spec is a jdbc_lookup spec of params p; the input fields are the keys as they cross.
func spec(t *testing.T, p Params, chunkRows int) *engine.Spec {
	t.Helper()
	var fields []map[string]string
	for _, k := range p.Keys {
		pt, err := pg.ParseType(k.Type)
		if err != nil {
			t.Fatal(err)
		}
		w, err := KeyWire(pt)
		if err != nil {
			t.Fatal(err)
		}
		fields = append(fields, map[string]string{"name": k.Name, "type": strings.TrimSuffix(w.String(), " NOT NULL")})
	}
	params, _ := json.Marshal(p)
	in, _ := json.Marshal(fields)
	s, err := engine.ParseSpec([]byte(fmt.Sprintf(`{"kind":%q,"name":"LookupJoin(table=[%s])","inputs":[{"fields":%s,"keys":[]}],"max_parallelism":128,"chunk_rows":%d,"params":%s}`,
		Kind, p.Table, in, chunkRows, params)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rec collects the exported rows of a session.
type rec struct{ rows []string }

func host() session.Host {
	return session.Host{Alloc: engine.HeapAllocator{},
		Export: func(dst any, b *engine.OutBatch) error {
			r := dst.(*rec)
			for _, row := range enginetest.Rows(b) {
				r.rows = append(r.rows, row.String())
			}
			return nil
		},
		Blob: func(any, []byte) error { return errors.New("no state") }}
}

// secrets is the secrets JSON of a jdbc_lookup function.
func secrets(dsn, user, password string) []byte {
	b, _ := json.Marshal(Secrets{DSN: dsn, User: user, Password: password})
	return b
}

// open opens a session of p connected to the test server.
func open(t *testing.T, p Params, chunkRows int) *session.Session {
	t.Helper()
	srv := pgtest.Server(t)
	s, err := session.Open(spec(t, p, chunkRows), secrets(dsn(t), srv.User, srv.Password), nil, host())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// lookup processes one batch of key rows (Batch values: int64 for integers, …) and returns the
// output rows, draining every chunk; chunks counts them.
func lookup(t *testing.T, s *session.Session, types []engine.Type, keys [][]any) (rows []string, chunks int, err error) {
	t.Helper()
	kinds := make([]engine.RowKind, len(keys))
	b := enginetest.Batch(types, keys, kinds, enginetest.Options{Offset: 3})
	r := &rec{}
	more, err := s.Process([]*engine.CArray{enginetest.CArray(b)}, nil, 0, r)
	chunks++
	for err == nil && more {
		more, err = s.Next(r)
		chunks++
	}
	return r.rows, chunks, err
}

// expected renders what pg.Lookuper returns for keys as the kind's output rows.
func expected(t *testing.T, p Params, keys [][]any) []string {
	t.Helper()
	sp := spec(t, p, 0)
	cfg, _, err := p.parse(sp)
	if err != nil {
		t.Fatal(err)
	}
	srv := pgtest.Server(t)
	cfg.User, cfg.Password = srv.User, srv.Password
	l, err := pg.Open(context.Background(), dsn(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	res, err := l.Lookup(context.Background(), keys)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, rows := range res {
		for _, r := range rows {
			row := enginetest.Row{Values: []any{int64(i)}}
			for _, v := range r {
				row.Values = append(row.Values, asBatchValue(v))
			}
			out = append(out, row.String())
		}
	}
	return out
}

// asBatchValue is a lookup/pg value as enginetest decodes it from the output.
func asBatchValue(v any) any {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case []byte:
		return string(x)
	case pg.DecimalValue:
		return x.Big()
	case pg.TimestampValue:
		return enginetest.Timestamp{Millis: x.Millis, Nanos: x.NanoOfMilli}
	}
	return v
}

var intKey = []engine.Type{{ID: engine.Int, Nullable: true}}

func typesParams() Params {
	return Params{Table: "k_types", Keys: []Column{{"id", "INT"}}, Fields: []Column{
		{"id", "INT"}, {"b", "BOOLEAN"}, {"t1", "TINYINT"}, {"s", "SMALLINT"}, {"big", "BIGINT"},
		{"r", "FLOAT"}, {"d", "DOUBLE"}, {"n", "DECIMAL(10, 2)"}, {"n30", "DECIMAL(30, 4)"},
		{"t", "STRING"}, {"vc", "VARCHAR(10)"}, {"c", "CHAR(5)"}, {"by", "BYTES"}, {"dt", "DATE"},
		{"tm", "TIME(3)"}, {"ts3", "TIMESTAMP(3)"}, {"ts", "TIMESTAMP(6)"}, {"tz", "TIMESTAMP(6)"}}}
}

// TestKind: every type the kind carries, through the session (Arrow in, chunks out), against
// lookup/pg's own result; ordinals, several rows per key, duplicate and missing keys, chunking,
// and one statement per batch.
func TestKind(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE k_types (id int4, b bool, t1 int2, s int2, big int8, r float4, d float8, n numeric(10,3),
		n30 numeric, t text, vc varchar(10), c char(5), by bytea, dt date, tm time(6), ts3 timestamp(6),
		ts timestamp(6), tz timestamptz(6))`,
		`INSERT INTO k_types (id) VALUES (1)`,
		`INSERT INTO k_types VALUES (2, true, -128, -32768, 9223372036854775807, 1.5, '-0', 12.345,
		 12345678901234567890.12345, '', 'héllo', 'ab', '\x000100', '1969-12-31', '12:34:56.789',
		 '2024-01-01 10:00:00.123456', '1969-12-31 23:59:59.123456', '2024-03-10 12:00:00.5+00')`,
		`INSERT INTO k_types VALUES (2, false, 127, 32767, -1, 'NaN', 'Infinity', -12.345, -0.00005, 'x y ',
		 'ab ', 'abcde', '', '1582-10-15', '23:59:59.999999', '1900-01-01 00:00:00.000001',
		 '2262-04-12 00:00:00', '1969-12-31 23:59:59.999999-01')`,
		`INSERT INTO k_types (id, t) VALUES (3, 'only t')`)
	p := typesParams()
	s := open(t, p, 2)
	keys := [][]any{{int64(2)}, {int64(1)}, {int64(99)}, {int64(2)}, {int64(3)}}
	before := pgtest.BatchedStatements(t, "k_types")
	got, chunks, err := lookup(t, s, intKey, keys)
	if err != nil {
		t.Fatal(err)
	}
	if calls := pgtest.BatchedStatements(t, "k_types") - before; calls != 1 {
		t.Errorf("the batch ran %d statements, want 1", calls)
	}
	want := expected(t, p, [][]any{{int32(2)}, {int32(1)}, {int32(99)}, {int32(2)}, {int32(3)}})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
	if len(got) != 6 || chunks != 3 {
		t.Fatalf("%d rows in %d chunks, want 6 rows in 3 chunks of at most 2: %q", len(got), chunks, got)
	}
	// the ordinals: key rows 0 and 3 (id 2) have two rows each, 1 (id 1) one, 2 (99) none, 4 one
	var ords []string
	for _, r := range got {
		ords = append(ords, strings.SplitN(strings.TrimPrefix(r, "+I["), ",", 2)[0])
	}
	if strings.Join(ords, " ") != "0 0 1 3 3 4" {
		t.Errorf("ordinals %v, want 0 0 1 3 3 4", ords)
	}
	for _, frag := range []string{`"ab   "`, `"\x00\x01\x00"`, `ts(1704103200123,456000)`, `-1235, -1, "x y "`, "NaN", `"only t"`} {
		if !strings.Contains(strings.Join(got, "\n"), frag) {
			t.Errorf("no %s in the output:\n%s", frag, strings.Join(got, "\n"))
		}
	}

	// an empty batch sends nothing and emits nothing; a batch of misses emits nothing
	before = pgtest.BatchedStatements(t, "k_types")
	if got, _, err := lookup(t, s, intKey, nil); err != nil || len(got) != 0 {
		t.Errorf("empty batch: %q, %v", got, err)
	}
	if calls := pgtest.BatchedStatements(t, "k_types") - before; calls != 0 {
		t.Errorf("the empty batch ran %d statements", calls)
	}
	if got, _, err := lookup(t, s, intKey, [][]any{{int64(7)}, {int64(8)}}); err != nil || len(got) != 0 {
		t.Errorf("misses: %q, %v", got, err)
	}
}

// TestCompositeKeys: two keys of other types, as the JVM writes them.
func TestCompositeKeys(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE k_comp (a int8, b varchar(10), c char(4), v text)`,
		`INSERT INTO k_comp VALUES (1,'x','ab','r1'),(1,'y','ab','r2'),(1,'x','ab','r3'),(2,'x','cd','r4')`)
	p := Params{Table: "k_comp", Keys: []Column{{"a", "BIGINT"}, {"b", "STRING"}, {"c", "STRING"}},
		Fields: []Column{{"v", "STRING"}, {"a", "BIGINT"}}}
	s := open(t, p, 0)
	types := []engine.Type{{ID: engine.BigInt, Nullable: true}, {ID: engine.Varchar, Nullable: true}, {ID: engine.Varchar, Nullable: true}}
	got, _, err := lookup(t, s, types, [][]any{{int64(1), "x", "ab  "}, {int64(2), "x", "cd"}, {int64(1), "y", "zz"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`+I[0, "r1", 1]`, `+I[0, "r3", 1]`, `+I[1, "r4", 2]`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestTemporalKeys: TIMESTAMP(3) keys cross as epoch millis, TIMESTAMP(6) with their
// nanoseconds, TIME as INT milliseconds of the day, DATE as days.
func TestTemporalKeys(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE k_ts (ts3 timestamp(3), ts6 timestamp(6), tm time(0), dt date, v text)`,
		`INSERT INTO k_ts VALUES ('2024-01-01 10:00:00.123', '2024-01-01 10:00:00.123456', '12:34:56', '2024-02-29', 'hit')`)
	p := Params{Table: "k_ts", Keys: []Column{{"ts3", "TIMESTAMP(3)"}, {"ts6", "TIMESTAMP(6)"}, {"tm", "TIME(0)"}, {"dt", "DATE"}},
		Fields: []Column{{"v", "STRING"}}}
	s := open(t, p, 0)
	types := []engine.Type{{ID: engine.Timestamp, Precision: 3, Nullable: true}, {ID: engine.Timestamp, Precision: 6, Nullable: true},
		{ID: engine.Int, Nullable: true}, {ID: engine.Date, Nullable: true}}
	ts3 := enginetest.Timestamp{Millis: 1704103200123}
	got, _, err := lookup(t, s, types, [][]any{
		{ts3, enginetest.Timestamp{Millis: 1704103200123, Nanos: 456000}, int64(45296000), int64(19782)},
		{ts3, enginetest.Timestamp{Millis: 1704103200123, Nanos: 457000}, int64(45296000), int64(19782)},
	})
	if err != nil || !reflect.DeepEqual(got, []string{`+I[0, "hit"]`}) {
		t.Errorf("got %q, %v", got, err)
	}
}

// TestCache: with lookup.cache PARTIAL a key's rows come from the cache (no statement, the old
// rows after the table changed); with NONE every batch asks the server.
func TestCache(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE k_cache (id int4, v text)`, `INSERT INTO k_cache VALUES (1, 'one'), (2, 'two')`)
	base := Params{Table: "k_cache", Keys: []Column{{"id", "INT"}}, Fields: []Column{{"v", "STRING"}}}
	rows := int64(10)
	cached := base
	cached.Cache = &CacheParams{Mode: "PARTIAL", MaxRows: &rows}
	sc, sn := open(t, cached, 0), open(t, base, 0)
	keys := [][]any{{int64(1)}, {int64(3)}}
	for _, s := range []*session.Session{sc, sn} {
		if got, _, err := lookup(t, s, intKey, keys); err != nil || !reflect.DeepEqual(got, []string{`+I[0, "one"]`}) {
			t.Fatalf("first lookup: %q, %v", got, err)
		}
	}
	pgtest.Exec(t, `UPDATE k_cache SET v = 'uno' WHERE id = 1`, `INSERT INTO k_cache VALUES (3, 'three')`)
	before := pgtest.BatchedStatements(t, "k_cache")
	got, _, err := lookup(t, sc, intKey, keys)
	if err != nil || !reflect.DeepEqual(got, []string{`+I[0, "one"]`}) { // key 3 is a cached miss
		t.Errorf("cached: %q, %v", got, err)
	}
	if calls := pgtest.BatchedStatements(t, "k_cache") - before; calls != 0 {
		t.Errorf("cached keys ran %d statements", calls)
	}
	got, _, err = lookup(t, sn, intKey, keys)
	if err != nil || !reflect.DeepEqual(got, []string{`+I[0, "uno"]`, `+I[1, "three"]`}) {
		t.Errorf("no cache: %q, %v", got, err)
	}
	// a cached key and a new one: only the new one is fetched, in one statement
	before = pgtest.BatchedStatements(t, "k_cache")
	got, _, err = lookup(t, sc, intKey, [][]any{{int64(2)}, {int64(1)}})
	if err != nil || !reflect.DeepEqual(got, []string{`+I[0, "two"]`, `+I[1, "one"]`}) {
		t.Errorf("mixed: %q, %v", got, err)
	}
	if calls := pgtest.BatchedStatements(t, "k_cache") - before; calls != 1 {
		t.Errorf("mixed batch ran %d statements, want 1", calls)
	}
}

// TestErrors: every failure is an error of the right class with the pg package's message, and
// none contains the password.
func TestErrors(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE k_err (id int4, u uuid, v text)`, `INSERT INTO k_err VALUES (1, gen_random_uuid(), 'a')`)
	srv := pgtest.Server(t)
	ok := Params{Table: "k_err", Keys: []Column{{"id", "INT"}}, Fields: []Column{{"v", "STRING"}}}
	zero := 0
	noRetry := ok
	noRetry.MaxRetries = &zero
	var all []string
	connect := func(p Params, dsn, user, password string) error {
		s, err := session.Open(spec(t, p, 0), secrets(dsn, user, password), nil, host())
		if err != nil {
			all = append(all, err.Error())
			return err
		}
		s.Close()
		return nil
	}
	check := func(name string, err error, code error, frags ...string) {
		t.Helper()
		if !errors.Is(err, code) {
			t.Errorf("%s: %v, want %v", name, err, code)
			return
		}
		for _, f := range frags {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("%s: %q does not contain %q", name, err, f)
			}
		}
	}
	check("wrong password", connect(ok, dsn(t), srv.User, "not-"+srv.Password), engine.ErrExternal,
		"cannot connect to PostgreSQL", "password authentication failed", "28P01")
	check("server down", connect(ok, "host=127.0.0.1 port=1 dbname=x sslmode=disable connect_timeout=5", srv.User, srv.Password),
		engine.ErrExternal, "cannot connect to PostgreSQL", "127.0.0.1")
	check("bad dsn", connect(ok, "host=127.0.0.1 port=notaport", srv.User, srv.Password), engine.ErrInvalid, "bad connection string")
	missing := ok
	missing.Table = "k_nope"
	check("missing table", connect(missing, dsn(t), srv.User, srv.Password), engine.ErrExternal, `relation "k_nope" does not exist`, "42P01")
	col := ok
	col.Fields = []Column{{"nope", "STRING"}}
	check("missing column", connect(col, dsn(t), srv.User, srv.Password), engine.ErrExternal, `column "nope" does not exist`, "42703")
	unmapped := ok
	unmapped.Fields = []Column{{"u", "STRING"}}
	check("unmapped type", connect(unmapped, dsn(t), srv.User, srv.Password), engine.ErrExternal, "column u", "uuid")

	// refused at open: a type Ferry does not carry, a type the dialect refuses, bad params
	for _, c := range []struct {
		p    Params
		code error
		frag string
	}{
		{Params{Table: "k_err", Keys: ok.Keys, Fields: []Column{{"arr", "ARRAY<INT>"}}}, engine.ErrUnsupported, "params.fields[0].type: column arr: Ferry does not carry the Flink type ARRAY<INT>"},
		{Params{Table: "k_err", Keys: ok.Keys, Fields: []Column{{"x", "VARBINARY(10)"}}}, engine.ErrInvalid, "doesn't support type: VARBINARY(10)"},
		{Params{Table: "k_err", Keys: ok.Keys, Fields: ok.Fields, MaxRetries: func() *int { n := -1; return &n }()}, engine.ErrInvalid, "shouldn't be negative, but is -1."},
		{Params{Table: "k_err", Keys: ok.Keys, Fields: ok.Fields, Cache: &CacheParams{Mode: "PARTIAL"}}, engine.ErrInvalid, "Missing 'lookup.partial-cache.expire-after-access'"},
		{Params{Table: "k_err", Keys: ok.Keys, Fields: ok.Fields, Zone: "Mars/Base"}, engine.ErrInvalid, "params.zone"},
	} {
		sp := spec0(t, c.p)
		_, err := session.Open(sp, nil, nil, host())
		check(c.frag, err, c.code, c.frag)
	}
	// an input whose key column does not cross as the key's type
	sp, err := engine.ParseSpec([]byte(`{"kind":"jdbc_lookup","inputs":[{"fields":[{"name":"id","type":"BIGINT"}],"keys":[]}],"max_parallelism":1,
		"params":{"table":"k_err","keys":[{"name":"id","type":"INT"}],"fields":[{"name":"v","type":"STRING"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = session.Open(sp, nil, nil, host())
	check("input type", err, engine.ErrInvalid, "inputs[0].fields[0].type", "crosses as INT")

	// opened without secrets (a spec check): nothing connected; a NULL key
	checked, err := session.Open(spec(t, ok, 0), nil, nil, host())
	if err != nil {
		t.Fatal(err)
	}
	defer checked.Close()
	_, _, err = lookup(t, checked, intKey, [][]any{{int64(1)}})
	check("not connected", err, engine.ErrState, "opened without secrets (a spec check)")
	for _, bad := range []string{`{"dsn":"x","password":"` + srv.Password + `","role":"admin"}`, `{"dsn":` + srv.Password + `}`} {
		_, err = session.Open(spec(t, ok, 0), []byte(bad), nil, host())
		check("malformed secrets", err, engine.ErrInvalid, "secrets: not a JSON object of the fields jdbc_lookup takes")
		all = append(all, err.Error())
	}
	s := open(t, ok, 0)
	_, _, err = lookup(t, s, intKey, [][]any{{int64(1)}, {nil}})
	check("NULL key", err, engine.ErrData, "key row 1: key id is NULL")
	if got, _, err := lookup(t, s, intKey, [][]any{{int64(1)}}); err != nil || !reflect.DeepEqual(got, []string{`+I[0, "a"]`}) {
		t.Errorf("after the errors: %q, %v", got, err)
	}

	// the table disappears after connect: Flink's message after max_retries + 1 attempts, and
	// the operator stays usable once the table is back
	s2 := open(t, noRetry, 0)
	pgtest.Exec(t, `ALTER TABLE k_err RENAME TO k_err_gone`)
	_, _, err = lookup(t, s2, intKey, [][]any{{int64(1)}})
	pgtest.Exec(t, `ALTER TABLE k_err_gone RENAME TO k_err`)
	check("table gone", err, engine.ErrExternal, "Execution of JDBC statement failed. (after 1 attempts)", `relation "k_err" does not exist`)
	if err != nil {
		all = append(all, err.Error())
	}
	if got, _, err := lookup(t, s2, intKey, [][]any{{int64(1)}}); err != nil || len(got) != 1 {
		t.Errorf("after the table is back: %q, %v", got, err)
	}

	// the password is in no message, even when the server echoes what it was given
	for _, m := range all {
		if strings.Contains(m, srv.Password) {
			t.Errorf("the password leaks into %q", m)
		}
	}
	if len(all) < 7 {
		t.Errorf("only %d errors checked for the password", len(all))
	}
}

// TestRedact: a message that contains the password (whatever put it there) has it cut out.
func TestRedact(t *testing.T) {
	o := &Operator{secret: "s3cret"}
	if got := o.redact(errors.New("x s3cret y s3cret")); got != "x ***** y *****" {
		t.Errorf("redact: %q", got)
	}
	// a connection to nothing fails without the password
	_, err := session.Open(spec0(t, Params{Table: "t", Keys: []Column{{"id", "INT"}}, Fields: []Column{{"v", "STRING"}}}),
		secrets("host=127.0.0.1 port=1 dbname=x connect_timeout=2 sslmode=disable", "u", "s3cret"), nil, host())
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("connect to nothing: %v", err)
	}
}

// spec0 is spec for params whose keys cross as INT (validation errors come from Open).
func spec0(t *testing.T, p Params) *engine.Spec {
	t.Helper()
	params, _ := json.Marshal(p)
	s, err := engine.ParseSpec([]byte(fmt.Sprintf(`{"kind":%q,"inputs":[{"fields":[{"name":"id","type":"INT"}],"keys":[]}],"max_parallelism":1,"params":%s}`, Kind, params)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
