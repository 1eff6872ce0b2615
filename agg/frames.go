package agg

import (
	"fmt"
	"math"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/exchange"
)

// The columnar exchange of the two-phase aggregate (docs/group-aggregate.md#frames): with
// params.exchange the local aggregate (and the incremental aggregate of a split DISTINCT) emits
// its output rows as frames (package exchange), one or more per destination channel, instead of
// rows; with params.frames the global aggregate (and the incremental) takes frames, checks them,
// queues their rows and cuts Flink's count bundles itself (Framed).

// ExchangeParams are the params.exchange of an aggregate whose output is frames (the local's
// partial rows, the incremental's).
type ExchangeParams struct {
	// Parallelism is the number of channels (the consumer's parallelism).
	Parallelism int `json:"parallelism"`
	// MaxParallelism is the consumer's max parallelism the frames are routed for: required for
	// the incremental aggregate, which is keyed with its own; refused for the local aggregate,
	// whose header's max_parallelism is the consumer's.
	MaxParallelism *int `json:"max_parallelism,omitempty"`
	// TargetFrameBytes bounds a frame's body unless one row alone is larger
	// (exchange.DefaultTargetBytes when absent).
	TargetFrameBytes *int `json:"target_frame_bytes,omitempty"`
}

// validate checks p (nil: no exchange). With own, the consumer's max parallelism is maxParallelism
// and p.MaxParallelism must be absent; otherwise p.MaxParallelism is required and within
// [1, 32768]. It sets p.MaxParallelism and p.TargetFrameBytes.
func (p *ExchangeParams) validate(maxParallelism int, own bool) (*ExchangeParams, error) {
	if p == nil {
		return nil, nil
	}
	switch {
	case own && p.MaxParallelism != nil:
		return nil, engine.ParamError("exchange.max_parallelism", "set; the operator routes for its own max_parallelism %d", maxParallelism)
	case own:
		p.MaxParallelism = &maxParallelism
	case p.MaxParallelism == nil:
		return nil, engine.ParamError("exchange.max_parallelism", "required: the consumer's max parallelism")
	case *p.MaxParallelism < 1 || *p.MaxParallelism > 1<<15:
		return nil, engine.ParamError("exchange.max_parallelism", "%d outside [1, 32768]", *p.MaxParallelism)
	}
	if p.Parallelism < 1 || p.Parallelism > *p.MaxParallelism {
		return nil, engine.ParamError("exchange.parallelism", "%d outside [1, max_parallelism %d]", p.Parallelism, *p.MaxParallelism)
	}
	if p.TargetFrameBytes == nil {
		n := exchange.DefaultTargetBytes
		p.TargetFrameBytes = &n
	}
	if *p.TargetFrameBytes < 1 {
		return nil, engine.ParamError("exchange.target_frame_bytes", "%d, want at least 1", *p.TargetFrameBytes)
	}
	return p, nil
}

// FramesParams are the params.frames of an aggregate fed frames (the global, the incremental).
type FramesParams struct {
	// BundleSize is Flink's table.exec.mini-batch.size: a bundle ends at the row that makes its
	// count reach it (CountBundleTrigger).
	BundleSize int `json:"bundle_size"`
}

// validate checks p (nil: no frames).
func (p *FramesParams) validate() error {
	if p != nil && p.BundleSize < 1 {
		return engine.ParamError("frames.bundle_size", "%d, want at least 1", p.BundleSize)
	}
	return nil
}

// frameField is the one column of a batch of frames.
var frameField = engine.Field{Name: "frame", Type: engine.Type{ID: engine.Binary}}

// frameInput is the C-level input of an operator fed frames.
func frameInput() *engine.Input {
	return &engine.Input{Fields: []engine.FieldSpec{{Name: frameField.Name, Type: "BYTES NOT NULL"}}, Types: []engine.Type{frameField.Type}}
}

// frameOutput is the frame output of an aggregate with params.exchange: a bundle's output rows
// go to Go scratch memory (rows), then each frame's rows are gathered straight into the output
// batch. The rows' key groups are the producer's (kgs, set by the caller) or, with keys, computed
// here from the rows' leading key columns for the consumer's max parallelism.
type frameOutput struct {
	enc  *exchange.Encoder
	rows engine.OutBatch // the bundle's output rows, in emission order
	view engine.Batch
	kgs  []int32            // per row: its key group
	keys *engine.KeyEncoder // nil: the caller fills kgs
	maxP int
}

