package main

import (
	"bytes"
	"os"
	"testing"
)

// TestKernelsGenUpToDate fails when agg/kernels/kernels_gen.go is not what the kernel templates
// give now: after editing a template, run go generate ./agg/kernels.
func TestKernelsGenUpToDate(t *testing.T) {
	want, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../" + output)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("agg/kernels/kernels_gen.go is stale: go generate ./agg/kernels")
	}
}

// TestSpecializeReplacesTheTypeParameters checks the rewriting of one template method.
func TestSpecializeReplacesTheTypeParameters(t *testing.T) {
	src := "func (a *minMaxAcc[V, O]) beats(v, cur V) bool {\n\tvar o O // V stays in comments\n\treturn a.ops.Less(v, cur)\n}"
	got, err := specialize(src, specializations[1], "minMaxAcc")
	if err != nil {
		t.Fatal(err)
	}
	want := "func (a *decMinMaxAcc) beats(v, cur values.Dec128) bool {\n\tvar o *values.DecOps // V stays in comments\n\treturn a.ops.Less(v, cur)\n}"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// TestSpecializeReplacesThePart checks the rewriting of a part's method: the part becomes the
// specialization that embeds it.
func TestSpecializeReplacesThePart(t *testing.T) {
	src := "func (a *opsValues[V, O]) Write(out []V) {\n\ta.ops.Write(out)\n}"
	for _, c := range []struct {
		s    specialization
		want string
	}{
		{specializations[0], "func (a *numMinMaxAcc[T]) Write(out []T) {\n\ta.ops.Write(out)\n}"},
		{specialization{tmpl: "opsValues", name: "listAggAcc", value: "values.StrRef", ops: "*values.StrOps"},
			"func (a *listAggAcc) Write(out []values.StrRef) {\n\ta.ops.Write(out)\n}"},
	} {
		got, err := specialize(src, c.s, "opsValues")
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Fatalf("got\n%s\nwant\n%s", got, c.want)
		}
	}
}
