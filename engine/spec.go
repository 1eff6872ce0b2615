package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
)

// Spec is the common header of every operator spec (docs/abi.md): what every kind needs (its
// inputs, the subtask's key groups, the output chunk size). Params holds the kind's own
// parameters, which the kind's package decodes with DecodeParams and validates itself. The host
// builds a spec from Flink's plan; ParseSpec validates the header.
type Spec struct {
	Kind           string  `json:"kind"`
	Name           string  `json:"name,omitempty"`
	Inputs         []Input `json:"inputs"`
	MaxParallelism int     `json:"max_parallelism"`
	KeyGroupStart  *int    `json:"key_group_start,omitempty"`
	KeyGroupEnd    *int    `json:"key_group_end,omitempty"`
	// ChunkRows bounds the rows of one output chunk of an operator whose output is not bounded
	// by a small multiple of its input (DefaultChunkRows when absent).
	ChunkRows int `json:"chunk_rows,omitempty"`
	// Params are the kind's own parameters, decoded by its package (DecodeParams).
	Params json.RawMessage `json:"params,omitempty"`
	// Test holds test-only fault injections; only a library built with the ferrytest tag
	// accepts them (capi).
	Test json.RawMessage `json:"test,omitempty"`
}

// Input is one input of an operator: its row type and the key columns its state is keyed by.
type Input struct {
	Fields []FieldSpec `json:"fields"`
	// Keys are the field indices of the key (Flink's key selector), in key order; empty for a
	// global aggregate or a stateless operator.
	Keys []int `json:"keys"`
	// Types holds the parsed types of Fields.
	Types []Type `json:"-"`
}

// FieldSpec is one input field.
type FieldSpec struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable *bool  `json:"nullable,omitempty"`
}

// Field is a named, typed column.
type Field struct {
	Name string
	Type Type
}

// Named returns the input's fields with their parsed types.
func (in *Input) Named() []Field {
	fs := make([]Field, len(in.Fields))
	for i, f := range in.Fields {
		fs[i] = Field{Name: f.Name, Type: in.Types[i]}
	}
	return fs
}

// DefaultChunkRows is the chunk size of a spec without chunk_rows.
const DefaultChunkRows = 4096

// maxChunkRows bounds chunk_rows.
const maxChunkRows = 1 << 24

// SpecError is an error about the spec field field (e.g. "inputs[0].keys[1]"); it wraps
// ErrInvalid and reads "spec: <field>: <detail>".
func SpecError(field, format string, args ...any) error {
	return fmt.Errorf("%w: spec: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

// ParamError is SpecError for field of the kind's parameters: "spec: params.<field>: <detail>".
func ParamError(field, format string, args ...any) error {
	return SpecError("params."+field, format, args...)
}

// ParseSpec decodes a spec and validates its header. Unknown fields are rejected. Errors wrap
// ErrInvalid and name the offending field.
func ParseSpec(data []byte) (*Spec, error) {
	var s Spec
	if err := StrictDecode(data, &s); err != nil {
		return nil, fmt.Errorf("%w: spec: %v", ErrInvalid, err)
	}
	if s.Kind == "" {
		return nil, SpecError("kind", "missing")
	}
	if len(s.Inputs) == 0 {
		return nil, SpecError("inputs", "missing: an operator has at least one input")
	}
	for i := range s.Inputs {
		in := &s.Inputs[i]
		in.Types = make([]Type, len(in.Fields))
		for j, f := range in.Fields {
			t, err := ParseType(f.Type)
			if err != nil {
				return nil, SpecError(fmt.Sprintf("inputs[%d].fields[%d].type", i, j), "%v", err)
			}
			if f.Nullable != nil {
				t.Nullable = *f.Nullable
			}
			in.Types[j] = t
		}
		for j, k := range in.Keys {
			if k < 0 || k >= len(in.Fields) {
				return nil, SpecError(fmt.Sprintf("inputs[%d].keys[%d]", i, j), "column %d out of range (input has %d columns)", k, len(in.Fields))
			}
		}
	}
	if s.MaxParallelism < 1 || s.MaxParallelism > 1<<15 {
		return nil, SpecError("max_parallelism", "%d outside [1, 32768]", s.MaxParallelism)
	}
	start, end := 0, s.MaxParallelism-1
	if s.KeyGroupStart != nil {
		start = *s.KeyGroupStart
	}
	if s.KeyGroupEnd != nil {
		end = *s.KeyGroupEnd
	}
	if start < 0 || end >= s.MaxParallelism || start > end {
		return nil, SpecError("key_group_start/key_group_end", "range [%d, %d] invalid for max parallelism %d", start, end, s.MaxParallelism)
	}
	s.KeyGroupStart, s.KeyGroupEnd = &start, &end
	switch {
	case s.ChunkRows == 0:
		s.ChunkRows = DefaultChunkRows
	case s.ChunkRows < 0 || s.ChunkRows > maxChunkRows:
		return nil, SpecError("chunk_rows", "%d outside [1, %d]", s.ChunkRows, maxChunkRows)
	}
	return &s, nil
}

// DecodeParams decodes the kind's parameters into v (a pointer to the kind's params struct),
// rejecting unknown fields. Absent params decode as {}. Errors wrap ErrInvalid and read
// "spec: params.<field>: ...".
func (s *Spec) DecodeParams(v any) error {
	data := []byte(s.Params)
	if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		data = []byte("{}")
	}
	err := StrictDecode(data, v)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return ParamError(typeErr.Field, "cannot take a JSON %s (want %s)", typeErr.Value, typeErr.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return ParamError(field, "unknown field")
	}
	return SpecError("params", "%v", err)
}

// StrictDecode decodes one JSON value into v, rejecting unknown fields and trailing data.
func StrictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// Fingerprint identifies the state layout of an operator of this spec with the kind's state
// layout (the part of its params that shapes state, e.g. an aggregate's calls but not when it
// emits): the header without the name, the subtask's key-group range and the chunk size, which
// may change across restarts and rescaling without touching state.
func (s *Spec) Fingerprint(layout any) uint64 {
	type inputShape struct {
		Fields []FieldSpec `json:"fields"`
		Keys   []int       `json:"keys"`
	}
	shape := struct {
		Kind           string       `json:"kind"`
		Inputs         []inputShape `json:"inputs"`
		MaxParallelism int          `json:"max_parallelism"`
		Layout         any          `json:"layout"`
	}{Kind: s.Kind, MaxParallelism: s.MaxParallelism, Layout: layout}
	for _, in := range s.Inputs {
		shape.Inputs = append(shape.Inputs, inputShape{Fields: in.Fields, Keys: in.Keys})
	}
	data, err := json.Marshal(&shape)
	if err != nil {
		panic(fmt.Sprintf("engine: state layout of %s does not marshal: %v", s.Kind, err))
	}
	h := fnv.New64a()
	h.Write(data)
	return h.Sum64()
}

// KeyGroupRange returns the validated inclusive key-group range.
func (s *Spec) KeyGroupRange() (start, end int) { return *s.KeyGroupStart, *s.KeyGroupEnd }

// Label names the operator in messages.
func (s *Spec) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Kind
}
