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
	// SnapshotKeyGroup appends state of key group kg to dst, starting at position from of the key
	// group's snapshot order and stopping once dst has grown by at least limit bytes. It returns
	// the position to continue from, or -1 when the key group is complete; a key group without
	// state appends nothing. State must not change between the calls of one key group.
	SnapshotKeyGroup(kg, from int, dst []byte, limit int) (next int, out []byte, err error)
	// RestoreKeyGroup adds to key group kg the state of one payload SnapshotKeyGroup wrote. On
	// error the payload's part of the state is rolled back.
	RestoreKeyGroup(kg int, payload []byte) error
	// HasState reports whether key group kg holds any state.
	HasState(kg int) bool
	// Stats reports the figures of the state, without a pass over it.
	Stats() Stats
	// Close frees the operator's state.
	Close()
}

// Stats are the figures of an operator's state that the host reports as metrics.
type Stats struct {
	Keys       int64 // keys (groups) the state holds
	StateBytes int64 // estimated bytes of memory the state owns
}