// newFrameOutput returns the frame output of rows of types for p. With keyed, the rows' key
// groups are computed from their first keyed columns.
func newFrameOutput(p *ExchangeParams, types []engine.Type, keyed int) (*frameOutput, error) {
	enc, err := exchange.NewEncoder(types, p.Parallelism, *p.MaxParallelism, *p.TargetFrameBytes)
	if err != nil {
		return nil, err
	}
	f := &frameOutput{enc: enc, rows: engine.OutBatch{Alloc: &scratch.Allocator{}}, maxP: *p.MaxParallelism}
	if keyed > 0 {
		cols := make([]int, keyed)
		for i := range cols {
			cols[i] = i
		}
		f.keys = engine.NewKeyEncoder(cols, types)
	}
	return f, nil
}

// emit writes the frames of the rows in f.rows to out: one BYTES row per frame, channels
// ascending.
func (f *frameOutput) emit(out *engine.OutBatch) error {
	viewOf(&f.rows, &f.view)
	defer f.view.Forget()
	if f.keys != nil {
		if err := f.keys.Encode(&f.view); err != nil {
			return err
		}
		f.kgs = scratch.Resize(f.kgs, f.view.Len)
		for i := range f.view.Len {
			f.kgs[i] = int32(engine.KeyGroup(f.keys.Hash(i), f.maxP))
		}
	}
	frames, size := f.enc.Plan(&f.view, f.kgs)
	if size > math.MaxInt32 {
		return fmt.Errorf("%w: the bundle's frames would hold %d bytes, more than 2 GiB; send smaller bundles", engine.ErrData, size)
	}
	if err := out.Init([]engine.Type{frameField.Type}, frames, []int{size}); err != nil {
		return err
	}
	col := &out.Cols[0]
	pos := 0
	for fr := range frames {
		n := f.enc.Size(fr)
		col.Offs[fr] = int32(pos)
		f.enc.Write(fr, &f.view, col.Data[pos:pos+n])
		pos += n
	}
	col.Offs[frames] = int32(pos)
	out.Finish()
	return nil
}

// Framed is a bundle operator with keyed state fed frames (params.frames): the global aggregate,
// the incremental aggregate. Each call's frames are decoded and checked whole (layout, row type,
// max parallelism; each row's key group is checked by the bundle that runs it), their rows
// queued in Go memory, and every bundle_size queued rows run as one bundle (one Process call) of
// the wrapped operator at the processing time of the call that completed it, one bundle per
// output chunk: Flink's CountBundleTrigger. Advance and Flush first run the queued rows as one
// bundle. The wrapped operator's output (rows, or frames of its own) is the output.
type Framed struct {
	// KeyedOperator is the bundle operator: each Process call is one bundle, one chunk.
	engine.KeyedOperator
	flink    engine.FlinkState // the bundle operator's Flink state; nil: none
	spec     *Spec
	size     int
	dec      *exchange.Decoder
	queue    *engine.Queue
	frame    engine.Batch
	window   engine.Batch
	bundleIn *engine.Inputs // window, as the bundle operator's input
	nowMs    int64          // processing time of the call whose bundles are pending
	// failed is the error of a bundle that failed after its rows were queued (a partial value
	// only the merge refuses, memory): every later call but Close fails, as the host must
	// restart from its last checkpoint.
	failed error
}

var _ engine.KeyedOperator = (*Framed)(nil)

// NewFramed wraps op, a bundle operator of spec with keyed state (flink: its Flink state, nil
// when it has none), fed frames of spec's input rows cut into bundles of p.BundleSize rows.
func NewFramed(op engine.KeyedOperator, flink engine.FlinkState, spec *Spec, p *FramesParams) *Framed {
	f := &Framed{KeyedOperator: op, flink: flink, spec: spec, size: p.BundleSize, dec: exchange.NewDecoder(spec.InputTypes),
		queue: engine.NewQueue(spec.InputTypes)}
	f.bundleIn = &engine.Inputs{Batches: []*engine.Batch{&f.window}, Runs: make([]engine.Run, 1)}
	return f
}

// Keyed is the framed operator as the session opens it: input 0 crosses as a batch of frames,
// and nothing is snapshotted or exported while rows are queued.
func (f *Framed) Keyed() engine.Keyed {
	k := engine.Keyed{Operator: f, Wire: []*engine.Input{frameInput()}, Snapshottable: f.snapshottable}
	if f.flink != nil {
		k.FlinkState = f
	}
	return k
}

// ImportTypes implements engine.FlinkState for a wrapped operator that imports.
func (f *Framed) ImportTypes() ([]engine.Type, error) { return f.flink.ImportTypes() }

// ImportState implements engine.FlinkState, before any row is queued.
func (f *Framed) ImportState(in *engine.Batch) error {
	if f.queue.Len() > 0 {
		return fmt.Errorf("%w: %d input rows are queued: the state is imported before the first row", engine.ErrState, f.queue.Len())
	}
	return f.flink.ImportState(in)
}

// ExportTypes implements engine.FlinkState for a wrapped operator that exports.
func (f *Framed) ExportTypes() ([]engine.Type, error) { return f.flink.ExportTypes() }

