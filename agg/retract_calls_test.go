package agg

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
)

// The retracting FIRST_VALUE/LAST_VALUE and LISTAGG run natively, except FIRST_VALUE/LAST_VALUE
// under idle-state TTL and LISTAGG in two phases, each refused with its reason.
func TestRetractingValueFunctionsSupport(t *testing.T) {
	yes := true
	input := []engine.FieldSpec{{Name: "k", Type: "BIGINT", Nullable: &yes}, {Name: "v", Type: "VARCHAR", Nullable: &yes},
		{Name: "d", Type: "VARCHAR", Nullable: &yes}}
	open := func(call AggCall, ttl int64) error {
		_, err := NewGroupAggregate(mustParse(&testSpec{Kind: "group_aggregate", Input: input, Keys: []int{0},
			Aggs: []AggCall{call}, NeedRetraction: true, StateTTLMs: ttl, MaxParallelism: 128}))
		return err
	}
	for _, c := range []AggCall{{Func: "FIRST_VALUE", Args: []int{1}}, {Func: "LAST_VALUE", Args: []int{1}},
		{Func: "LISTAGG", Args: []int{1}}, {Func: "LISTAGG", Args: []int{1, 2}}} {
		c.Retract = true
		if err := open(c, 0); err != nil {
			t.Errorf("%s: %v", c.Func, err)
		}
		err := open(c, 1000)
		if c.Func == "LISTAGG" {
			if err != nil {
				t.Errorf("%s under TTL: %v", c.Func, err)
			}
			perr := PartialSupport(c, engine.Type{ID: engine.Varchar})
			if !errors.Is(perr, engine.ErrUnsupported) || !strings.Contains(perr.Error(), "LISTAGG with retraction in two phases") {
				t.Errorf("LISTAGG with retraction in two phases: %v", perr)
			}
			continue
		}
		if !errors.Is(err, engine.ErrUnsupported) || !strings.Contains(err.Error(), "idle-state TTL with "+c.Func+" with retraction") {
			t.Errorf("%s under TTL: %v", c.Func, err)
		}
	}
}
