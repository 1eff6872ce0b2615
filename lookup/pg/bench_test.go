package pg

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ferrystream/ferry/internal/pgtest"
)

// BenchmarkLookup: probe keys per second on loopback, 10 K dimension rows with a primary key,
// batches of 1024 distinct keys: lookup/pg's one statement per batch against one statement per
// key on one connection with a prepared statement (what Flink's JDBC lookup does per probe row).
func BenchmarkLookup(b *testing.B) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pgtest.Server(b).DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(ctx)
	for _, s := range []string{`DROP TABLE IF EXISTS lk_bench`,
		`CREATE TABLE lk_bench (id int8 PRIMARY KEY, name text, price numeric(10,2), ts timestamp(3))`,
		`INSERT INTO lk_bench SELECT g, 'name-' || g, g / 100.0, '2024-01-01'::timestamp + g * interval '1 s' FROM generate_series(1, 10000) g`,
		`ANALYZE lk_bench`} {
		if _, err := c.Exec(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
	const batch = 1024
	keys := make([][]any, batch)
	for i := range keys {
		keys[i] = []any{int64(i*9 + 1)}
	}
	b.Run("batched", func(b *testing.B) {
		l, err := Open(ctx, pgtest.Server(b).DSN(), Config{Table: "lk_bench",
			Keys:   []Column{{"id", Type{Kind: BigInt}}},
			Fields: []Column{{"id", Type{Kind: BigInt}}, {"name", Type{Kind: Varchar}}, {"price", Type{Kind: Decimal, Precision: 10, Scale: 2}}, {"ts", Type{Kind: Timestamp, Precision: 3}}}})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		b.ResetTimer()
		for b.Loop() {
			if _, err := l.Lookup(ctx, keys); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "keys/s")
	})
	b.Run("per-key", func(b *testing.B) {
		sql := "SELECT id, name, price, ts FROM lk_bench WHERE id = $1::int8"
		if _, err := c.Prepare(ctx, "per_key", sql); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			for _, k := range keys {
				rows, err := c.Query(ctx, "per_key", k[0])
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				if rows.Err() != nil || n != 1 {
					b.Fatal(fmt.Sprint(rows.Err(), n))
				}
			}
		}
		b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "keys/s")
	})
}