// ExportState implements engine.FlinkState; queued rows must have been flushed.
func (f *Framed) ExportState(out *engine.OutBatch, first bool) (bool, error) {
	if err := f.snapshottable(); err != nil {
		return false, err
	}
	return f.flink.ExportState(out, first)
}

// Buffered is the number of queued rows of an incomplete bundle.
func (f *Framed) Buffered() int { return f.queue.Len() }

// snapshottable fails while rows are queued outside the state.
func (f *Framed) snapshottable() error {
	if n := f.queue.Len(); n > 0 {
		return fmt.Errorf("%w: %d input rows are queued outside the state: flush before the snapshot", engine.ErrState, n)
	}
	return nil
}

// Process implements engine.KeyedOperator: its one input holds frames. Nothing is queued unless
// every frame passes its checks; the first completed bundle's output is the first chunk, each
// further one follows through Continue.
func (f *Framed) Process(frames *engine.Inputs, nowMs int64, out *engine.OutBatch) (bool, error) {
	if err := f.check(); err != nil {
		return false, err
	}
	in := frames.Batches[0]
	stored := f.queue.Stored()
	col := &in.Cols[0]
	for j := range in.Len {
		if col.IsNull(j) {
			f.queue.Truncate(stored)
			return false, fmt.Errorf("%w: frame %d is NULL", engine.ErrData, j)
		}
		if err := f.ingest(col.Bytes(j)); err != nil {
			f.queue.Truncate(stored)
			return false, fmt.Errorf("frame %d: %w", j, err)
		}
	}
	f.nowMs = nowMs
	return f.Continue(out)
}

// ingest checks one frame and queues its rows. The rows' key groups are not computed here: the
// bundle that runs them hashes every key anyway and refuses, before it changes any state, a key
// of a key group outside the operator's range (a misrouted frame: the operator is then broken,
// as after any failed bundle).
func (f *Framed) ingest(frame []byte) error {
	defer f.frame.Forget()
	h, err := f.dec.Decode(frame, &f.frame)
	if err != nil {
		return err
	}
	if h.MaxParallelism != f.spec.MaxParallelism {
		return fmt.Errorf("%w: frame: routed for max parallelism %d, the operator's is %d", engine.ErrData, h.MaxParallelism, f.spec.MaxParallelism)
	}
	f.queue.Append(&f.frame)
	return nil
}

// Continue implements engine.KeyedOperator: the next complete bundle, if any.
func (f *Framed) Continue(out *engine.OutBatch) (bool, error) {
	if f.queue.Len() < f.size {
		f.queue.Compact()
		out.Len = 0
		return false, nil
	}
	if err := f.bundle(f.size, f.nowMs, out); err != nil {
		return false, err
	}
	if f.queue.Len() < f.size {
		f.queue.Compact()
		return false, nil
	}
	return true, nil
}

// bundle runs the first n queued rows as one bundle at nowMs.
func (f *Framed) bundle(n int, nowMs int64, out *engine.OutBatch) error {
	if err := f.check(); err != nil {
		return err
	}
	f.queue.Window(n, &f.window)
	defer f.window.Forget()
	f.bundleIn.Runs[0] = engine.Run{Rows: n}
	_, err := f.KeyedOperator.Process(f.bundleIn, nowMs, out)
	f.queue.Consume(n)
	f.failed = err
	return err
}

// check fails once a bundle failed.
func (f *Framed) check() error {
	if f.failed != nil {
		return fmt.Errorf("%w: a bundle of queued rows failed earlier (%v); close the operator and restore from a checkpoint", engine.ErrState, f.failed)
	}
	return nil
}

// Advance implements engine.KeyedOperator: the queued rows run as one bundle at nowMs.
func (f *Framed) Advance(watermarkMs, nowMs int64, out *engine.OutBatch) (bool, error) {
	if err := f.check(); err != nil {
		return false, err
	}
	if f.queue.Len() == 0 {
		return f.KeyedOperator.Advance(watermarkMs, nowMs, out)
	}
	return false, f.flushQueue(nowMs, out)
}

// Flush implements engine.KeyedOperator: the queued rows run as one bundle at nowMs.
func (f *Framed) Flush(nowMs int64, out *engine.OutBatch) (bool, error) {
	if err := f.check(); err != nil {
		return false, err
	}
	if f.queue.Len() == 0 {
		return f.KeyedOperator.Flush(nowMs, out)
	}
	return false, f.flushQueue(nowMs, out)
}

func (f *Framed) flushQueue(nowMs int64, out *engine.OutBatch) error {
	err := f.bundle(f.queue.Len(), nowMs, out)
	f.queue.Compact()
	return err
}

// Close implements engine.KeyedOperator.
func (f *Framed) Close() {
	f.KeyedOperator.Close()
	f.queue = engine.NewQueue(f.spec.InputTypes)
}
