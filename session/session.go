// Package session drives one operator, of either shape (engine.Shape: a keyed operator or a
// function), through the call protocol of the C ABI (include/ferry.h, docs/abi.md), in pure Go
// so that the protocol is tested with the race detector: input import and the runs of a call's
// inputs, chunked output (a call that returns more leaves only Next and Close valid until the
// output is drained), snapshot chunk sequencing, restore ordering (until a key group's last
// chunk arrived, process, advance, flush, next and snapshot fail), one caller at a time, and the
// rule that an operator which failed on memory (or lost output) must be closed. capi translates
// C calls into Session calls and nothing else.
package session

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/snapshot"
)

// Host is what a session needs from its caller. Its functions run inside the session's calls,
// one at a time; dst is the destination the caller passed to that call (capi: the C struct the
// output goes to), handed back untouched.
type Host struct {
	// Alloc provides the memory of output batches.
	Alloc engine.Allocator
	// Discard drops the memory Alloc handed out for a batch that was not exported (the call
	// failed). May be nil.
	Discard func()
	// Export hands a filled output batch (Len > 0) to dst; the batch's memory belongs to the
	// caller afterwards. An error wrapping engine.ErrMemory breaks the session: the rows are lost.
	Export func(dst any, b *engine.OutBatch) error
	// Blob copies a snapshot chunk to dst.
	Blob func(dst any, chunk []byte) error
}

// Session is one open operator, of either shape (engine.Shape). Its methods may be called from
// any goroutine, one at a time: a call while another is running fails with engine.ErrState.
// Every error is prefixed with the operator's label.
type Session struct {
	spec  *engine.Spec
	label string
	kind  *engine.Kind
	// keyed is the operator of a keyed kind (keyed.Operator nil otherwise); fn that of a
	// function kind.
	keyed  engine.Keyed
	fn     engine.Function
	state  *engine.KeyedState // nil for an operator without state
	host   Host
	inputs []engine.Importer // one per spec input
	// in is the rows of the Process call in progress: in.Batches[i] is &batches[i], or nil
	// when the call carries no batch of input i.
	in      engine.Inputs
	batches []engine.Batch
	rows    []int // rows per input of the call
	out     engine.OutBatch
	payload []byte // restore scratch

	// exporting: the pending output is an export (Export), which Next continues.
	exporting bool

	busy    atomic.Bool
	closed  bool
	broken  string // why the operator must be closed, once it must
	pending bool   // the last call returned more: only Next and Close are valid

	// snap is the snapshot Snapshot is handing out: written whole by its first call, dropped by
	// any call that may change the state (acquire).
	snap struct {
		chunks [][][]byte // per key group of the range, its encoded chunks; nil: none written
		active bool       // a key group's sequence is under way
		kg     int        // that key group
		chunk  int        // the index of its next chunk
	}
	// restoring maps key groups whose restore has begun but not ended to their next chunk index.
	restoring map[int]int

	// locked: the call in progress holds the state's lock (engine.KeyedState.Lock), which a
	// frozen view's writer takes in turns with it.
	locked bool
	// views are the frozen views of the state (Freeze) by id; views and their ids are guarded by
	// viewsMu, taken by calls on any thread.
	viewsMu  sync.Mutex
	views    map[int64]*view
	lastView int64
}

// view is a frozen view of the state (Freeze), written whole by the first SnapshotView call and
// handed out chunk by chunk.
type view struct {
	mu     sync.Mutex // one SnapshotView at a time
	frozen *engine.Frozen
	header snapshot.Header // without key group and chunk
	chunks [][][]byte      // per key group of the range, its encoded chunks; nil: not written
	kg     int             // the key group being handed out, -1 for none
	chunk  int             // the index of its next chunk
}

