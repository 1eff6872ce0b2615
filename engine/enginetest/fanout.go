package enginetest

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// FanoutKind is the operator kind of Fanout. Test builds register it (capi under the ferrytest
// build tag, the session tests) to exercise chunked output, which the group aggregate never
// produces.
const FanoutKind = "test_fanout"

// FanoutParams are Fanout's params: every input row is emitted Copies times.
type FanoutParams struct {
	Copies int `json:"copies"`
}

// Fanout is a stateless test operator whose output outgrows its input: each row of a call is
// emitted Copies times in a row (with its RowKind), run by run in arrival order, in chunks of at
// most the spec's chunk_rows rows (a chunk holds the rows of one run), so one Process may need
// many Continue calls. Every input has the fields of input 0, which are also the output fields.
// It copies the rows it is emitting, since the input is gone once Process returns.
type Fanout struct {
	copies   int
	chunk    int
	output   []engine.Field
	types    []engine.Type
	held     []engine.Batch // per run of the call being emitted, a copy of its rows
	run      int            // the run being emitted
	next     int            // its next output row, of held[run].Len*copies
	src      []int32
	varBytes []int
}

// OpenFanout opens a Fanout (the keyed kind FanoutKind, whose operators keep no state).
func OpenFanout(spec *engine.Spec, p *FanoutParams) (engine.Keyed, error) {
	if p.Copies < 1 {
		return engine.Keyed{}, engine.ParamError("copies", "%d, want at least 1", p.Copies)
	}
	in0 := &spec.Inputs[0]
	for i, in := range spec.Inputs {
		if len(in.Types) != len(in0.Types) {
			return engine.Keyed{}, engine.SpecError(fmt.Sprintf("inputs[%d].fields", i), "every input of %s has the fields of input 0", FanoutKind)
		}
		for j, t := range in.Types {
			if t != in0.Types[j] {
				return engine.Keyed{}, engine.SpecError(fmt.Sprintf("inputs[%d].fields[%d]", i, j), "every input of %s has the fields of input 0", FanoutKind)
			}
		}
	}
	f := &Fanout{copies: p.Copies, chunk: spec.ChunkRows, output: in0.Named(), types: in0.Types, varBytes: make([]int, len(in0.Types))}
	return engine.Keyed{Operator: f}, nil
}

// Output implements engine.KeyedOperator.
func (f *Fanout) Output() []engine.Field { return f.output }

// State implements engine.KeyedOperator: Fanout is stateless.
func (f *Fanout) State() *engine.KeyedState { return nil }

// Process implements engine.KeyedOperator.
func (f *Fanout) Process(in *engine.Inputs, _ int64, out *engine.OutBatch) (bool, error) {
	f.held = f.held[:0]
	in.Each(func(_ int, b *engine.Batch) error {
		f.held = append(f.held, engine.Batch{})
		b.CopyInto(&f.held[len(f.held)-1])
		return nil
	})
	f.run, f.next = 0, 0
	return f.emit(out)
}

// Continue implements engine.KeyedOperator.
func (f *Fanout) Continue(out *engine.OutBatch) (bool, error) { return f.emit(out) }

// Advance implements engine.KeyedOperator.
func (f *Fanout) Advance(_, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Flush implements engine.KeyedOperator.
func (f *Fanout) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Close implements engine.KeyedOperator.
func (f *Fanout) Close() { *f = Fanout{} }

// emit writes the next chunk of the held runs' copies.
func (f *Fanout) emit(out *engine.OutBatch) (bool, error) {
	for f.run < len(f.held) && f.next == f.held[f.run].Len*f.copies {
		f.run, f.next = f.run+1, 0
	}
	if f.run == len(f.held) {
		out.Len = 0
		return false, nil
	}
	held := &f.held[f.run]
	total := held.Len * f.copies
	rows := min(f.chunk, total-f.next)
	f.src = f.src[:0]
	for j := range rows {
		f.src = append(f.src, int32((f.next+j)/f.copies))
	}
	for c := range f.types {
		f.varBytes[c] = 0
		if f.types[c].Variable() {
			f.varBytes[c] = engine.GatherBytes(&held.Cols[c], f.src)
		}
	}
	if err := out.Init(f.types, rows, f.varBytes); err != nil {
		return false, err
	}
	for c := range f.types {
		engine.Gather(&out.Cols[c], &held.Cols[c], f.src)
	}
	kinds := out.Kinds()
	for j, i := range f.src {
		kinds[j] = held.Kinds[i]
	}
	out.Finish()
	f.next += rows
	return f.next < total || f.run+1 < len(f.held), nil
}

// Open opens the keyed operator of spec (engine.OpenKeyed), for tests that drive it directly.
func Open(spec *engine.Spec) (engine.KeyedOperator, error) {
	k, err := engine.OpenKeyed(spec)
	return k.Operator, err
}
