package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// groupValues holds one nullable value per group, owned by the kernel's value-ops: the state of
// MIN/MAX, FIRST_VALUE and LAST_VALUE without retraction (minMaxAcc) and the value of
// SINGLE_VALUE (singleValueAcc, which keeps its count beside it). A group starts NULL. Its
// snapshot is the value's (putValue); as partial state the value is one nullable column of the
// value's type.
type groupValues[V comparable, O values.Ops[V]] struct {
	st []groupValue[V] // per group
	opsValues[V, O]
	part rowValues[V] // partial values being written
}

func newGroupValues[V comparable, O values.Ops[V]](ops O) groupValues[V, O] {
	return groupValues[V, O]{opsValues: opsValues[V, O]{ops: ops}}
}

// groupValue is one group's value; one struct keeps it in one cache line.
type groupValue[V any] struct {
	val V // owned by ops when has
	has bool
}

func (a *groupValues[V, O]) Grow(n int)    { a.st = scratch.Extend(a.st, n) }
func (a *groupValues[V, O]) Reset(g int32) { a.set(g, *new(V), false) }

func (a *groupValues[V, O]) Bytes() int64 {
	var zero groupValue[V]
	return int64(cap(a.st))*int64(sizeOf(zero)) + a.ops.Bytes()
}

// set replaces group g's value with v (an owned value when has), dropping the old one.
func (a *groupValues[V, O]) set(g int32, v V, has bool) {
	s := &a.st[g]
	if s.has {
		a.ops.Drop(s.val)
	}
	s.val, s.has = v, has
}

// tidy compacts the arena of owned values when it is due; recorded values are not read after.
//
//kernels:specialize
func (a *groupValues[V, O]) tidy() {
	if !a.ops.CompactDue() {
		return
	}
	a.ops.CompactStart()
	for g := range a.st {
		if s := &a.st[g]; s.has {
			s.val = a.ops.Move(s.val)
		}
	}
	a.ops.CompactEnd()
}

func (a *groupValues[V, O]) Save(dst []byte, g int32) []byte {
	return putValue(a.ops, dst, a.st[g].val, a.st[g].has)
}

func (a *groupValues[V, O]) Load(src []byte, g int32) ([]byte, error) {
	v, has, src, err := getValue(a.ops, src)
	if err != nil {
		return nil, err
	}
	a.st[g] = groupValue[V]{val: v, has: has}
	return src, nil
}

// putValue appends the snapshot form of a nullable value: a NULL flag (has), then v unless ops
// are sparse and v is NULL.
func putValue[V comparable, O values.Ops[V]](ops O, dst []byte, v V, has bool) []byte {
	dst = values.PutBool(dst, has)
	if has || !ops.Sparse() {
		dst = ops.Put(dst, v)
	}
	return dst
}

// getValue reads a value putValue wrote, owned by ops.
func getValue[V comparable, O values.Ops[V]](ops O, src []byte) (v V, has bool, rest []byte, err error) {
	if has, src, err = values.GetBool(src); err != nil {
		return v, false, nil, err
	}
	if has || !ops.Sparse() {
		if v, src, err = ops.Get(src); err != nil {
			return v, false, nil, err
		}
	}
	return v, has, src, nil
}

// gather collects the values of groups into a.part (entry j for groups[j]).
func (a *groupValues[V, O]) gather(groups []int32) {
	a.part.fill(len(groups), func(j int) (V, bool) { s := &a.st[groups[j]]; return s.val, s.has })
}

// PartialVarBytes sizes the value's partial column, the first.
func (a *groupValues[V, O]) PartialVarBytes(groups []int32, dst []int) {
	a.gather(groups)
	dst[0] = a.ops.VarBytes(a.part.vals, a.part.nulls, nil)
}

// writeValues writes the values of groups to the partial column out, row j for groups[j].
func (a *groupValues[V, O]) writeValues(out *engine.OutColumn, groups []int32) {
	a.gather(groups)
	a.ops.Write(out, a.part.vals, a.part.nulls, nil)
}