// Open builds the operator of spec: a keyed operator, or a function given secrets (what the host
// hands over beside the spec; nil: none). schemas is empty (no schema check) or holds one schema
// per input, each checked against its input when not nil (after the spec: an unsupported spec is
// reported as such whatever the schemas).
func Open(spec *engine.Spec, secrets []byte, schemas []*engine.CSchema, host Host) (*Session, error) {
	if len(schemas) != 0 && len(schemas) != len(spec.Inputs) {
		return nil, fmt.Errorf("%w: %d input schemas for %d inputs (pass none, or one per input)", engine.ErrInvalid, len(schemas), len(spec.Inputs))
	}
	kind, err := engine.KindOf(spec)
	if err != nil {
		return nil, err
	}
	s := &Session{spec: spec, label: spec.Label(), kind: kind, host: host}
	wire := make([]*engine.Input, len(spec.Inputs)) // what crosses the C ABI per input
	for i := range spec.Inputs {
		wire[i] = &spec.Inputs[i]
	}
	switch kind.Shape {
	case engine.ShapeKeyed:
		if secrets != nil {
			return nil, fmt.Errorf("%w: %s: a keyed operator takes no secrets", engine.ErrInvalid, s.label)
		}
		if s.keyed, err = kind.OpenKeyed(spec); err != nil {
			return nil, err
		}
		s.state = s.keyed.Operator.State()
		for i, w := range s.keyed.Wire {
			if w != nil && i < len(wire) {
				wire[i] = w
			}
		}
	case engine.ShapeFunction:
		if len(spec.Inputs) != 1 {
			return nil, fmt.Errorf("%w: %s: a function has one input, the spec declares %d", engine.ErrInvalid, s.label, len(spec.Inputs))
		}
		if s.fn, err = kind.OpenFunction(spec, secrets); err != nil {
			return nil, err
		}
	}
	for i, sc := range schemas {
		if sc != nil {
			if err := wire[i].CheckSchema(sc, i); err != nil {
				s.closeOperator()
				return nil, err
			}
		}
	}
	s.out.Alloc = host.Alloc
	for _, in := range wire {
		im := engine.Importer{Types: in.Types}
		for _, f := range in.Fields {
			im.Names = append(im.Names, f.Name)
		}
		s.inputs = append(s.inputs, im)
	}
	s.batches = make([]engine.Batch, len(wire))
	s.rows = make([]int, len(wire))
	s.in.Batches = make([]*engine.Batch, len(wire))
	return s, nil
}

// closeOperator closes the operator of either shape.
func (s *Session) closeOperator() {
	if s.fn != nil {
		s.fn.Close()
	} else if s.keyed.Operator != nil {
		s.keyed.Operator.Close()
	}
}

// acquire starts a call that may change the state (begin), so it drops the snapshot Snapshot
// wrote; Snapshot, Stats and Output keep it.
func (s *Session) acquire(next bool) error {
	if err := s.begin(next); err != nil {
		return err
	}
	s.snap.chunks, s.snap.active = nil, false
	s.lockState()
	return nil
}

// lockState takes the state's lock for the call in progress; release lets it go.
func (s *Session) lockState() {
	if s.state != nil {
		s.state.Lock()
		s.locked = true
	}
}

// begin starts a call: it refuses a concurrent one, a closed or broken operator and, unless next,
// a call while output is pending.
func (s *Session) begin(next bool) error {
	if !s.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: %w: operator is in use by another thread", s.label, engine.ErrState)
	}
	var err error
	switch {
	case s.closed:
		err = fmt.Errorf("%w: operator is closed", engine.ErrInvalid)
	case s.broken != "":
		err = fmt.Errorf("%w: operator failed earlier (%s); close it and restore from a checkpoint", engine.ErrState, s.broken)
	case s.pending && !next:
		err = fmt.Errorf("%w: output is pending: call ferry_operator_next until more is 0 first", engine.ErrState)
	case !s.pending && next:
		err = fmt.Errorf("%w: no output is pending", engine.ErrState)
	}
	if err != nil {
		s.busy.Store(false)
		return fmt.Errorf("%s: %w", s.label, err)
	}
	return nil
}

// release ends a call; a memory failure or a query failure (a fold stopped mid-batch) breaks
// the operator. It prefixes err with the label.
func (s *Session) release(err error) error {
	defer s.busy.Store(false)
	if s.locked {
		s.locked = false
		s.state.Unlock()
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, engine.ErrMemory) || errors.Is(err, engine.ErrQuery) {
		s.broken = err.Error()
	}
	return fmt.Errorf("%s: %w", s.label, err)
}

