package agg

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// testSpec is the flat shape the tests write group-aggregate specs in; parseTestSpec renders it
// as the spec JSON a host sends (header and params) and parses it as the library does.
type testSpec struct {
	Kind                 string
	Name                 string
	Input                []engine.FieldSpec
	Keys                 []int
	Aggs                 []AggCall
	NeedRetraction       bool
	GenerateUpdateBefore bool
	StateTTLMs           int64
	MiniBatch            bool
	MaxParallelism       int
	KeyGroupStart        *int
	KeyGroupEnd          *int
}

// json renders s as spec JSON.
func (s *testSpec) json() []byte {
	kind := s.Kind
	if kind == "" {
		kind = Kind
	}
	input := s.Input
	if input == nil {
		input = []engine.FieldSpec{}
	}
	return jsonMarshal(&engine.Spec{
		Kind: kind, Name: s.Name, MaxParallelism: s.MaxParallelism, KeyGroupStart: s.KeyGroupStart, KeyGroupEnd: s.KeyGroupEnd,
		Inputs: []engine.Input{{Fields: input, Keys: s.Keys}},
		Params: jsonMarshal(&Params{Aggs: s.Aggs, NeedRetraction: s.NeedRetraction, GenerateUpdateBefore: s.GenerateUpdateBefore,
			StateTTLMs: s.StateTTLMs, MiniBatch: s.MiniBatch}),
	})
}

func parseTestSpec(s *testSpec) (*Spec, error) {
	h, err := engine.ParseSpec(s.json())
	if err != nil {
		return nil, err
	}
	return ParseSpec(h)
}

func mustParse(s *testSpec) *Spec {
	p, err := parseTestSpec(s)
	if err != nil {
		panic(err)
	}
	return p
}

func TestParseSpecParams(t *testing.T) {
	base := func() testSpec {
		f := false
		return testSpec{MaxParallelism: 128, Keys: []int{0},
			Input: []engine.FieldSpec{{Name: "k", Type: "BIGINT"}, {Name: "v", Type: "VARCHAR"}, {Name: "b", Type: "BOOLEAN"},
				{Name: "j", Type: "BOOLEAN", Nullable: &f}}}
	}
	ok := base()
	ok.Aggs = []AggCall{{Func: "MAX", Args: []int{1}, JavaStrings: new(3), Filter: new(2)}}
	ok.MiniBatch = true
	spec, err := parseTestSpec(&ok)
	if err != nil {
		t.Fatal(err)
	}
	op, err := enginetest.Open(spec.Spec)
	if _, mini := op.(*MiniBatchGroupAggregate); err != nil || !mini {
		t.Fatalf("mini_batch opens %T (%v)", op, err)
	}
	plain := ok
	plain.MiniBatch = false
	if op, err := enginetest.Open(mustParse(&plain).Spec); err != nil {
		t.Fatal(err)
	} else if _, isPlain := op.(*GroupAggregate); !isPlain {
		t.Fatalf("opens %T", op)
	} else if op.State().Fingerprint() != mustParseOpen(t, &ok).State().Fingerprint() {
		t.Fatal("mini_batch must not change the fingerprint: it does not shape state")
	}
	for _, c := range []struct {
		edit func(*testSpec)
		want string
	}{
		{func(s *testSpec) { s.Aggs = []AggCall{{Func: "SUM", Args: []int{7}}} }, "spec: params.aggs[0].args[0]: column 7 out of range (input has 4 columns)"},
		{func(s *testSpec) { s.Aggs = []AggCall{{Func: "COUNT", Filter: new(1)}} }, "spec: params.aggs[0].filter: column 1 is VARCHAR, not BOOLEAN"},
		{func(s *testSpec) { s.Aggs = []AggCall{{Func: "COUNT", Filter: new(9)}} }, "spec: params.aggs[0].filter: column 9 out of range"},
		{func(s *testSpec) { s.Aggs = []AggCall{{Func: "MAX", Args: []int{1}, JavaStrings: new(2)}} }, "spec: params.aggs[0].java_strings: column 2 is BOOLEAN, not BOOLEAN NOT NULL"},
		{func(s *testSpec) { s.Aggs = []AggCall{{Func: "MAX", Args: []int{0}, JavaStrings: new(3)}} }, "spec: params.aggs[0].java_strings: only MIN and MAX over VARCHAR"},
		{func(s *testSpec) { s.StateTTLMs = -1 }, "spec: params.state_ttl_ms: negative (-1)"},
	} {
		s := base()
		c.edit(&s)
		_, err := parseTestSpec(&s)
		if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want ErrInvalid %q", err, c.want)
		}
	}
	two, _ := engine.ParseSpec([]byte(`{"kind":"group_aggregate","inputs":[{"fields":[]},{"fields":[]}],"max_parallelism":8}`))
	if _, err := ParseSpec(two); !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "spec: inputs: a group aggregate has 1 input, not 2") {
		t.Errorf("two inputs: %v", err)
	}
	unknown, _ := engine.ParseSpec([]byte(`{"kind":"group_aggregate","inputs":[{"fields":[]}],"max_parallelism":8,"params":{"aggs":[],"having":1}}`))
	if _, err := ParseSpec(unknown); !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "spec: params.having: unknown field") {
		t.Errorf("unknown param: %v", err)
	}
}

func mustParseOpen(t *testing.T, s *testSpec) engine.KeyedOperator {
	t.Helper()
	op, err := enginetest.Open(mustParse(s).Spec)
	if err != nil {
		t.Fatal(err)
	}
	return op
}
