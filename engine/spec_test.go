package engine

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSpecHeader(t *testing.T) {
	s, err := ParseSpec([]byte(`{"kind":"k","name":"n","inputs":[{"fields":[{"name":"a","type":"BIGINT","nullable":false},` +
		`{"name":"b","type":"VARCHAR"}],"keys":[1]},{"fields":[]}],"max_parallelism":10,"key_group_end":4,"params":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if start, end := s.KeyGroupRange(); start != 0 || end != 4 {
		t.Fatalf("range [%d, %d]", start, end)
	}
	if s.ChunkRows != DefaultChunkRows || s.Label() != "n" || len(s.Inputs) != 2 {
		t.Fatalf("spec %+v", s)
	}
	in := s.Inputs[0]
	if in.Types[0].Nullable || in.Types[0].ID != BigInt || !in.Types[1].Nullable || in.Types[1].ID != Varchar {
		t.Fatalf("types %+v", in.Types)
	}
	if f := in.Named(); len(f) != 2 || f[1].Name != "b" || f[1].Type.ID != Varchar {
		t.Fatalf("Named %+v", f)
	}
	for _, c := range []struct{ json, want string }{
		{`{}`, "spec: kind: missing"},
		{`{"kind":"k","max_parallelism":1}`, "spec: inputs: missing"},
		{`{"kind":"k","inputs":[{"fields":[{"name":"a","type":"BIGNUM"}]}],"max_parallelism":1}`, "spec: inputs[0].fields[0].type"},
		{`{"kind":"k","inputs":[{"fields":[],"keys":[0]}],"max_parallelism":1}`, "spec: inputs[0].keys[0]: column 0 out of range"},
		{`{"kind":"k","inputs":[{"fields":[{"name":"v","type":"BINARY(0)"}],"keys":[0]}],"max_parallelism":1}`, "bad length"},
		{`{"kind":"k","inputs":[{"fields":[]}],"max_parallelism":0}`, "spec: max_parallelism"},
		{`{"kind":"k","inputs":[{"fields":[]}],"max_parallelism":8,"key_group_start":5,"key_group_end":4}`, "key_group_start/key_group_end"},
		{`{"kind":"k","inputs":[{"fields":[]}],"max_parallelism":8,"chunk_rows":-1}`, "spec: chunk_rows"},
		{`{"kind":"k","inputs":[{"fields":[]}],"max_parallelism":8,"aggs":[]}`, `unknown field "aggs"`},
		{`{"kind":"k","inputs":[{"fields":[]}],"max_parallelism":8} {}`, "trailing data"},
	} {
		_, err := ParseSpec([]byte(c.json))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", c.json, err, c.want)
		}
	}
}

func TestDecodeParams(t *testing.T) {
	type params struct {
		Count int      `json:"count"`
		Names []string `json:"names"`
	}
	parse := func(p string) *Spec {
		s, err := ParseSpec([]byte(`{"kind":"k","inputs":[{"fields":[]}],"max_parallelism":8` + p + `}`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var p params
	if err := parse(`,"params":{"count":3,"names":["a"]}`).DecodeParams(&p); err != nil || p.Count != 3 || p.Names[0] != "a" {
		t.Fatalf("%+v %v", p, err)
	}
	if err := parse(``).DecodeParams(&p); err != nil {
		t.Fatalf("absent params: %v", err)
	}
	for raw, want := range map[string]string{
		`,"params":{"count":1,"extra":2}`: "spec: params.extra: unknown field",
		`,"params":{"count":"x"}`:         "spec: params.count: cannot take a JSON string",
		`,"params":{"names":[1]}`:         "spec: params.names",
		`,"params":[]`:                    "spec: params:",
	} {
		err := parse(raw).DecodeParams(&p)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", raw, err, want)
		}
	}
}

func TestRegistry(t *testing.T) {
	Register("test_registry", func(s *Spec) (Operator, error) { return nil, SpecError("params.x", "bad") })
	if !strings.Contains(strings.Join(Kinds(), ","), "test_registry") {
		t.Fatalf("Kinds %v", Kinds())
	}
	s, _ := ParseSpec([]byte(`{"kind":"test_registry","name":"op","inputs":[{"fields":[]}],"max_parallelism":8}`))
	if _, err := Open(s); !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "op: ") {
		t.Fatalf("Open: %v", err)
	}
	s.Kind = "interval_join_v9"
	if _, err := Open(s); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `kind: "interval_join_v9" is not a native operator`) {
		t.Fatalf("unknown kind: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a kind twice must panic")
		}
	}()
	Register("test_registry", nil)
}
