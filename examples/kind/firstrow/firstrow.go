// Package firstrow is the example operator kind of docs/abi.md's walkthrough, "Adding an
// operator kind": `example_first_row`, Flink's ProcTimeDeduplicateKeepFirstRowFunction over
// insert-only input (SELECT ... FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY
// proctime) AS rn FROM t) WHERE rn = 1): the first row of every key is emitted (+I) and every
// later row of the key is dropped; with idle-state TTL, a key whose first row is older than the
// TTL counts as new again (OnCreateAndWrite: only the first row writes). Only test builds
// (the ferrytest build tag) register it: it shows the shape of a kind in the fewest lines.
package firstrow

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// Kind is the kind's name in specs.
const Kind = "example_first_row"

// Register makes the kind available to engine.KindOf (test builds call it).
func Register() { engine.RegisterKeyed(Kind, open) }

// Params are the kind's spec parameters (docs/abi.md).
type Params struct {
	// StateTTLMs is the idle-state retention in ms (table.exec.state.ttl); 0 keeps keys forever.
	StateTTLMs int64 `json:"state_ttl_ms,omitempty"`
}

// FirstRow is one operator of the kind. Its state is the set of keys seen: the keys of its
// KeyedState, with no per-key state of their own.
type FirstRow struct {
	output []engine.Field
	types  []engine.Type
	enc    *engine.KeyEncoder
	state  *engine.KeyedState
	kgs    []int32 // per row of the call: its key group
	keep   []int32 // the rows of the call to emit
	bytes  []int   // per output column, its variable bytes
}

func open(spec *engine.Spec, p *Params) (engine.Keyed, error) {
	if len(spec.Inputs) != 1 {
		return engine.Keyed{}, engine.SpecError("inputs", "%s has 1 input, not %d", Kind, len(spec.Inputs))
	}
	if p.StateTTLMs < 0 {
		return engine.Keyed{}, engine.ParamError("state_ttl_ms", "negative (%d)", p.StateTTLMs)
	}
	in := &spec.Inputs[0]
	op := &FirstRow{output: in.Named(), types: in.Types, enc: engine.NewKeyEncoder(in.Keys, in.Types), bytes: make([]int, len(in.Types))}
	op.state = engine.NewKeyedState(spec, engine.StateConfig{KeySize: op.enc.FixedSize(), TTL: engine.TTL{Ms: p.StateTTLMs}, Layout: p})
	return engine.Keyed{Operator: op}, nil
}

// Output implements engine.KeyedOperator: the input's fields.
func (f *FirstRow) Output() []engine.Field { return f.output }

// State implements engine.KeyedOperator.
func (f *FirstRow) State() *engine.KeyedState { return f.state }

// Process implements engine.KeyedOperator: the rows of the one input, in order; the output is
// one chunk (at most one row per input row). Every row is checked before any key is stored.
func (f *FirstRow) Process(inputs *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	in := inputs.Batches[0]
	if in.Retracts {
		return false, fmt.Errorf("%w: %s takes insert-only input", engine.ErrData, Kind)
	}
	if err := f.enc.Encode(in); err != nil {
		return false, err
	}
	f.kgs = f.kgs[:0]
	for i := range in.Len {
		kg, err := f.state.KeyGroupOf(f.enc.Hash(i))
		if err != nil {
			return false, fmt.Errorf("row %d: %w", i, err)
		}
		f.kgs = append(f.kgs, int32(kg))
	}
	f.keep = f.keep[:0]
	for i := range in.Len {
		key, hash, kg := f.enc.Key(i), f.enc.Hash(i), int(f.kgs[i])
		id := f.state.Find(key, hash, kg)
		if id >= 0 && f.state.Expired(id, nowMs) {
			f.state.Remove(id) // expired state reads as absent, and goes
			id = -1
		}
		if id >= 0 {
			continue
		}
		f.state.Touch(f.state.Insert(key, hash, kg), nowMs)
		f.keep = append(f.keep, int32(i))
	}
	f.state.Sweep(nowMs) // ends the batch: keys are removed only under TTL
	if len(f.keep) == 0 {
		out.Len = 0
		return false, nil
	}
	for c := range f.types {
		f.bytes[c] = 0
		if f.types[c].Variable() {
			f.bytes[c] = engine.GatherBytes(&in.Cols[c], f.keep)
		}
	}
	if err := out.Init(f.types, len(f.keep), f.bytes); err != nil {
		return false, err
	}
	for c := range f.types {
		engine.Gather(&out.Cols[c], &in.Cols[c], f.keep)
	}
	out.Finish() // every row +I: the RowKind column is zeroed
	return false, nil
}

// Advance implements engine.KeyedOperator: no timers, no output.
func (f *FirstRow) Advance(_, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Flush implements engine.KeyedOperator: nothing is buffered.
func (f *FirstRow) Flush(_ int64, out *engine.OutBatch) (bool, error) { out.Len = 0; return false, nil }

// Continue implements engine.KeyedOperator: every call's output is one chunk.
func (f *FirstRow) Continue(out *engine.OutBatch) (bool, error) { out.Len = 0; return false, nil }

// Close implements engine.KeyedOperator.
func (f *FirstRow) Close() { *f = FirstRow{} }
