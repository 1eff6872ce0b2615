package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
)

// Spec describes one operator instance (docs/abi.md). The host builds it from Flink's plan;
// ParseSpec validates everything that does not depend on the operator kind.
type Spec struct {
	Kind                 string      `json:"kind"`
	Name                 string      `json:"name,omitempty"`
	Input                []FieldSpec `json:"input"`
	Keys                 []int       `json:"keys"`
	Aggs                 []AggCall   `json:"aggs,omitempty"`
	NeedRetraction       bool        `json:"need_retraction,omitempty"`
	GenerateUpdateBefore bool        `json:"generate_update_before,omitempty"`
	StateTTLMs           int64       `json:"state_ttl_ms,omitempty"`
	// MiniBatch makes each input batch one bundle of Flink's mini-batch operator
	// (MiniBatchGroupAggFunction): per key, all its rows fold before one result is emitted.
	MiniBatch      bool       `json:"mini_batch,omitempty"`
	MaxParallelism int        `json:"max_parallelism"`
	KeyGroupStart  *int       `json:"key_group_start,omitempty"`
	KeyGroupEnd    *int       `json:"key_group_end,omitempty"`
	Test           *TestHooks `json:"test,omitempty"`

	// InputTypes holds the parsed types of Input.
	InputTypes []Type `json:"-"`
}

// FieldSpec is one input field.
type FieldSpec struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable *bool  `json:"nullable,omitempty"`
}

// AggCall is one aggregate call of a group aggregate, in Flink's aggCalls order.
type AggCall struct {
	Func    string `json:"func"`
	Args    []int  `json:"args"`
	Retract bool   `json:"retract,omitempty"`
	Name    string `json:"name,omitempty"`
	// Distinct makes the call see each argument value once per key (Flink's DISTINCT).
	Distinct bool `json:"distinct,omitempty"`
	// Filter is the BOOLEAN input column of FILTER (WHERE ...): only rows where it is TRUE fold.
	Filter *int `json:"filter,omitempty"`
	// JavaStrings is, for MIN and MAX over VARCHAR, the BOOLEAN input column that is TRUE where
	// the host holds the argument as a Java String (Flink's BinaryStringData with its javaObject
	// set, as rows built in the JVM are before any serialization): Flink compares two such
	// strings with String.compareTo (UTF-16 order), every other pair by UTF-8 bytes.
	JavaStrings *int `json:"java_strings,omitempty"`
}

// TestHooks are test-only fault injections, accepted only when the host enabled test hooks.
type TestHooks struct {
	// Panic names the operator call that panics: "process", "snapshot" or "restore".
	Panic string `json:"panic"`
}

// Field is a named, typed column.
type Field struct {
	Name string
	Type Type
}

// ParseSpec decodes and validates a spec. Unknown fields are rejected. Errors wrap ErrInvalid
// and name the offending field.
func ParseSpec(data []byte, testHooks bool) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: spec: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: spec: trailing data after the JSON object", ErrInvalid)
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: spec: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
	}
	if s.Kind == "" {
		return nil, bad("kind", "missing")
	}
	for i, f := range s.Input {
		t, err := ParseType(f.Type)
		if err != nil {
			return nil, bad(fmt.Sprintf("input[%d].type", i), "%v", err)
		}
		if f.Nullable != nil {
			t.Nullable = *f.Nullable
		}
		s.InputTypes = append(s.InputTypes, t)
	}
	for i, k := range s.Keys {
		if k < 0 || k >= len(s.Input) {
			return nil, bad(fmt.Sprintf("keys[%d]", i), "column %d out of range (input has %d columns)", k, len(s.Input))
		}
	}
	for i, a := range s.Aggs {
		for j, c := range a.Args {
			if c < 0 || c >= len(s.Input) {
				return nil, bad(fmt.Sprintf("aggs[%d].args[%d]", i, j), "column %d out of range (input has %d columns)", c, len(s.Input))
			}
		}
		if f := a.Filter; f != nil {
			if *f < 0 || *f >= len(s.Input) {
				return nil, bad(fmt.Sprintf("aggs[%d].filter", i), "column %d out of range (input has %d columns)", *f, len(s.Input))
			}
			if s.InputTypes[*f].ID != Boolean {
				return nil, bad(fmt.Sprintf("aggs[%d].filter", i), "column %d is %s, not BOOLEAN", *f, s.InputTypes[*f])
			}
		}
		if j := a.JavaStrings; j != nil {
			field := fmt.Sprintf("aggs[%d].java_strings", i)
			if *j < 0 || *j >= len(s.Input) {
				return nil, bad(field, "column %d out of range (input has %d columns)", *j, len(s.Input))
			}
			if t := s.InputTypes[*j]; t.ID != Boolean || t.Nullable {
				return nil, bad(field, "column %d is %s, not BOOLEAN NOT NULL", *j, t)
			}
			if (a.Func != "MIN" && a.Func != "MAX") || len(a.Args) != 1 || a.Args[0] < 0 || a.Args[0] >= len(s.Input) ||
				s.InputTypes[a.Args[0]].ID != Varchar {
				return nil, bad(field, "only MIN and MAX over VARCHAR compare strings")
			}
		}
	}
	if s.MaxParallelism < 1 || s.MaxParallelism > 1<<15 {
		return nil, bad("max_parallelism", "%d outside [1, 32768]", s.MaxParallelism)
	}
	start, end := 0, s.MaxParallelism-1
	if s.KeyGroupStart != nil {
		start = *s.KeyGroupStart
	}
	if s.KeyGroupEnd != nil {
		end = *s.KeyGroupEnd
	}
	if start < 0 || end >= s.MaxParallelism || start > end {
		return nil, bad("key_group_start/key_group_end", "range [%d, %d] invalid for max parallelism %d", start, end, s.MaxParallelism)
	}
	s.KeyGroupStart, s.KeyGroupEnd = &start, &end
	if s.StateTTLMs < 0 {
		return nil, bad("state_ttl_ms", "negative (%d)", s.StateTTLMs)
	}
	if s.Test != nil {
		if !testHooks {
			return nil, bad("test", "test hooks are disabled (ferry_init option test_hooks)")
		}
		switch s.Test.Panic {
		case "process", "snapshot", "restore":
		default:
			return nil, bad("test.panic", "unknown call %q", s.Test.Panic)
		}
	}
	return &s, nil
}

// Fingerprint identifies the state layout a spec implies: everything but the name, the
// subtask's key-group range, which may change across restarts and rescaling, and mini-batch,
// which changes when results are emitted, not the state.
func (s *Spec) Fingerprint() uint64 {
	c := *s
	c.Name, c.KeyGroupStart, c.KeyGroupEnd, c.Test, c.MiniBatch = "", nil, nil, nil, false
	data, _ := json.Marshal(&c)
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
