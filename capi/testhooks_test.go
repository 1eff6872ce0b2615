//go:build !ferrytest

package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
)

// TestProductionRejectsTestHooks: a library built without the ferrytest tag refuses the spec's
// "test" field and ferry_init's "test_hooks": true, with messages that say why.
func TestProductionRejectsTestHooks(t *testing.T) {
	_, err := parseTestHooks([]byte(`{"panic":"process"}`))
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "spec: test:") || !strings.Contains(err.Error(), "ferrytest") {
		t.Errorf("spec test field: %v", err)
	}
	if _, err := parseTestHooks(nil); err != nil {
		t.Errorf("a spec without test hooks: %v", err)
	}
	err = setTestHooks(true)
	if !errors.Is(err, engine.ErrInvalid) || !strings.Contains(err.Error(), "test_hooks") || !strings.Contains(err.Error(), "ferrytest") {
		t.Errorf("test_hooks true: %v", err)
	}
	if err := setTestHooks(false); err != nil {
		t.Errorf("test_hooks false: %v", err)
	}
	for _, k := range engine.Kinds() {
		if strings.HasPrefix(k.Name, "test_") {
			t.Errorf("test kind %s registered in a production build", k.Name)
		}
	}
}
