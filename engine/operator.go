package engine

import "fmt"

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

// Run is a run of consecutive rows of one input within a call that carries the rows of several
// inputs in the order they arrived (RunsProcessor).
type Run struct {
	Input int // an index into Spec.Inputs
	Rows  int // > 0
}

// RunsProcessor is implemented by an operator whose results depend on how its inputs interleave
// (the interval join): ProcessRuns consumes the rows of every input in one call, in arrival
// order, as if each run were processed alone, in order, by Process. in holds one batch per input
// (nil: no rows); runs were checked by CheckRuns.
type RunsProcessor interface {
	ProcessRuns(in []*Batch, runs []Run, nowMs int64, out *OutBatch) (more bool, err error)
}

// CheckRuns checks that runs use the rows of every input exactly once, in order: each run names
// an input below len(rows) and at least one row, and the rows of input i's runs add up to
// rows[i].
func CheckRuns(runs []Run, rows []int) error {
	used := make([]int, len(rows))
	for k, r := range runs {
		switch {
		case r.Input < 0 || r.Input >= len(rows):
			return fmt.Errorf("%w: run %d: input %d out of range (the operator has %d inputs)", ErrInvalid, k, r.Input, len(rows))
		case r.Rows <= 0:
			return fmt.Errorf("%w: run %d: %d rows, want at least 1", ErrInvalid, k, r.Rows)
		case r.Rows > rows[r.Input]-used[r.Input]:
			return fmt.Errorf("%w: run %d: %d rows of input %d, but only %d of its %d rows are left", ErrInvalid, k, r.Rows, r.Input, rows[r.Input]-used[r.Input], rows[r.Input])
		}
		used[r.Input] += r.Rows
	}
	for i, n := range rows {
		if used[i] != n {
			return fmt.Errorf("%w: the runs use %d of input %d's %d rows", ErrInvalid, used[i], i, n)
		}
	}
	return nil
}

// WireInputs is implemented by an operator whose batches on the C ABI are not the rows its spec
// declares (the global aggregate fed frames of partial rows, docs/abi.md#frames): the host checks
// input schemas against, and imports batches as, WireInput(i) instead of Spec.Inputs[i] when it
// is not nil. Only Fields and Types of the result are read.
type WireInputs interface {
	WireInput(i int) *Input
}

// StateImporter is implemented by an operator that can take over the keyed state Flink's own
// operator left in a checkpoint or savepoint (docs/state.md, "Switching Ferry on or off"): the
// host reads it from Flink's keyed state backend and hands it over as rows of ImportTypes, one
// row per key, before the first Process. ImportState fails, changing nothing, on a key that
// holds state already and on state Ferry would not hold exactly as Flink did.
type StateImporter interface {
	ImportTypes() ([]Type, error)
	ImportState(in *Batch) error
}

// StateExporter is implemented by an operator that can write its keyed state in the form Flink's
// own operator keeps (docs/state.md, "Switching Ferry on or off"), for a savepoint Flink's
// operator restores: rows of ExportTypes, one per key, the key first as the bytes of Flink's
// BinaryRowData. ExportState(out, true) starts over, ExportState(out, false) continues; more
// reports that rows follow. The state must not change between the calls of one export.
type StateExporter interface {
	ExportTypes() ([]Type, error)
	ExportState(out *OutBatch, first bool) (more bool, err error)
}

// Buffering is implemented by an operator that may hold input rows across calls (the global
// aggregate fed frames queues rows until a bundle is complete): Buffered is the number of rows
// held. State does not cover them, so a snapshot is refused while Buffered > 0; the host runs
// Flush before every checkpoint barrier, as Flink's bundle operators do.
type Buffering interface {
	Buffered() int
}

// SnapshotPreparer is implemented by an operator whose state needs something from the host
// before a snapshot (the window join: the bytes of the rows the host holds): BeforeSnapshot
// fails, wrapping ErrState, while it is missing. The host calls it before writing a snapshot.
type SnapshotPreparer interface {
	BeforeSnapshot() error
}

// Connector is implemented by an operator that talks to an external system (the JDBC lookup's
// PostgreSQL): the host hands it the connection and credentials after open, through their own
// call rather than the spec, so that they never reach logs or error messages. Until Connect
// succeeds, Process fails with ErrState. Errors never contain password.
type Connector interface {
	// Connect connects to dsn (a libpq/pgx connection string without credentials) as user with
	// password; an empty user or password keeps the DSN's (or the driver's default).
	Connect(dsn, user, password string) error
}
