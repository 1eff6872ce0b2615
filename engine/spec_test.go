package engine

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
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
	type params struct {
		X int `json:"x"`
	}
	type secrets struct {
		Password string `json:"password"`
	}
	RegisterKeyed("test_registry", func(s *Spec, p *params) (Keyed, error) { return Keyed{}, SpecError("params.x", "bad %d", p.X) })
	RegisterFunction("test_registry_fn", func(s *Spec, p *params, sc *secrets) (Function, error) {
		if sc == nil {
			return nil, SpecError("params.x", "no secrets")
		}
		return nil, fmt.Errorf("%w: connected", ErrExternal)
	})
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	if !slices.Contains(names, "test_registry") || !slices.Contains(names, "test_registry_fn") || !slices.IsSorted(names) {
		t.Fatalf("Kinds %v", names)
	}
	s, _ := ParseSpec([]byte(`{"kind":"test_registry","name":"op","inputs":[{"fields":[]}],"max_parallelism":8,"params":{"x":7}}`))
	k, err := KindOf(s)
	if err != nil || k.Shape != ShapeKeyed || k.Params != reflect.TypeFor[params]() {
		t.Fatalf("KindOf: %+v %v", k, err)
	}
	if _, err := k.OpenKeyed(s); !errors.Is(err, ErrInvalid) || err.Error() != "op: invalid argument: spec: params.x: bad 7" {
		t.Fatalf("OpenKeyed: %v", err)
	}
	if _, err := k.OpenFunction(s, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is a keyed operator, not a function") {
		t.Fatalf("OpenFunction of a keyed kind: %v", err)
	}
	s.Params = []byte(`{"x":1,"y":2}`)
	if _, err := k.OpenKeyed(s); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "spec: params.y: unknown field") {
		t.Fatalf("strict params: %v", err)
	}
	s.Kind = "test_registry_fn"
	fk, _ := KindOf(s)
	s.Params = nil
	if _, err := fk.OpenFunction(s, nil); !strings.Contains(fmt.Sprint(err), "no secrets") {
		t.Fatalf("a spec check gets nil secrets: %v", err)
	}
	if _, err := fk.OpenFunction(s, []byte(`{"password":"hunter2"}`)); !errors.Is(err, ErrExternal) {
		t.Fatalf("secrets: %v", err)
	}
	for _, bad := range []string{`{"password":"hunter2","user":"x"}`, `{"password":hunter2}`, `[]`} {
		if _, err := fk.OpenFunction(s, []byte(bad)); !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "secrets: not a JSON object of the fields test_registry_fn takes") {
			t.Fatalf("secrets %s: %v", bad, err)
		}
	}
	s.Kind = "interval_join_v9"
	if _, err := KindOf(s); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `kind: "interval_join_v9" is not a native operator`) {
		t.Fatalf("unknown kind: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a kind twice must panic")
		}
	}()
	RegisterKeyed[params]("test_registry", nil)
}

func TestInputsEach(t *testing.T) {
	b := &Batch{Len: 5, Cols: []Column{{Type: Type{ID: BigInt}, Data: make([]byte, 40)}}, Kinds: []RowKind{0, 3, 0, 0, 1}, Retracts: true}
	for i := range 5 {
		b.Cols[0].Data[8*i] = byte(10 + i)
	}
	in := &Inputs{Batches: []*Batch{b, nil}, Runs: []Run{{0, 2}, {0, 1}, {0, 2}}}
	var got []string
	err := in.Each(func(input int, v *Batch) error {
		var vals []int64
		for i := range v.Len {
			vals = append(vals, Values[int64](&v.Cols[0], v.Len)[i])
		}
		got = append(got, fmt.Sprint(input, vals, v.Kinds, v.Retracts))
		return nil
	})
	want := []string{"0 [10 11] [0 3] true", "0 [12] [0] false", "0 [13 14] [0 1] true"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Each: %v %v, want %v", got, err, want)
	}
	if err := CheckRuns(in.Runs, []int{5, 0}); err != nil {
		t.Fatal(err)
	}
	if err := CheckRuns([]Run{{1, 1}}, []int{0, 0}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a run beyond its input's rows: %v", err)
	}
}
