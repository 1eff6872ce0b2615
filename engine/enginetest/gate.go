package enginetest

import "github.com/ferrystream/ferry/engine"

// Gate is a test operator kind whose Process waits until the test lets it through, so a test can
// hold a call inside an operator (to see what other callers get meanwhile). Its operators are
// Fanout operators with one copy.
type Gate struct {
	Entered chan struct{} // receives one value when a Process starts waiting
	Release chan struct{} // send one value to let the waiting Process continue
}

// NewGate returns a gate with unbuffered channels.
func NewGate() *Gate { return &Gate{Entered: make(chan struct{}), Release: make(chan struct{})} }

// Open is the engine.OpenFunc of the gate's kind.
func (g *Gate) Open(spec *engine.Spec) (engine.Operator, error) {
	spec.Params = []byte(`{"copies":1}`)
	op, err := OpenFanout(spec)
	if err != nil {
		return nil, err
	}
	return &gated{Fanout: op.(*Fanout), gate: g}, nil
}

type gated struct {
	*Fanout
	gate *Gate
}

func (o *gated) Process(input int, in *engine.Batch, now int64, out *engine.OutBatch) (bool, error) {
	o.gate.Entered <- struct{}{}
	<-o.gate.Release
	return o.Fanout.Process(input, in, now, out)
}