// Output returns the operator's output columns (without the RowKind column).
func (s *Session) Output() ([]engine.Field, error) {
	if err := s.begin(false); err != nil {
		return nil, err
	}
	if s.fn != nil {
		return s.fn.Output(), s.release(nil)
	}
	return s.keyed.Operator.Output(), s.release(nil)
}

// Process imports a batch per input for inputs 0 .. len(in)-1 (nil, and every input beyond: no
// batch; each a struct array of the input's columns and the RowKind column, valid for the call
// only) and processes their rows at
// processing time nowMs in the order of pairs, (input, rows) runs: the rows as they arrived
// (engine.Inputs); no pairs: input 0's rows, then input 1's, and so on. A function is called on
// its one input's batch. The first output chunk, if any, goes to dst; Process reports whether
// more output follows (Next). in and pairs are only read during the call; the caller releases
// the batches.
func (s *Session) Process(in []*engine.CArray, pairs []int32, nowMs int64, dst any) (bool, error) {
	if err := s.acquire(false); err != nil {
		return false, err
	}
	more, err := s.process(in, pairs, nowMs, dst)
	return more, s.release(err)
}

func (s *Session) process(in []*engine.CArray, pairs []int32, nowMs int64, dst any) (bool, error) {
	if err := s.checkRestored(); err != nil {
		return false, err
	}
	if len(in) > len(s.inputs) {
		return false, fmt.Errorf("%w: %d batches for %d inputs", engine.ErrInvalid, len(in), len(s.inputs))
	}
	defer func() {
		for i := range s.batches {
			s.batches[i].Forget()
		}
	}()
	given := 0
	for i := range s.in.Batches {
		s.in.Batches[i], s.rows[i] = nil, 0
	}
	for i, a := range in {
		if a == nil {
			continue
		}
		given++
		s.in.Batches[i] = &s.batches[i]
		if err := s.inputs[i].Import(a, &s.batches[i]); err != nil {
			if len(in) == 1 {
				return false, err
			}
			return false, fmt.Errorf("input %d: %w", i, err)
		}
		s.rows[i] = s.batches[i].Len
	}
	s.in.Runs = s.in.Runs[:0]
	for k := 0; k+1 < len(pairs); k += 2 {
		s.in.Runs = append(s.in.Runs, engine.Run{Input: int(pairs[k]), Rows: int(pairs[k+1])})
	}
	if len(pairs) == 0 {
		for i, n := range s.rows {
			if n > 0 {
				s.in.Runs = append(s.in.Runs, engine.Run{Input: i, Rows: n})
			}
		}
	}
	if err := engine.CheckRuns(s.in.Runs, s.rows); err != nil {
		return false, err
	}
	if given == 0 {
		return false, fmt.Errorf("%w: no batch: a call carries at least one", engine.ErrInvalid)
	}
	var more bool
	var err error
	if s.fn != nil {
		more, err = s.fn.Call(s.in.Batches[0], &s.out)
	} else {
		more, err = s.keyed.Operator.Process(&s.in, nowMs, &s.out)
	}
	return s.emit(dst, more, err)
}

// Advance moves event time to watermarkMs and processing time to nowMs; output goes to dst.
func (s *Session) Advance(watermarkMs, nowMs int64, dst any) (bool, error) {
	if err := s.acquire(false); err != nil {
		return false, err
	}
	err := s.checkRestored()
	more := false
	if err == nil && s.fn == nil { // a function holds nothing that time releases
		more, err = s.keyed.Operator.Advance(watermarkMs, nowMs, &s.out)
		more, err = s.emit(dst, more, err)
	}
	return more, s.release(err)
}

// Flush emits everything the operator buffers to dst.
func (s *Session) Flush(nowMs int64, dst any) (bool, error) {
	if err := s.acquire(false); err != nil {
		return false, err
	}
	err := s.checkRestored()
	more := false
	if err == nil && s.fn == nil { // a function buffers nothing
		more, err = s.keyed.Operator.Flush(nowMs, &s.out)
		more, err = s.emit(dst, more, err)
	}
	return more, s.release(err)
}

