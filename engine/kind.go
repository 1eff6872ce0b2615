package engine

import (
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// Shape is the plug-in shape of an operator kind: what the host may call on its operators.
type Shape uint8

const (
	// ShapeKeyed is a stateful keyed operator (KeyedOperator): the rows of its inputs in the order
	// they arrived, keyed state with its timers (KeyedState), snapshot and restore per key group,
	// and, as the kind offers, the keyed state of Flink's own operator imported and exported.
	ShapeKeyed Shape = iota + 1
	// ShapeFunction is a stateless function of one input (Function): open, call, close.
	ShapeFunction
)

func (s Shape) String() string {
	switch s {
	case ShapeKeyed:
		return "keyed operator"
	case ShapeFunction:
		return "function"
	}
	return fmt.Sprintf("shape %d", uint8(s))
}

// Kind describes one operator kind: its name in specs, its shape, the type of its spec params and
// how its operators open. A kind's package registers its Kind once, in an init function
// (RegisterKeyed, RegisterFunction); the session dispatches on Shape.
type Kind struct {
	Name  string
	Shape Shape
	// Params is the kind's params struct (the spec's "params", decoded strictly before open).
	Params reflect.Type
	// Secrets is the struct of what a function kind needs from the host beside its spec
	// (credentials, connection strings), decoded from the open call's secrets; nil: none.
	Secrets reflect.Type

	openKeyed    func(spec *Spec) (Keyed, error)
	openFunction func(spec *Spec, secrets []byte) (Function, error)
}

// KeyedOperator is an operator of the keyed shape, used by one goroutine at a time.
//
// Input batches are views valid only during the call: an operator that needs rows after the
// call returns (to continue its output later, or as state) copies them. Output goes into out,
// whose memory comes from out's Allocator and belongs to the caller once the call returns.
//
// Output comes in chunks: a call that has more output than fits one chunk fills out with the
// first and returns more = true; the caller then calls Continue until it returns false, and makes
// no other call in between. An operator whose output is bounded by a small multiple of its input
// (the group aggregate: at most two rows per input row) emits one chunk per call; others emit at
// most Spec.ChunkRows rows per chunk.
//
// An operator validates its whole input before it changes any state, so a returned error leaves
// its state as it was, except an error wrapping ErrMemory or ErrQuery, after which the operator
// must be closed (the host restarts from its last checkpoint).
type KeyedOperator interface {
	// Output lists the output columns, without the RowKind column.
	Output() []Field
	// Process consumes the rows of one call (Inputs: a batch per input, in arrival order) at
	// processing time nowMs and writes the first chunk of its output to out.
	Process(in *Inputs, nowMs int64, out *OutBatch) (more bool, err error)
	// Advance moves event time to watermarkMs and processing time to nowMs (firing timers).
	// watermarkMs math.MinInt64 is a processing-time callback: it leaves event time as it is.
	Advance(watermarkMs, nowMs int64, out *OutBatch) (more bool, err error)
	// Flush emits everything the operator buffers.
	Flush(nowMs int64, out *OutBatch) (more bool, err error)
	// Continue writes the next chunk of the output of the last call that returned more.
	Continue(out *OutBatch) (more bool, err error)
	// State returns the operator's keyed state; nil for an operator that keeps nothing across a
	// checkpoint (the local aggregate, whose bundle ends before every barrier). Snapshot,
	// restore and the state's figures go through it.
	State() *KeyedState
	// Close frees the operator's state.
	Close()
}

// Keyed is an opened operator of the keyed shape: the verbs every keyed operator has (Operator)
// and, as values, what only some kinds offer (nil: the kind offers none).
type Keyed struct {
	Operator KeyedOperator
	// Wire holds, per input, the columns its batches cross the C ABI as when they are not the
	// spec's input (the global aggregate fed frames of partial rows, docs/abi.md#frames): the
	// host checks schemas against, and imports batches as, Wire[i] when it is not nil. Only
	// Fields and Types are read.
	Wire []*Input
	// FlinkState takes over and writes the keyed state of Flink's own operator.
	FlinkState FlinkState
	// Snapshottable fails, wrapping ErrState, while the state cannot be written (snapshot or
	// export): input rows queued outside the state (the host flushes before every barrier), or
	// state whose bytes the host has not handed over yet (the window join's rows).
	Snapshottable func() error
	// WritesAtFreeze: the state's payload reads data the next call drops without handing out the
	// keys it belongs to (the window join's row bytes, sent for one snapshot), which a frozen view
	// (KeyedState.Freeze) would miss, so the host writes a frozen view whole when it freezes it.
	WritesAtFreeze bool
}

// FlinkState is what a keyed kind offers to switch Ferry on or off across a savepoint
// (docs/state.md, "Switching Ferry on or off"): it takes over the keyed state Flink's own
// operator left in a checkpoint or savepoint, and writes its own state in the form Flink's
// operator keeps, for a savepoint Flink's operator restores.
type FlinkState interface {
	// ImportTypes is the layout of the rows ImportState takes: one row per key.
	ImportTypes() ([]Type, error)
	// ImportState takes over the state of the keys of in, before the first Process. It fails,
	// changing nothing, on a key that holds state already and on state Ferry would not hold
	// exactly as Flink did.
	ImportState(in *Batch) error
	// ExportTypes is the layout of the rows ExportState writes: one per key, the key first as the
	// bytes of Flink's BinaryRowData.
	ExportTypes() ([]Type, error)
	// ExportState writes the next chunk of the export: first starts over; more reports that rows
	// follow. The state does not change between the calls of one export.
	ExportState(out *OutBatch, first bool) (more bool, err error)
}

// Function is an operator of the function shape: a stateless function of its one input, used by
// one goroutine at a time. Batches and output follow KeyedOperator's rules.
type Function interface {
	// Output lists the output columns, without the RowKind column.
	Output() []Field
	// Call consumes one batch of the input and writes the first chunk of its output to out.
	Call(in *Batch, out *OutBatch) (more bool, err error)
	// Continue writes the next chunk of the output of the last call that returned more.
	Continue(out *OutBatch) (more bool, err error)
	// Close frees what the function holds (connections, caches).
	Close()
}

// Inputs are the rows of one Process call: one batch per input of the spec (nil for an input the
// call carries no batch of; a call carries at least one, so the one batch of a one-input kind is
// never nil) and Runs, the order the rows arrived in: run k is the next Runs[k].Rows rows of input
// Runs[k].Input. The runs use every batch's rows exactly once, in order (CheckRuns).
type Inputs struct {
	Batches []*Batch
	Runs    []Run
}

// Run is a run of consecutive rows of one input within a call.
type Run struct {
	Input int // an index into Spec.Inputs
	Rows  int // > 0
}

// Of returns the Inputs of a call that carries one batch, b of input (of n inputs), in one run.
func Of(input, n int, b *Batch) *Inputs {
	in := &Inputs{Batches: make([]*Batch, n)}
	in.Batches[input] = b
	if b.Len > 0 {
		in.Runs = []Run{{Input: input, Rows: b.Len}}
	}
	return in
}

// Each calls f with every run in order, as a view of the run's rows (Batch.Slice, valid during
// the call to f only), and stops at the first error.
func (in *Inputs) Each(f func(input int, b *Batch) error) error {
	var next [maxInputs]int
	var view Batch
	for _, r := range in.Runs {
		in.Batches[r.Input].Slice(&view, next[r.Input], r.Rows)
		next[r.Input] += r.Rows
		if err := f(r.Input, &view); err != nil {
			return err
		}
	}
	return nil
}

// maxInputs bounds the inputs of a spec.
const maxInputs = 64

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

// The registry of operator kinds: each kind's package registers itself in an init function, and
// the C ABI imports the kind packages (capi/kinds.go).
var registry struct {
	sync.RWMutex
	kinds map[string]*Kind
}

// RegisterKeyed registers a keyed kind whose spec params decode into P (strictly: unknown fields
// are refused) before open validates them. It panics when the name is taken.
func RegisterKeyed[P any](name string, open func(spec *Spec, params *P) (Keyed, error)) {
	register(&Kind{
		Name:   name,
		Shape:  ShapeKeyed,
		Params: reflect.TypeFor[P](),
		openKeyed: func(spec *Spec) (Keyed, error) {
			var p P
			if err := spec.DecodeParams(&p); err != nil {
				return Keyed{}, err
			}
			return open(spec, &p)
		},
	})
}

// RegisterFunction registers a function kind whose spec params decode into P and whose secrets
// (what the host hands over at open beside the spec: credentials never belong in a spec, a log
// or an error) decode into S; open gets nil secrets when the host passed none (a spec check).
// It panics when the name is taken.
func RegisterFunction[P, S any](name string, open func(spec *Spec, params *P, secrets *S) (Function, error)) {
	register(&Kind{
		Name:    name,
		Shape:   ShapeFunction,
		Params:  reflect.TypeFor[P](),
		Secrets: reflect.TypeFor[S](),
		openFunction: func(spec *Spec, secrets []byte) (Function, error) {
			var p P
			if err := spec.DecodeParams(&p); err != nil {
				return nil, err
			}
			var s *S
			if secrets != nil {
				s = new(S)
				if StrictDecode(secrets, s) != nil {
					// no detail: the decoder's message may quote the secrets
					return nil, fmt.Errorf("%w: secrets: not a JSON object of the fields %s takes", ErrInvalid, name)
				}
			}
			return open(spec, &p, s)
		},
	})
}

func register(k *Kind) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.kinds[k.Name]; dup {
		panic("engine: operator kind " + k.Name + " registered twice")
	}
	if registry.kinds == nil {
		registry.kinds = map[string]*Kind{}
	}
	registry.kinds[k.Name] = k
}

