package agg

import (
	"fmt"
	"math"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/exchange"
)

// The columnar exchange of the two-phase aggregate (docs/group-aggregate.md#frames): with
// params.exchange the local aggregate emits its partial rows as frames (package exchange), one
// or more per destination channel, instead of rows; with params.frames the global aggregate
// takes frames, checks them, queues their rows and cuts Flink's count bundles itself.

// ExchangeParams are the local aggregate's params.exchange.
type ExchangeParams struct {
	// Parallelism is the number of channels (the global aggregate's parallelism).
	Parallelism int `json:"parallelism"`
	// TargetFrameBytes bounds a frame's body unless one row alone is larger
	// (exchange.DefaultTargetBytes when absent).
	TargetFrameBytes *int `json:"target_frame_bytes,omitempty"`
}

// validate checks p (nil: no exchange) for maxParallelism key groups.
func (p *ExchangeParams) validate(maxParallelism int) (*ExchangeParams, error) {
	if p == nil {
		return nil, nil
	}
	if p.Parallelism < 1 || p.Parallelism > maxParallelism {
		return nil, engine.ParamError("exchange.parallelism", "%d outside [1, max_parallelism %d]", p.Parallelism, maxParallelism)
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

// FramesParams are the global aggregate's params.frames.
type FramesParams struct {
	// BundleSize is Flink's table.exec.mini-batch.size: a bundle ends at the row that makes its
	// count reach it (CountBundleTrigger).
	BundleSize int `json:"bundle_size"`
}

// frameField is the one column of a batch of frames.
var frameField = engine.Field{Name: "frame", Type: engine.Type{ID: engine.Binary}}

// frameInput is the C-level input of an operator fed frames.
func frameInput() *engine.Input {
	return &engine.Input{Fields: []engine.FieldSpec{{Name: frameField.Name, Type: "BYTES NOT NULL"}}, Types: []engine.Type{frameField.Type}}
}

// localFrames is the frame output of a local aggregate with params.exchange: the bundle's
// partial rows go to Go scratch memory, then each frame's rows are gathered straight into the
// output batch.
type localFrames struct {
	enc      *exchange.Encoder
	partials engine.OutBatch // the bundle's partial rows, in HashMap order
	view     engine.Batch
	kgs      []int32 // per partial row: its key group
}

func newLocalFrames(p *ExchangeParams, types []engine.Type, maxParallelism int) (*localFrames, error) {
	enc, err := exchange.NewEncoder(types, p.Parallelism, maxParallelism, *p.TargetFrameBytes)
	if err != nil {
		return nil, err
	}
	return &localFrames{enc: enc, partials: engine.OutBatch{Alloc: &scratchAlloc{}}}, nil
}

// emit writes the frames of the partial rows in f.partials (whose key groups are f.kgs) to out:
// one BYTES row per frame, channels ascending.
func (f *localFrames) emit(out *engine.OutBatch) error {
	viewOf(&f.partials, &f.view)
	defer f.view.Forget()
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

// FramedGlobal is the global aggregate fed frames (params.frames): each call's frames are
// decoded and checked whole (row type, max parallelism, every row's key group in the operator's
// range and in its frame's), their rows queued in Go memory, and every bundle_size queued rows
// run as one bundle of GlobalGroupAggregate at the processing time of the call that completed
// it, one bundle per output chunk. Advance and Flush first run the queued rows as one bundle.
type FramedGlobal struct {
	*GlobalGroupAggregate
	size   int
	dec    *exchange.Decoder
	keys   *engine.KeyEncoder // checks the rows' key groups at ingest
	queue  *engine.Queue
	frame  engine.Batch
	window engine.Batch
	nowMs  int64 // processing time of the call whose bundles are pending
	// failed is the error of a bundle that failed after its rows were queued (a partial value
	// only the merge refuses, memory): every later call but Close fails, as the host must
	// restart from its last checkpoint.
	failed error
}

var (
	_ engine.Operator   = (*FramedGlobal)(nil)
	_ engine.WireInputs = (*FramedGlobal)(nil)
	_ engine.Buffering  = (*FramedGlobal)(nil)
)

// NewFramedGlobal builds the global aggregate of a validated spec with params.frames.
func NewFramedGlobal(spec *GlobalSpec) (*FramedGlobal, error) {
	g, err := NewGlobalGroupAggregate(spec)
	if err != nil {
		return nil, err
	}
	return &FramedGlobal{GlobalGroupAggregate: g, size: spec.Frames.BundleSize, dec: exchange.NewDecoder(spec.InputTypes),
		keys: engine.NewKeyEncoder(spec.Keys, spec.InputTypes), queue: engine.NewQueue(spec.InputTypes)}, nil
}

// WireInput implements engine.WireInputs: input 0 is a batch of frames.
func (f *FramedGlobal) WireInput(int) *engine.Input { return frameInput() }

// Buffered implements engine.Buffering: the queued rows of an incomplete bundle.
func (f *FramedGlobal) Buffered() int { return f.queue.Len() }

// Process implements engine.Operator: in holds frames. Nothing is queued unless every frame
// passes its checks; the first completed bundle's output is the first chunk, each further one
// follows through Continue.
func (f *FramedGlobal) Process(_ int, in *engine.Batch, nowMs int64, out *engine.OutBatch) (bool, error) {
	if err := f.check(); err != nil {
		return false, err
	}
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

// ingest checks one frame and queues its rows.
func (f *FramedGlobal) ingest(frame []byte) error {
	defer f.frame.Forget()
	h, err := f.dec.Decode(frame, &f.frame)
	if err != nil {
		return err
	}
	if h.MaxParallelism != f.spec.MaxParallelism {
		return fmt.Errorf("%w: frame: routed for max parallelism %d, the operator's is %d", engine.ErrData, h.MaxParallelism, f.spec.MaxParallelism)
	}
	if err := f.keys.Encode(&f.frame); err != nil {
		return err
	}
	for i := range f.frame.Len {
		kg, err := f.state.KeyGroupOf(f.keys.Hash(i))
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if kg < h.KGFirst || kg > h.KGLast {
			return fmt.Errorf("%w: frame: row %d in key group %d, outside the frame's [%d, %d]", engine.ErrData, i, kg, h.KGFirst, h.KGLast)
		}
	}
	f.queue.Append(&f.frame)
	return nil
}

// Continue implements engine.Operator: the next complete bundle, if any.
func (f *FramedGlobal) Continue(out *engine.OutBatch) (bool, error) {
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
func (f *FramedGlobal) bundle(n int, nowMs int64, out *engine.OutBatch) error {
	if err := f.check(); err != nil {
		return err
	}
	f.queue.Window(n, &f.window)
	defer f.window.Forget()
	_, err := f.GlobalGroupAggregate.Process(0, &f.window, nowMs, out)
	f.queue.Consume(n)
	f.failed = err
	return err
}

// check fails once a bundle failed.
func (f *FramedGlobal) check() error {
	if f.failed != nil {
		return fmt.Errorf("%w: a bundle of queued rows failed earlier (%v); close the operator and restore from a checkpoint", engine.ErrState, f.failed)
	}
	return nil
}

// Advance implements engine.Operator: the queued rows run as one bundle at nowMs.
func (f *FramedGlobal) Advance(watermarkMs, nowMs int64, out *engine.OutBatch) (bool, error) {
	if f.queue.Len() == 0 {
		return f.GlobalGroupAggregate.Advance(watermarkMs, nowMs, out)
	}
	return false, f.flushQueue(nowMs, out)
}

// Flush implements engine.Operator: the queued rows run as one bundle at nowMs.
func (f *FramedGlobal) Flush(nowMs int64, out *engine.OutBatch) (bool, error) {
	if f.queue.Len() == 0 {
		return f.GlobalGroupAggregate.Flush(nowMs, out)
	}
	return false, f.flushQueue(nowMs, out)
}

func (f *FramedGlobal) flushQueue(nowMs int64, out *engine.OutBatch) error {
	err := f.bundle(f.queue.Len(), nowMs, out)
	f.queue.Compact()
	return err
}

// Close implements engine.Operator.
func (f *FramedGlobal) Close() {
	f.GlobalGroupAggregate.Close()
	f.queue = engine.NewQueue(f.spec.InputTypes)
}