// Next hands the next chunk of pending output to dst.
func (s *Session) Next(dst any) (bool, error) {
	if err := s.acquire(true); err != nil {
		return false, err
	}
	s.pending = false
	var more bool
	var err error
	switch {
	case s.exporting:
		more, err = s.keyed.FlinkState.ExportState(&s.out, false)
		s.exporting = more && err == nil
	case s.fn != nil:
		more, err = s.fn.Continue(&s.out)
	default:
		more, err = s.keyed.Operator.Continue(&s.out)
	}
	more, err = s.emit(dst, more, err)
	if err != nil && s.broken == "" {
		// The rest of the output is lost: the operator's changelog can no longer be complete.
		s.broken = err.Error()
	}
	return more, s.release(err)
}

// emit finishes an output call to dst: it exports the chunk the operator wrote, if any, and
// records whether more follows.
func (s *Session) emit(dst any, more bool, err error) (bool, error) {
	if err == nil && s.out.Len > 0 {
		if err = s.host.Export(dst, &s.out); err != nil && more {
			s.broken = err.Error() // the rest of the output cannot follow
		}
	}
	s.out.Len = 0
	if err != nil {
		if s.host.Discard != nil {
			s.host.Discard()
		}
		return false, err
	}
	s.pending = more
	return more, nil
}

// checkRestored fails while a key group's restore is missing chunks: the state is incomplete.
func (s *Session) checkRestored() error {
	for kg, next := range s.restoring {
		return fmt.Errorf("%w: the restore of key group %d stopped after chunk %d of an unfinished sequence", engine.ErrData, kg, next-1)
	}
	return nil
}

// checkKeyGroup fails with ErrInvalid outside the operator's key-group range.
func (s *Session) checkKeyGroup(kg int) error {
	if start, end := s.spec.KeyGroupRange(); kg < start || kg > end {
		return fmt.Errorf("%w: key group %d outside this operator's range [%d, %d]", engine.ErrInvalid, kg, start, end)
	}
	return nil
}

func (s *Session) header(kg int) snapshot.Header {
	return snapshot.Header{Kind: s.spec.Kind, MaxParallelism: s.spec.MaxParallelism, KeyGroup: kg, Fingerprint: s.state.Fingerprint()}
}

// Snapshot hands the next chunk of key group kg's state (snapshot package format) to dst
// (Host.Blob) and reports true, or reports false when the sequence ended: the call after the
// last chunk, or the first call for a key group without state. Calling for another key group
// abandons an unfinished sequence; the state must not change between the calls of one sequence.
func (s *Session) Snapshot(kg int, dst any) (bool, error) {
	if err := s.begin(false); err != nil {
		return false, err
	}
	chunk, err := s.snapshot(kg)
	if err == nil && chunk != nil {
		err = s.host.Blob(dst, chunk)
	}
	if err != nil {
		s.snap.active = false
	}
	return err == nil && chunk != nil, s.release(err)
}

func (s *Session) snapshot(kg int) ([]byte, error) {
	if err := s.checkRestored(); err != nil {
		return nil, err
	}
	if err := s.checkKeyGroup(kg); err != nil {
		return nil, err
	}
	if s.state == nil {
		return nil, nil
	}
	sn := &s.snap
	if sn.chunks == nil {
		if err := s.snapshottable(); err != nil {
			return nil, err
		}
		chunks, err := s.writeSnapshot(s.header(0), s.state.Snapshot)
		if err != nil {
			return nil, err
		}
		sn.chunks = chunks
	}
	if !sn.active || sn.kg != kg {
		sn.active, sn.kg, sn.chunk = true, kg, 0
	}
	start, _ := s.spec.KeyGroupRange()
	chunks := sn.chunks[kg-start]
	if sn.chunk == len(chunks) {
		sn.active = false // the key group's last chunk went out, or it holds no state
		return nil, nil
	}
	sn.chunk++
	return chunks[sn.chunk-1], nil
}