// Kinds lists the registered operator kinds, sorted by name.
func Kinds() []*Kind {
	registry.RLock()
	defer registry.RUnlock()
	ks := make([]*Kind, 0, len(registry.kinds))
	for _, k := range registry.kinds {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b *Kind) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return ks
}

// KindOf returns the registered kind of spec. An unregistered kind is ErrUnsupported (the host
// keeps Flink's operator).
func KindOf(spec *Spec) (*Kind, error) {
	registry.RLock()
	k, ok := registry.kinds[spec.Kind]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: spec: kind: %q is not a native operator", ErrUnsupported, spec.Kind)
	}
	return k, nil
}

// OpenKeyed opens an operator of a keyed kind; the kind's errors are prefixed with the operator's
// label.
func (k *Kind) OpenKeyed(spec *Spec) (Keyed, error) {
	if k.Shape != ShapeKeyed {
		return Keyed{}, fmt.Errorf("%w: kind %s is a %s, not a keyed operator", ErrInvalid, k.Name, k.Shape)
	}
	op, err := k.openKeyed(spec)
	if err != nil {
		return Keyed{}, fmt.Errorf("%s: %w", spec.Label(), err)
	}
	if op.Operator == nil {
		panic("engine: kind " + k.Name + " opened no operator")
	}
	return op, nil
}

// OpenFunction opens a function of a function kind with the host's secrets (nil: none, a spec
// check); the kind's errors are prefixed with the operator's label.
func (k *Kind) OpenFunction(spec *Spec, secrets []byte) (Function, error) {
	if k.Shape != ShapeFunction {
		return nil, fmt.Errorf("%w: kind %s is a %s, not a function", ErrInvalid, k.Name, k.Shape)
	}
	fn, err := k.openFunction(spec, secrets)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Label(), err)
	}
	return fn, nil
}

// OpenKeyed opens an operator of spec's kind, which must be a keyed kind.
func OpenKeyed(spec *Spec) (Keyed, error) {
	k, err := KindOf(spec)
	if err != nil {
		return Keyed{}, err
	}
	return k.OpenKeyed(spec)
}
