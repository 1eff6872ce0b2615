package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// TestQueue appends random batches (offsets, NULLs, every layout), consumes, truncates and
// compacts at random: every window shows exactly the rows a plain slice model holds.
func TestQueue(t *testing.T) {
	types := []engine.Type{{ID: engine.Boolean, Nullable: true}, {ID: engine.BigInt}, {ID: engine.Varchar, Nullable: true},
		{ID: engine.Decimal, Precision: 30, Scale: 2, Nullable: true}, {ID: engine.SmallInt, Nullable: true}}
	r := rand.New(rand.NewPCG(1, 2))
	value := func(c int, i int) any {
		if c != 1 && r.IntN(4) == 0 {
			return nil
		}
		switch c {
		case 0:
			return r.IntN(2) == 0
		case 1:
			return int64(i)
		case 2:
			return fmt.Sprint("s", r.IntN(1000))
		case 3:
			return nil
		}
		return int64(r.IntN(100))
	}
	q := engine.NewQueue(types)
	var model []string
	next := 0
	var w engine.Batch
	for step := range 400 {
		switch op := r.IntN(5); {
		case op <= 1:
			n := r.IntN(70)
			rows := make([][]any, n)
			for i := range rows {
				for c := range types {
					rows[i] = append(rows[i], value(c, next))
				}
				next++
			}
			b := enginetest.Batch(types, rows, make([]engine.RowKind, n), enginetest.Options{Offset: r.IntN(9), Garbage: r})
			stored := q.Stored()
			q.Append(b)
			if r.IntN(5) == 0 {
				q.Truncate(stored)
				break
			}
			for i := range rows {
				model = append(model, fmt.Sprint(rows[i]...))
			}
		case op == 2 && len(model) > 0:
			n := r.IntN(len(model) + 1)
			q.Consume(n)
			model = model[n:]
		case op == 3:
			q.Compact()
		}
		if q.Len() != len(model) {
			t.Fatalf("step %d: %d rows queued, want %d", step, q.Len(), len(model))
		}
		q.Window(len(model), &w)
		for i, m := range model {
			var vals []any
			for c := range w.Cols {
				col := &w.Cols[c]
				switch {
				case col.IsNull(i):
					vals = append(vals, nil)
				case c == 0:
					vals = append(vals, col.Bool(i))
				case c == 1:
					vals = append(vals, engine.Values[int64](col, w.Len)[i])
				case c == 2:
					vals = append(vals, string(col.Bytes(i)))
				case c == 4:
					vals = append(vals, int64(engine.Values[int16](col, w.Len)[i]))
				default:
					t.Fatalf("step %d row %d column %d: not NULL", step, i, c)
				}
			}
			if got := fmt.Sprint(vals...); got != m {
				t.Fatalf("step %d row %d: %s, want %s", step, i, got, m)
			}
		}
	}
}
