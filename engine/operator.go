package engine

// Operator is one native operator instance with the lifecycle of the C ABI (docs/abi.md). An
// operator is used by one goroutine at a time.
//
// Input batches are views valid only during the call: an operator that needs rows after the call
// returns (to continue its output later, or as state) copies them. Output goes into out, whose
// memory comes from out's Allocator and belongs to the caller once the call returns.
//
// Output comes in chunks: a call that has more output than fits one chunk fills out with the
// first and returns more = true; the caller then calls Continue until it returns false, and makes
// no other call in between. An operator whose output is bounded by a small multiple of its input
// (the group aggregate: at most two rows per input row) emits one chunk per call; others emit at
// most Spec.ChunkRows rows per chunk.
//
// An operator validates its whole input before it changes any state, so a returned error leaves
// its state as it was, except an error wrapping ErrMemory, after which the operator must be
// closed (the host restarts from its last checkpoint).
type Operator interface {
	// Output lists the output columns, without the RowKind column.
	Output() []Field
	// Process consumes one batch of input input (an index into Spec.Inputs) at processing time
	// nowMs and writes the first chunk of its output to out.
	Process(input int, in *Batch, nowMs int64, out *OutBatch) (more bool, err error)
	// Advance moves event time to watermarkMs and processing time to nowMs (firing timers).
	Advance(watermarkMs, nowMs int64, out *OutBatch) (more bool, err error)
	// Flush emits everything the operator buffers.
	Flush(nowMs int64, out *OutBatch) (more bool, err error)
	// Continue writes the next chunk of the output of the last call that returned more.
	Continue(out *OutBatch) (more bool, err error)
	// State returns the operator's keyed state, or nil for a stateless operator. Snapshot,
	// restore and the state's figures go through it.
	State() *KeyedState
	// Close frees the operator's state.
	Close()
}

// ProcessingTimers is implemented by an operator that registers processing-time timers of its
// own: the host must call Advance once its processing time reaches NextProcessingTimer, as a
// timer service would fire them (reported by Session.Stats).
type ProcessingTimers interface {
	// NextProcessingTimer is the time (epoch ms) of the earliest pending processing-time timer;
	// ok is false when there is none.
	NextProcessingTimer() (ms int64, ok bool)
}
