//go:build !ferrytest

package main

import (
	"encoding/json"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// The production library has no test support: the spec's "test" field and ferry_init's
// "test_hooks" exist only in a library built with the ferrytest tag (testhooks_ferrytest.go).

// testHooks is empty: inject compiles to nothing.
type testHooks struct{}

func (testHooks) inject(string) {}

func parseTestHooks(raw json.RawMessage) (testHooks, error) {
	if raw != nil {
		return testHooks{}, fmt.Errorf("%w: spec: test: test hooks (ferry_init option test_hooks) exist only in a library built with the ferrytest tag", engine.ErrInvalid)
	}
	return testHooks{}, nil
}

func setTestHooks(on bool) error {
	if on {
		return fmt.Errorf("%w: options: test_hooks: this library is built without test support (the ferrytest tag)", engine.ErrInvalid)
	}
	return nil
}
