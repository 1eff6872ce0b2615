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

// Fanout is a stateless test operator whose output outgrows its input: each row of a batch is
// emitted Copies times in a row (with its RowKind), in chunks of at most the spec's chunk_rows
// rows, so one Process may need many Continue calls. Every input has the fields of input 0, which
// are also the output fields. It copies the batch it is emitting, since the input is gone once
// Process returns.
type Fanout struct {
	copies   int
	chunk    int
	output   []engine.Field
	types    []engine.Type
	held     engine.Batch // the batch being emitted
	next     int          // its next output row, of held.Len*copies
	src      []int32
	varBytes []int
}

// OpenFanout is the engine.OpenFunc of FanoutKind.
func OpenFanout(spec *engine.Spec) (engine.Operator, error) {
	var p FanoutParams
	if err := spec.DecodeParams(&p); err != nil {
		return nil, err
	}
	if p.Copies < 1 {
		return nil, engine.ParamError("copies", "%d, want at least 1", p.Copies)
	}
	in0 := &spec.Inputs[0]
	for i, in := range spec.Inputs {
		if len(in.Types) != len(in0.Types) {
			return nil, engine.SpecError(fmt.Sprintf("inputs[%d].fields", i), "every input of %s has the fields of input 0", FanoutKind)
		}
		for j, t := range in.Types {
			if t != in0.Types[j] {
				return nil, engine.SpecError(fmt.Sprintf("inputs[%d].fields[%d]", i, j), "every input of %s has the fields of input 0", FanoutKind)
			}
		}
	}
	return &Fanout{copies: p.Copies, chunk: spec.ChunkRows, output: in0.Named(), types: in0.Types, varBytes: make([]int, len(in0.Types))}, nil
}

// Output implements engine.Operator.
func (f *Fanout) Output() []engine.Field { return f.output }

// State implements engine.Operator: Fanout is stateless.
func (f *Fanout) State() *engine.KeyedState { return nil }

// Process implements engine.Operator.
func (f *Fanout) Process(_ int, in *engine.Batch, _ int64, out *engine.OutBatch) (bool, error) {
	in.CopyInto(&f.held)
	f.next = 0
	return f.emit(out)
}

// Continue implements engine.Operator.
func (f *Fanout) Continue(out *engine.OutBatch) (bool, error) { return f.emit(out) }

// Advance implements engine.Operator.
func (f *Fanout) Advance(_, _ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Flush implements engine.Operator.
func (f *Fanout) Flush(_ int64, out *engine.OutBatch) (bool, error) {
	out.Len = 0
	return false, nil
}

// Close implements engine.Operator.
func (f *Fanout) Close() { *f = Fanout{} }

// emit writes the next chunk of the held batch's copies.
func (f *Fanout) emit(out *engine.OutBatch) (bool, error) {
	total := f.held.Len * f.copies
	rows := min(f.chunk, total-f.next)
	if rows <= 0 {
		out.Len = 0
		return false, nil
	}
	f.src = f.src[:0]
	for j := range rows {
		f.src = append(f.src, int32((f.next+j)/f.copies))
	}
	for c := range f.types {
		f.varBytes[c] = 0
		if f.types[c].Variable() {
			f.varBytes[c] = engine.GatherBytes(&f.held.Cols[c], f.src)
		}
	}
	if err := out.Init(f.types, rows, f.varBytes); err != nil {
		return false, err
	}
	for c := range f.types {
		engine.Gather(&out.Cols[c], &f.held.Cols[c], f.src)
	}
	kinds := out.Kinds()
	for j, i := range f.src {
		kinds[j] = f.held.Kinds[i]
	}
	out.Finish()
	f.next += rows
	return f.next < total, nil
}
