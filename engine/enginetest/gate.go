package enginetest

import (
	"encoding/json"

	"github.com/ferrystream/ferry/engine"
)

// Gate is a test operator kind whose Process waits until the test lets it through, so a test can
// hold a call inside an operator (to see what other callers get meanwhile). Its operators are
// Fanout operators with one copy.
type Gate struct {
	Entered chan struct{} // receives one value when a Process starts waiting
	Release chan struct{} // send one value to let the waiting Process continue
}

// NewGate returns a gate with unbuffered channels.
func NewGate() *Gate { return &Gate{Entered: make(chan struct{}), Release: make(chan struct{})} }

// Open opens an operator of the gate's kind (a keyed kind whose params, any JSON, are ignored).
func (g *Gate) Open(spec *engine.Spec, _ *json.RawMessage) (engine.Keyed, error) {
	op, err := OpenFanout(spec, &FanoutParams{Copies: 1})
	if err != nil {
		return engine.Keyed{}, err
	}
	op.Operator = &gated{Fanout: op.Operator.(*Fanout), gate: g}
	return op, nil
}

type gated struct {
	*Fanout
	gate *Gate
}

func (o *gated) Process(in *engine.Inputs, now int64, out *engine.OutBatch) (bool, error) {
	o.gate.Entered <- struct{}{}
	<-o.gate.Release
	return o.Fanout.Process(in, now, out)
}