// writeSnapshot writes the chunks of every key group of the range (pass:
// engine.KeyedState.Snapshot or engine.Frozen.Snapshot; base: the chunks' header),
// compressing them on up to maxEncoders goroutines while the state is read. Payload buffers
// go back to the pass once compressed.
func (s *Session) writeSnapshot(base snapshot.Header, pass func(int, func(int, []byte, bool) ([]byte, error)) error) ([][][]byte, error) {
	start, end := s.spec.KeyGroupRange()
	chunks := make([][][]byte, end-start+1)
	type job struct {
		hd      snapshot.Header
		payload []byte
	}
	workers := min(runtime.GOMAXPROCS(0), maxEncoders)
	var (
		mu       sync.Mutex // guards chunks and panicked
		panicked any        // an encoder's panic, raised again on the caller's goroutine
		wg       sync.WaitGroup
		jobs     = make(chan job, 2*workers)
		free     = make(chan []byte, end-start+1+2*workers) // compressed payloads' buffers
	)
	for range workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil { // unrecovered, it would end the process
					mu.Lock()
					panicked = r
					mu.Unlock()
					for range jobs {
					}
				}
			}()
			for j := range jobs {
				c := snapshot.Encode(nil, j.hd, j.payload)
				mu.Lock()
				chunks[j.hd.KeyGroup-start][j.hd.Chunk] = c
				mu.Unlock()
				select {
				case free <- j.payload[:0]:
				default:
				}
			}
		})
	}
	emit := func(kg int, payload []byte, last bool) ([]byte, error) {
		if len(payload) > snapshot.MaxPayload {
			return nil, fmt.Errorf("%w: key group %d: the state of one key exceeds %d bytes, more than a state chunk can hold", engine.ErrUnsupported, kg, snapshot.MaxPayload)
		}
		hd := base
		hd.KeyGroup, hd.Last = kg, last
		mu.Lock()
		hd.Chunk = len(chunks[kg-start])
		chunks[kg-start] = append(chunks[kg-start], nil)
		mu.Unlock()
		jobs <- job{hd, payload}
		if last {
			return nil, nil
		}
		select {
		case b := <-free:
			return b, nil
		default:
			return nil, nil
		}
	}
	err := func() error {
		defer func() { // also when the pass panics: no encoder is left waiting
			close(jobs)
			wg.Wait()
		}()
		return pass(snapshot.MaxChunk, emit)
	}()
	if panicked != nil {
		panic(panicked)
	}
	if err != nil {
		return nil, err
	}
	return chunks, nil
}

// Freeze takes a consistent view of the state for a checkpoint (engine.KeyedState.Freeze), in
// time independent of the state's size (except for a kind that writes at the freeze:
// engine.Keyed.WritesAtFreeze), and returns its id for SnapshotView and ReleaseView,
// which may run on another thread while calls go on. Every call that may read or change the
// state then takes turns with the view's writer.
func (s *Session) Freeze() (int64, error) {
	if err := s.begin(false); err != nil {
		return 0, err
	}
	v := &view{kg: -1}
	err := s.checkRestored()
	if err == nil && s.state != nil {
		if err = s.snapshottable(); err == nil {
			v.header = s.header(0)
			v.frozen = s.state.Freeze()
		}
	}
	if err != nil {
		return 0, s.release(err)
	}
	if v.frozen == nil {
		start, end := s.spec.KeyGroupRange()
		v.chunks = make([][][]byte, end-start+1) // no state: every key group empty
	} else if s.keyed.WritesAtFreeze {
		if v.chunks, err = s.writeSnapshot(v.header, v.frozen.Snapshot); err != nil {
			return 0, s.release(err)
		}
	}
	s.viewsMu.Lock()
	if s.views == nil {
		s.views = map[int64]*view{}
	}
	s.lastView++
	id := s.lastView
	s.views[id] = v
	s.viewsMu.Unlock()
	return id, s.release(nil)
}

