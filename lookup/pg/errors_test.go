package pg

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferrystream/ferry/internal/pgtest"
)

// TestErrors: each failure is an error naming what is wrong, never a panic.
func TestErrors(t *testing.T) {
	pgtest.Exec(t, `CREATE TABLE lk_err (k int4, u uuid, j jsonb, b int8, s text)`, `INSERT INTO lk_err VALUES (1, gen_random_uuid(), '{}', 1, 'a')`)
	srv := pgtest.Server(t)
	ctx := context.Background()
	base := Config{Table: "lk_err", Keys: cols(t, "k INT"), Fields: cols(t, "s STRING")}
	with := func(f func(*Config)) Config { c := base; f(&c); return c }
	cases := []struct {
		name string
		dsn  string
		cfg  Config
		want []string
	}{
		{"server down", "postgres://ferry:x@127.0.0.1:1/ferry?sslmode=disable&connect_timeout=5", base,
			[]string{"cannot connect to PostgreSQL", "127.0.0.1:1", "connection refused"}},
		{"wrong password", srv.DSNWith(srv.User, "wrong"), base,
			[]string{"cannot connect to PostgreSQL", `password authentication failed for user "ferry"`, "28P01"}},
		{"missing table", srv.DSN(), with(func(c *Config) { c.Table = "lk_nope" }),
			[]string{"table lk_nope", `relation "lk_nope" does not exist`, "42P01"}},
		{"missing column", srv.DSN(), with(func(c *Config) { c.Fields = cols(t, "nope STRING") }),
			[]string{`column "nope" does not exist`, "42703"}},
		{"missing key column", srv.DSN(), with(func(c *Config) { c.Keys = cols(t, "nope INT") }),
			[]string{`column "nope" does not exist`}},
		{"STRING key on an int column", srv.DSN(), with(func(c *Config) { c.Keys = cols(t, "k STRING") }),
			[]string{"operator does not exist: integer = character varying", "42883"}},
		{"uuid as STRING", srv.DSN(), with(func(c *Config) { c.Fields = cols(t, "u STRING") }),
			[]string{"column u", "PostgreSQL type uuid does not map to Flink type STRING"}},
		{"jsonb as STRING", srv.DSN(), with(func(c *Config) { c.Fields = cols(t, "j STRING") }),
			[]string{"column j", "jsonb does not map"}},
		{"int8 as INT", srv.DSN(), with(func(c *Config) { c.Fields = cols(t, "b INT") }),
			[]string{"column b", "int8 does not map to Flink type INT"}},
		{"DATE key on text", srv.DSN(), with(func(c *Config) { c.Keys = cols(t, "s DATE") }),
			[]string{"key s", "DATE key on a PostgreSQL text column is not supported"}},
		{"negative retries", srv.DSN(), with(func(c *Config) { c.MaxRetries = -1 }),
			[]string{"The value of 'lookup.max-retries' option shouldn't be negative, but is -1."}},
	}
	for _, c := range cases {
		l, err := Open(ctx, c.dsn, c.cfg)
		if err == nil {
			l.Close()
			t.Errorf("%s: Open succeeded", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
	for _, s := range []string{"VARBINARY(10)", "TIMESTAMP(9)", "TIMESTAMP_LTZ(3)", "MAP<INT, INT>"} {
		if _, err := ParseType(s); err == nil {
			t.Errorf("ParseType(%s) accepted a type the PostgreSQL dialect rejects", s)
		}
	}

	l := open(t, base)
	for _, c := range []struct {
		key  []any
		want string
	}{
		{[]any{nil}, "key k is NULL"},
		{[]any{int64(1)}, "got a Go int64, want int32"},
		{[]any{int32(1), int32(2)}, "has 2 values, want 1"},
	} {
		_, err := l.Lookup(ctx, [][]any{{int32(1)}, c.key})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("key %v: %v, want %q", c.key, err, c.want)
		}
	}
}

// TestRetries: Flink's lookup.max-retries: a failed statement is retried after 0 s, 1 s, …;
// a broken connection is replaced; after the last attempt the error is Flink's "Execution of
// JDBC statement failed." with the database's cause; a deterministic SQL error is retried too.
func TestRetries(t *testing.T) {
	srv := pgtest.Server(t)
	pgtest.Exec(t, `CREATE TABLE lk_retry (k int4, v text)`, `INSERT INTO lk_retry VALUES (1, 'one')`)
	ctx := context.Background()
	var mu sync.Mutex
	var slept []time.Duration
	record := func(resume bool) func(context.Context, time.Duration) error {
		return func(_ context.Context, d time.Duration) error {
			mu.Lock()
			slept = append(slept, d)
			mu.Unlock()
			if resume && len(slept) == 2 {
				if err := srv.Resume(); err != nil {
					t.Error(err)
				}
			}
			return nil
		}
	}
	cfg := Config{Table: "lk_retry", Keys: cols(t, "k INT"), Fields: cols(t, "v STRING"), MaxRetries: 3, Sleep: record(true)}
	l := open(t, cfg)
	lookup(t, l, []any{int32(1)}) // a pooled connection exists

	// a dropped connection: the first attempt fails, the retry gets a new connection
	pgtest.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND usename = current_user`)
	got := lookup(t, l, []any{int32(1)})
	if !reflect.DeepEqual(got, [][]Row{{{"one"}}}) || !reflect.DeepEqual(slept, []time.Duration{0}) {
		t.Fatalf("after a dropped connection: %v, slept %v", got, slept)
	}

	// the server goes down and comes back during the second sleep: the third attempt succeeds
	slept = nil
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	got, err := l.Lookup(ctx, [][]any{{int32(1)}})
	if err != nil || !reflect.DeepEqual(got, [][]Row{{{"one"}}}) {
		t.Fatalf("after a restart: %v %v", got, err)
	}
	if !reflect.DeepEqual(slept, []time.Duration{0, time.Second}) {
		t.Errorf("slept %v, want [0s 1s]", slept)
	}

	// down for good: max-retries + 1 attempts, then Flink's error with the cause
	slept = nil
	cfg.Sleep = record(false)
	l2 := open(t, cfg)
	if err := srv.Halt(); err != nil {
		t.Fatal(err)
	}
	_, err = l2.Lookup(ctx, [][]any{{int32(1)}})
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	var le *Error
	if !errors.As(err, &le) || le.Attempts != 4 || !strings.Contains(err.Error(), "Execution of JDBC statement failed.") {
		t.Fatalf("down: %v", err)
	}
	if !reflect.DeepEqual(slept, []time.Duration{0, time.Second, 2 * time.Second}) {
		t.Errorf("slept %v, want [0s 1s 2s]", slept)
	}

	// a table dropped after Open: retried (Flink retries every SQLException), then the cause
	slept = nil
	pgtest.Exec(t, `CREATE TABLE lk_gone (k int4, v text)`)
	cfg.Table = "lk_gone"
	cfg.MaxRetries = 1
	l3 := open(t, cfg)
	pgtest.Exec(t, `DROP TABLE lk_gone`)
	_, err = l3.Lookup(ctx, [][]any{{int32(1)}})
	if !errors.As(err, &le) || le.Attempts != 2 || !strings.Contains(err.Error(), `relation "lk_gone" does not exist`) {
		t.Errorf("dropped table: %v", err)
	}

	// the per-attempt deadline: a slow statement times out and is retried
	slept = nil
	pgtest.Exec(t, `CREATE TABLE lk_slow (k int4, v text)`, `INSERT INTO lk_slow VALUES (1, 'x')`)
	c, err := pgx.Connect(ctx, srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	cfg = Config{Table: "lk_slow", Keys: cols(t, "k INT"), Fields: cols(t, "v STRING"), MaxRetries: 1,
		QueryTimeout: 200 * time.Millisecond, Sleep: record(false)}
	l4 := open(t, cfg)
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE lk_slow IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = l4.Lookup(ctx, [][]any{{int32(1)}})
	tx.Rollback(ctx)
	if !errors.As(err, &le) || le.Attempts != 2 || time.Since(start) > 5*time.Second {
		t.Errorf("deadline: %v after %v", err, time.Since(start))
	}
}
