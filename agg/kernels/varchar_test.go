package kernels

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// TestVarcharArenaCompaction folds MIN/MAX over long, mostly increasing strings into 5 groups,
// 100 rows per call, so replaced and retracted values turn most of each arena into garbage:
// compaction between calls keeps every arena proportional to the strings still live. (agg's
// TestVarcharHeapCompaction runs the same stream through the operator against the reference
// model.)
func TestVarcharArenaCompaction(t *testing.T) {
	types := []engine.Type{{ID: engine.Varchar, Nullable: true}}
	for _, retract := range []bool{false, true} {
		var accs []Accumulator
		for _, c := range []Call{{Func: "MAX", Args: []int{0}, Retract: retract}, {Func: "MIN", Args: []int{0}, Retract: retract},
			{Func: "MAX", Args: []int{0}}} {
			c.JavaStrings, c.NeedRetraction = -1, retract
			acc, _, err := New("aggs[0]", c, types)
			if err != nil {
				t.Fatal(err)
			}
			acc.Grow(5)
			accs = append(accs, acc)
		}
		r := rand.New(rand.NewPCG(4, 4))
		type row struct {
			g int32
			v string
		}
		var rows []row
		var acts []int8
		var sent []row
		for i := range 6000 {
			x := row{int32(r.IntN(5)), fmt.Sprintf("%08d", i) + strings.Repeat("x", 100+r.IntN(1500))}
			act := int8(1)
			if retract && r.IntN(3) == 0 && len(sent) > 0 {
				j := r.IntN(len(sent))
				x, act = sent[j], -1
				sent = append(sent[:j], sent[j+1:]...)
			} else {
				sent = append(sent, x)
			}
			rows, acts = append(rows, x), append(acts, act)
		}
		for pos := 0; pos < len(rows); pos += 100 {
			end := min(pos+100, len(rows))
			vals := make([][]any, end-pos)
			gids := make([]int32, end-pos)
			for i, x := range rows[pos:end] {
				vals[i], gids[i] = []any{x.v}, x.g
			}
			b := enginetest.Batch(types, vals, make([]engine.RowKind, len(vals)), enginetest.Options{})
			for _, acc := range accs {
				acc.Fold(b, gids, acts[pos:end], make([]bool, len(vals)))
			}
		}
		for _, c := range accs {
			var arena *values.Arena
			switch a := c.(type) {
			case *strMinMaxAcc:
				arena = a.ops.Arena()
			case *strMinMaxRetractAcc: // extremes and multiset keys share one arena
				arena = a.ops.Arena()
			default:
				t.Fatalf("%T is no VARCHAR kernel", c)
			}
			if n, live := arena.Len(), arena.Len()-arena.Garbage(); n > 1<<20 && n > 2*live+400_000 {
				t.Errorf("retract=%v: arena of %d bytes holds %d live", retract, n, live)
			}
		}
	}
}