// SnapshotView is Snapshot for the view Freeze returned as id, on any thread, also while other
// calls run: the first call writes the whole view (compressing it as Snapshot does), later calls
// hand out its chunks. Calls for one view run one at a time.
func (s *Session) SnapshotView(id int64, kg int, dst any) (bool, error) {
	s.viewsMu.Lock()
	v := s.views[id]
	s.viewsMu.Unlock()
	if v == nil {
		return false, fmt.Errorf("%s: %w: no open state view %d (released, or the operator closed)", s.label, engine.ErrInvalid, id)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	start, end := s.spec.KeyGroupRange()
	if kg < start || kg > end {
		return false, fmt.Errorf("%s: %w: key group %d outside the operator's range [%d, %d]", s.label, engine.ErrInvalid, kg, start, end)
	}
	if v.chunks == nil {
		chunks, err := s.writeSnapshot(v.header, v.frozen.Snapshot)
		if err != nil {
			return false, fmt.Errorf("%s: %w", s.label, err)
		}
		v.chunks = chunks
	}
	if v.kg != kg {
		v.kg, v.chunk = kg, 0
	}
	chunks := v.chunks[kg-start]
	if v.chunk == len(chunks) {
		v.kg = -1
		return false, nil
	}
	if err := s.host.Blob(dst, chunks[v.chunk]); err != nil {
		return false, fmt.Errorf("%s: %w", s.label, err)
	}
	v.chunk++
	return true, nil
}

// ReleaseView ends the view Freeze returned as id, written or not, on any thread; a write in
// progress fails. Releasing a view twice, or after Close, does nothing.
func (s *Session) ReleaseView(id int64) {
	s.viewsMu.Lock()
	v := s.views[id]
	delete(s.views, id)
	s.viewsMu.Unlock()
	if v != nil && v.frozen != nil {
		v.frozen.Release()
	}
}

// snapshottable fails while the kind says its state cannot be written (engine.Keyed.Snapshottable).
func (s *Session) snapshottable() error {
	if s.keyed.Snapshottable == nil {
		return nil
	}
	return s.keyed.Snapshottable()
}

// maxEncoders bounds the goroutines that compress one snapshot.
const maxEncoders = 4

// Restore restores one chunk Snapshot wrote for key group kg (data is read during the call only).
// The key group must lie in the operator's range; its first chunk requires that it holds no
// state, later chunks must follow in order. A chunk that fails leaves none of its state behind.
func (s *Session) Restore(kg int, data []byte) error {
	if err := s.acquire(false); err != nil {
		return err
	}
	return s.release(s.restore(kg, data))
}

func (s *Session) restore(kg int, data []byte) error {
	if err := s.checkKeyGroup(kg); err != nil {
		return err
	}
	if s.state == nil {
		return fmt.Errorf("%w: state blob for key group %d: operator kind %s keeps no state", engine.ErrData, kg, s.spec.Kind)
	}
	hd, payload, err := snapshot.Decode(data, s.header(kg), s.payload)
	if err != nil {
		return s.earlierLayout(kg, data, err)
	}
	next, restoring := s.restoring[kg]
	switch {
	case hd.Chunk == 0 && (restoring || s.state.HasState(kg)):
		return fmt.Errorf("%w: key group %d already holds state", engine.ErrInvalid, kg)
	case hd.Chunk > 0 && (!restoring || hd.Chunk != next):
		return fmt.Errorf("%w: state blob for key group %d: chunk %d out of sequence (expected chunk %d)", engine.ErrData, kg, hd.Chunk, next)
	}
	if err := s.state.RestoreKeyGroup(kg, payload); err != nil {
		return err
	}
	if hd.Last {
		delete(s.restoring, kg)
	} else {
		if s.restoring == nil {
			s.restoring = map[int]int{}
		}
		s.restoring[kg] = hd.Chunk + 1
	}
	return nil
}

// earlierLayout returns err, snapshot.Decode's refusal of chunk data, or, when data is a valid
// chunk of an earlier form of the operator's state (engine.KeyedState.EarlierLayouts), the
// refusal naming that form.
func (s *Session) earlierLayout(kg int, data []byte, err error) error {
	for _, l := range s.state.EarlierLayouts() {
		want := s.header(kg)
		want.Fingerprint = l.Fingerprint
		if _, _, e := snapshot.Decode(data, want, nil); e == nil {
			return fmt.Errorf("%w: state blob for key group %d: %s", engine.ErrData, kg, l.Refusal)
		}
	}
	return err
}

// Import hands the operator keyed state Flink's own operator left in a checkpoint or savepoint
// (engine.FlinkState): schema and in hold one row per key, in the operator's import layout,
// then the RowKind column; both are read during the call only. An operator kind that does not
// import fails with engine.ErrUnsupported.
func (s *Session) Import(schema *engine.CSchema, in *engine.CArray) error {
	if err := s.acquire(false); err != nil {
		return err
	}
	return s.release(s.importState(schema, in))
}

func (s *Session) importState(schema *engine.CSchema, in *engine.CArray) error {
	if err := s.checkRestored(); err != nil {
		return err
	}
	im := s.keyed.FlinkState
	if im == nil || s.state == nil {
		return fmt.Errorf("%w: operator kind %s does not import the state of Flink's operator", engine.ErrUnsupported, s.spec.Kind)
	}
	types, err := im.ImportTypes()
	if err != nil {
		return err
	}
	wire := engine.Input{Types: types}
	for i := range types {
		wire.Fields = append(wire.Fields, engine.FieldSpec{Name: fmt.Sprintf("import_%d", i)})
	}
	if err := wire.CheckSchema(schema, 0); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	imp := engine.Importer{Types: types}
	for _, f := range wire.Fields {
		imp.Names = append(imp.Names, f.Name)
	}
	var batch engine.Batch
	defer batch.Forget()
	if err := imp.Import(in, &batch); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return im.ImportState(&batch)
}

// Export writes the operator's keyed state in the form Flink's own operator keeps
// (engine.FlinkState) to dst, in chunks: while more is true, Next hands out the rest. An
// operator kind that does not export fails with engine.ErrUnsupported.
func (s *Session) Export(dst any) (bool, error) {
	if err := s.begin(false); err != nil { // the state does not change: a snapshot written stays
		return false, err
	}
	s.lockState() // the export hands out ids (engine.KeyedState.LiveIDs)
	more, err := s.export(dst)
	return more, s.release(err)
}

func (s *Session) export(dst any) (bool, error) {
	if err := s.checkRestored(); err != nil {
		return false, err
	}
	ex := s.keyed.FlinkState
	if ex == nil || s.state == nil {
		return false, fmt.Errorf("%w: operator kind %s does not write the state of Flink's operator", engine.ErrUnsupported, s.spec.Kind)
	}
	if err := s.snapshottable(); err != nil {
		return false, err
	}
	more, err := ex.ExportState(&s.out, true)
	s.exporting = more && err == nil
	return s.emit(dst, more, err)
}

// Stats reports the figures of the operator's state (zero for a stateless operator).
func (s *Session) Stats() (engine.Stats, error) {
	if err := s.begin(false); err != nil {
		return engine.Stats{}, err
	}
	st := engine.Stats{NextTimerMs: math.MaxInt64}
	if s.state != nil {
		st = s.state.Stats()
	}
	return st, s.release(nil)
}

// Abandon frees an operator whose call panicked (the host poisoned it): the state it was in is
// unknown, so it ignores the call flags the panic left set, drops the state and closes the
// kind's operator. A panic there is the caller's to recover. No other call may follow.
func (s *Session) Abandon() {
	s.closed = true
	s.releaseViews()
	defer s.drop()
	s.closeOperator()
}

// drop forgets the operator and everything of it.
func (s *Session) drop() {
	s.releaseViews()
	s.keyed, s.fn, s.state, s.payload, s.snap.chunks = engine.Keyed{}, nil, nil, nil, nil
}

// releaseViews ends every open view; a write in progress stops at its next stripe. It runs before
// the operator closes, so no writer reads a closed operator's state.
func (s *Session) releaseViews() {
	if s.locked { // a call panicked holding the state's lock
		s.locked = false
		s.state.Unlock()
	}
	s.viewsMu.Lock()
	for id, v := range s.views {
		if v.frozen != nil {
			v.frozen.Release()
		}
		delete(s.views, id)
	}
	s.viewsMu.Unlock()
}

// Close frees the operator; it is valid in every state but during another call, also while
// output is pending (the rest is dropped) and after a failure.
func (s *Session) Close() error {
	if !s.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: %w: operator is in use by another thread", s.label, engine.ErrState)
	}
	defer s.busy.Store(false)
	if s.closed {
		return fmt.Errorf("%s: %w: operator is closed", s.label, engine.ErrInvalid)
	}
	s.closed = true
	s.releaseViews()
	s.closeOperator()
	s.drop()
	return nil
}
