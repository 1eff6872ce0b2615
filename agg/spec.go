package agg

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
)

// Kind is the operator kind of the single-phase group aggregate (docs/abi.md).
const Kind = "group_aggregate"

func init() { engine.RegisterKeyed(Kind, open) }

// open opens an operator of Kind: the plain or the mini-batch operator.
func open(s *engine.Spec, p *Params) (engine.Keyed, error) {
	spec, err := parseSpec(s, p)
	if err != nil {
		return engine.Keyed{}, err
	}
	if spec.MiniBatch {
		return keyed(NewMiniBatchGroupAggregate(spec))
	}
	return keyed(NewGroupAggregate(spec))
}

// keyed is a group aggregate opened as a keyed operator, its Flink state included.
func keyed[O interface {
	engine.KeyedOperator
	engine.FlinkState
}](op O, err error) (engine.Keyed, error) {
	if err != nil {
		return engine.Keyed{}, err
	}
	return engine.Keyed{Operator: op, FlinkState: op}, nil
}

// Params are the group aggregate's own spec parameters ("params" of the spec JSON).
type Params struct {
	Aggs                 []AggCall `json:"aggs"`
	NeedRetraction       bool      `json:"need_retraction,omitempty"`
	GenerateUpdateBefore bool      `json:"generate_update_before,omitempty"`
	StateTTLMs           int64     `json:"state_ttl_ms,omitempty"`
	// MiniBatch makes each input batch one bundle of Flink's mini-batch operator
	// (MiniBatchGroupAggFunction): per key, all its rows fold before one result is emitted.
	MiniBatch bool `json:"mini_batch,omitempty"`
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

// Spec is a validated group-aggregate spec: the common header, the one input's key columns and
// types, and the params.
type Spec struct {
	*engine.Spec
	Params
	// Keys are the grouping key columns (the input's keys).
	Keys []int
	// Input and InputTypes are the one input's fields and their types.
	Input      []engine.FieldSpec
	InputTypes []engine.Type
	// ArgTypes are the types the calls' args (and filter, java_strings) index: InputTypes,
	// except for the global aggregate, whose calls name columns of the local aggregate's input
	// (its local_input) while its own input holds their partial state.
	ArgTypes []engine.Type
	// Exchange is params.exchange of the local or incremental aggregate: its output is frames
	// (nil: rows); validated, MaxParallelism and TargetFrameBytes set.
	Exchange *ExchangeParams
}

// ParseSpec decodes and validates the params of a group-aggregate spec whose header
// engine.ParseSpec validated. Errors wrap engine.ErrInvalid and name the field.
func ParseSpec(s *engine.Spec) (*Spec, error) {
	var p Params
	if err := s.DecodeParams(&p); err != nil {
		return nil, err
	}
	return parseSpec(s, &p)
}

// parseSpec validates decoded params p of a group-aggregate spec.
func parseSpec(s *engine.Spec, p *Params) (*Spec, error) {
	if len(s.Inputs) != 1 {
		return nil, engine.SpecError("inputs", "a group aggregate has 1 input, not %d", len(s.Inputs))
	}
	return newSpec(s, *p)
}

// newSpec validates decoded params p against the one input of header s.
func newSpec(s *engine.Spec, p Params) (*Spec, error) {
	in := &s.Inputs[0]
	spec := &Spec{Spec: s, Params: p, Keys: in.Keys, Input: in.Fields, InputTypes: in.Types, ArgTypes: in.Types}
	if err := validateCalls(spec.Aggs, spec.ArgTypes); err != nil {
		return nil, err
	}
	if spec.StateTTLMs < 0 {
		return nil, engine.ParamError("state_ttl_ms", "negative (%d)", spec.StateTTLMs)
	}
	return spec, nil
}

// validateCalls checks the column indices of aggs (args, filter, java_strings) against the row
// type they index.
func validateCalls(aggs []AggCall, types []engine.Type) error {
	n := len(types)
	for i, a := range aggs {
		for j, c := range a.Args {
			if c < 0 || c >= n {
				return engine.ParamError(fmt.Sprintf("aggs[%d].args[%d]", i, j), "column %d out of range (input has %d columns)", c, n)
			}
		}
		if f := a.Filter; f != nil {
			field := fmt.Sprintf("aggs[%d].filter", i)
			if *f < 0 || *f >= n {
				return engine.ParamError(field, "column %d out of range (input has %d columns)", *f, n)
			}
			if types[*f].ID != engine.Boolean {
				return engine.ParamError(field, "column %d is %s, not BOOLEAN", *f, types[*f])
			}
		}
		if j := a.JavaStrings; j != nil {
			field := fmt.Sprintf("aggs[%d].java_strings", i)
			if *j < 0 || *j >= n {
				return engine.ParamError(field, "column %d out of range (input has %d columns)", *j, n)
			}
			if t := types[*j]; t.ID != engine.Boolean || t.Nullable {
				return engine.ParamError(field, "column %d is %s, not BOOLEAN NOT NULL", *j, t)
			}
			if (a.Func != "MIN" && a.Func != "MAX") || len(a.Args) != 1 || types[a.Args[0]].ID != engine.Varchar {
				return engine.ParamError(field, "only MIN and MAX over VARCHAR compare strings")
			}
		}
	}
	return nil
}

// stateLayout is the part of the params that shapes the state payload (the fingerprint): all of
// them but mini_batch, which changes when results are emitted, not what is stored.
func (s *Spec) stateLayout() Params {
	p := s.Params
	p.MiniBatch = false
	return p
}

// newCall resolves aggregate call i of spec to its accumulator and output field.
func newCall(i int, call AggCall, spec *Spec) (kernels.Accumulator, engine.Field, error) {
	name := call.Name
	if name == "" {
		name = fmt.Sprintf("agg%d", i)
	}
	java := -1
	if call.JavaStrings != nil {
		java = *call.JavaStrings
	}
	acc, typ, err := kernels.New(fmt.Sprintf("aggs[%d]", i), kernels.Call{Func: call.Func, Args: call.Args, Retract: call.Retract,
		Distinct: call.Distinct, JavaStrings: java, NeedRetraction: spec.NeedRetraction, StateTTL: spec.StateTTLMs > 0}, spec.ArgTypes)
	if err != nil {
		return nil, engine.Field{}, err
	}
	return acc, engine.Field{Name: name, Type: typ}, nil
}
