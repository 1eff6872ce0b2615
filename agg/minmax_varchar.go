package agg

import "github.com/ferrystream/ferry/engine"

// fold is minMaxAcc.fold for VARCHAR, written by hand rather than generated: the argument's
// bytes and Java-String flag are read once per row and compared straight against the arena,
// which keeps this loop as fast as it was before the kernels became one template
// (BenchmarkKernelFold/MAX/VARCHAR: about 11 ns/row, against 15-17 ns/row for the generated
// loop, whose strRef detour through the bound column costs a call and two branches per row;
// docs/group-aggregate.md#kernels). The generator skips methods a specialization defines.
func (a *strMinMaxAcc) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	java := newJavaFlags(in, a.ops.javaCol)
	h := &a.ops.heap
	want := -1 // MIN: replace when v compares below the value
	if a.max {
		want = 1
	}
	st, vals, nulls := a.st, a.vals, a.nulls // locals: the loop's stores cannot alias them
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		s := &st[g]
		pv, pn := s.val, !s.has
		if act[i] > 0 && !col.IsNull(i) {
			v, vJava := col.Bytes(i), java.at(i)
			if pn || compareStrings(v, vJava, h.get(pv), pv.java()) == want {
				if !pn {
					a.ops.drop(pv)
				}
				s.val, s.has = h.add(v, javaBit(vJava)), true
			}
		}
		vals[2*i], vals[2*i+1] = pv, s.val
		nulls[2*i], nulls[2*i+1] = pn, !s.has
		if pn == s.has || (s.has && pv != s.val && !a.ops.same(pv, s.val)) {
			changed[i] = true
		}
	}
}
