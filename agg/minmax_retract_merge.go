package agg

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// Partial state of MIN/MAX with retraction. Flink's accumulator holds a MapView, so the local
// aggregate's accumulator row carries STRUCTURED<value, mapSize, MAP<value, count>>; Ferry has
// no Arrow encoding for it yet, and says so. Two of Ferry's accumulators merge in Go
// (mergeGroups), which is what the global aggregate does with each bundle's accumulators.

// errMapPartial is the reason the partial state of a MapView-backed call does not cross as
// Arrow columns.
func errMapPartial(fn string) error {
	return fmt.Errorf("%w: partial state of %s with retraction crosses as a MAP: not native yet", engine.ErrUnsupported, fn)
}

func (a *minMaxRetractAcc[V, O]) partialTypes() ([]engine.Type, error) {
	return nil, errMapPartial(a.fn)
}

func (a *minMaxRetractAcc[V, O]) partialVarBytes([]int32, []int) {}

func (a *minMaxRetractAcc[V, O]) writePartial([]engine.OutColumn, []int32) error {
	return errMapPartial(a.fn)
}

func (a *minMaxRetractAcc[V, O]) merge(*engine.Batch, int, []int32, []bool) error {
	return errMapPartial(a.fn)
}

// groupMerger is implemented by accumulators whose partial state merges in Go only (a MapView
// in Flink): mergeGroupsFrom merges group src[i] of from, an accumulator of the same call
// built the same way, into group dst[i], recording values as mergeGroups does.
type groupMerger interface {
	mergeGroupsFrom(from accumulator, src, dst []int32, changed []bool)
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) mergeGroupsFrom(from accumulator, src, dst []int32, changed []bool) {
	a.mergeGroups(from.(*minMaxRetractAcc[V, O]), src, dst, changed)
}

// mergeGroups merges group src[i] of from into group dst[i] of a, for each i in order, as
// Min/MaxWithRetractAggFunction.merge merges one accumulator into another:
//
//   - the other's extreme replaces this one when this mapSize is 0, or when the other's mapSize
//     is positive, its extreme not NULL and beyond this one (compareTo);
//   - each of the other's (value, count) entries adds its count to this multiset; an entry
//     whose sum is 0 is removed; mapSize drops by one when a positive count ends at or below 0
//     and grows by one when a count at or below 0 ends positive;
//   - when a positive count of the current extreme ended at or below 0, the extreme is
//     recomputed over every value once the entries are merged (updateMin/updateMax).
//
// from may be a itself, with src[i] != dst[i]; both must be the same function (MIN or MAX).
// Like fold for rows, it records dst[i]'s value before and after as entries 2i and 2i+1
// (write, differ) and sets changed[i] when they differ under Flink's equaliser.
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) mergeGroups(from *minMaxRetractAcc[V, O], src, dst []int32, changed []bool) {
	a.tidy()
	if from != a {
		from.tidy()
	}
	a.rowValues.reset(len(src))
	for i, s := range src {
		d := dst[i]
		pv, pn := a.value(d)
		a.mergeGroup(from, s, d)
		nv, nn := a.value(d)
		a.note(i, pv, pn, nv, nn, changed)
	}
}

//agg:specialize
func (a *minMaxRetractAcc[V, O]) mergeGroup(from *minMaxRetractAcc[V, O], s, d int32) {
	if a.mapSize[d] == 0 || (from.mapSize[s] > 0 && from.hasExt[s] && (!a.hasExt[d] || a.beyondFrom(a.ext[d], from, from.ext[s]))) {
		if from.hasExt[s] {
			if a.hasExt[d] {
				a.ops.drop(a.ext[d])
			}
			a.ext[d], a.hasExt[d] = a.ops.keepFrom(from.ops, from.ext[s]), true
		} else {
			a.clearExt(d)
		}
	}
	m := &a.counts
	rescan := false
	for e := from.counts.head[s]; e >= 0; e = from.counts.next[e] {
		// Copy the key into a's arena first (a no-op for fixed-width values): hashing and
		// equality read it through a's ops.
		k := a.ops.keepFrom(from.ops, from.counts.val[e])
		other := from.counts.cnt[e]
		h := a.ops.hash(d, k)
		x := a.find(d, k, h)
		var this int64
		if x >= 0 {
			this = m.cnt[x]
		}
		merged := other + this
		switch {
		case merged == 0:
			a.ops.drop(m.remove(x)) // other != 0, so the entry existed
		case x >= 0:
			m.cnt[x] = merged
		default:
			m.insert(d, k, h, merged)
		}
		if x >= 0 || merged == 0 {
			a.ops.drop(k) // the multiset keeps its own key object
		}
		switch {
		case merged <= 0 && this > 0:
			a.mapSize[d]--
			if a.hasExt[d] && a.ops.equal(k, a.ext[d]) {
				rescan = true
			}
		case merged > 0 && this <= 0:
			a.mapSize[d]++
		}
	}
	if rescan {
		a.rescan(d)
	}
}

// beyondFrom is beyond for a candidate v owned by from's ops.
//
//agg:specialize
func (a *minMaxRetractAcc[V, O]) beyondFrom(ext V, from *minMaxRetractAcc[V, O], v V) bool {
	k := a.ops.keepFrom(from.ops, v)
	b := a.beyond(ext, k)
	a.ops.drop(k)
	return b
}
