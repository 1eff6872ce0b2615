package engine

// Operator is one native operator instance with the lifecycle of the C ABI (DESIGN.md §3).
// An operator is used by one thread at a time. Input batches are views valid only during the
// call; output goes into out, whose memory comes from out's Allocator and belongs to the caller.
// An operator validates its whole input before it changes any state, so a returned error leaves
// its state as it was — except an error wrapping ErrMemory, after which the operator must be
// closed (the host restarts from its last checkpoint).
type Operator interface {
	// Output lists the output columns, without the RowKind column.
	Output() []Field
	// Process consumes one batch at processing time nowMs and appends its changelog to out.
	Process(in *Batch, nowMs int64, out *OutBatch) error
	// Advance moves event time to watermarkMs and processing time to nowMs.
	Advance(watermarkMs, nowMs int64, out *OutBatch) error
	// Flush emits everything the operator buffers.
	Flush(nowMs int64, out *OutBatch) error
	// SnapshotKeyGroup appends the state of key group kg to dst; it appends nothing when the key
	// group holds no state.
	SnapshotKeyGroup(kg int, dst []byte) ([]byte, error)
	// RestoreKeyGroup loads key group kg from a payload SnapshotKeyGroup wrote.
	RestoreKeyGroup(kg int, payload []byte) error
	// Close frees the operator's state.
	Close()
}
