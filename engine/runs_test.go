package engine

import (
	"strings"
	"testing"
)

func TestCheckRuns(t *testing.T) {
	for _, c := range []struct {
		runs []Run
		rows []int
		err  string // "" when valid
	}{
		{nil, []int{0, 0}, ""},
		{[]Run{{0, 2}, {1, 1}, {0, 1}}, []int{3, 1}, ""},
		{[]Run{{1, 4}}, []int{0, 4}, ""},
		{[]Run{{0, 2}, {1, 1}}, []int{3, 1}, "the runs use 2 of input 0's 3 rows"},
		{[]Run{{0, 2}, {0, 2}}, []int{3, 0}, "run 1: 2 rows of input 0, but only 1 of its 3 rows are left"},
		{[]Run{{2, 1}}, []int{1, 1}, "run 0: input 2 out of range (the operator has 2 inputs)"},
		{[]Run{{-1, 1}}, []int{1, 1}, "run 0: input -1 out of range"},
		{[]Run{{0, 1}, {1, 0}}, []int{1, 1}, "run 1: 0 rows, want at least 1"},
		{[]Run{{0, -3}}, []int{1, 1}, "run 0: -3 rows"},
	} {
		err := CheckRuns(c.runs, c.rows)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("CheckRuns(%v, %v) = %v, want nil", c.runs, c.rows, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("CheckRuns(%v, %v) = %v, want %q", c.runs, c.rows, err, c.err)
		}
	}
}
