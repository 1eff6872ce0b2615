package engine

import (
	"fmt"
	"slices"
	"sync"
)

// OpenFunc builds an operator of one kind from a spec whose header ParseSpec validated; it
// decodes and validates the kind's params (DecodeParams) itself.
type OpenFunc func(spec *Spec) (Operator, error)

// The registry of operator kinds: each kind's package registers itself in an init function, and
// the C ABI imports the kind packages.
var registry struct {
	sync.RWMutex
	kinds map[string]OpenFunc
}

// Register makes kind available to Open. It panics when kind is registered already.
func Register(kind string, open OpenFunc) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.kinds[kind]; dup {
		panic("engine: operator kind " + kind + " registered twice")
	}
	if registry.kinds == nil {
		registry.kinds = map[string]OpenFunc{}
	}
	registry.kinds[kind] = open
}

// Kinds lists the registered operator kinds, sorted.
func Kinds() []string {
	registry.RLock()
	defer registry.RUnlock()
	var ks []string
	for k := range registry.kinds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Open builds the operator of spec's kind. An unregistered kind is ErrUnsupported (the host
// keeps Flink's operator); the kind's own errors are prefixed with the operator's label.
func Open(spec *Spec) (Operator, error) {
	registry.RLock()
	open, ok := registry.kinds[spec.Kind]
	registry.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: spec: kind: %q is not a native operator", ErrUnsupported, spec.Kind)
	}
	op, err := open(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Label(), err)
	}
	return op, nil
}
