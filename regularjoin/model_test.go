package regularjoin

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
	"github.com/ferrystream/ferry/joincore"
)

// The model is an independent, naive StreamingJoinOperator: per join key and side a ValueState
// or a map kept as a list of entries in insertion order, whose java.util.HashMap iteration order
// is computed when iterated (entries sorted by bin, stable; the table length tracked through
// resizes, started at 16 or, after a restore, at the capacity MapSerializer.deserialize creates);
// it stores every row as Flink does, NULL keys included, evaluates the condition per visited row
// and follows processElement's lazy iteration literally. Tree bins are outside it (the streams
// keep maps small enough that no bin turns into a tree; it fails if one would).

type mEntry struct {
	mapKey string // the map key's identity: the unique key's or the row's values
	hash   int32  // its BinaryRowData hashCode
	vals   []any
	count  int
	assoc  int
}

type mState struct {
	one     *mEntry   // join_key_contains_unique_key
	tab     int       // the HashMap's table length; 0: not allocated yet
	entries []*mEntry // insertion order; nil: no map
}

type model struct {
	t       testing.TB
	p       Params
	outer   [2]bool
	keys    map[string]*[2]mState
	cond    func(l, r []any) bool
	enc     [2]*engine.KeyEncoder // the map keys' BinaryRowData
	out     []string
	maxBins int
	mb      mBundles // mini_batch
	// semiAnti: a SEMI or ANTI join (StreamingSemiAntiJoinOperator): the left rows carry
	// association counts, the output is left rows alone.
	semiAnti bool
}

func newModel(t testing.TB, p Params, cond func(l, r []any) bool) *model {
	md := &model{t: t, p: p, keys: map[string]*[2]mState{}, cond: cond}
	md.outer = [2]bool{p.JoinType == "LEFT" || p.JoinType == "FULL", p.JoinType == "RIGHT" || p.JoinType == "FULL"}
	md.semiAnti = p.JoinType == "SEMI" || p.JoinType == "ANTI"
	for s, l := range []string{p.LeftLayout, p.RightLayout} {
		switch l {
		case LayoutUniqueKey:
			md.enc[s] = engine.NewKeyEncoder([]int{1}, sideTypes)
		case LayoutNoUniqueKey:
			md.enc[s] = engine.NewKeyEncoder([]int{0, 1, 2}, sideTypes)
		}
	}
	return md
}

func (md *model) layout(side int) string { return [2]string{md.p.LeftLayout, md.p.RightLayout}[side] }

// mapKey returns the map key of row vals on side and its hashCode.
func (md *model) mapKey(side int, vals []any) (string, int32) {
	b := enginetest.Batch(sideTypes, [][]any{vals}, []engine.RowKind{0}, enginetest.Options{})
	if err := md.enc[side].Encode(b); err != nil {
		md.t.Fatal(err)
	}
	if md.layout(side) == LayoutUniqueKey {
		return fmt.Sprint(vals[1]), md.enc[side].Hash(0)
	}
	return fmt.Sprintf("%#v", vals), md.enc[side].Hash(0)
}

func bin(h int32, tab int) int { u := uint32(h); return int(u^u>>16) & (tab - 1) }

// order is the map's iteration order.
func (st *mState) order() []*mEntry {
	o := slices.Clone(st.entries)
	slices.SortStableFunc(o, func(a, b *mEntry) int { return bin(a.hash, st.tab) - bin(b.hash, st.tab) })
	return o
}

// put adds a new entry (HashMap.putVal): the table allocated at the first put, doubled when a
// bin of 8 or more entries grows in a table shorter than 64 and when the size exceeds 3/4.
func (md *model) put(st *mState, e *mEntry) {
	if st.tab == 0 {
		st.tab = 16
	}
	n := 0
	for _, x := range st.entries {
		if bin(x.hash, st.tab) == bin(e.hash, st.tab) {
			n++
		}
	}
	st.entries = append(st.entries, e)
	if n >= 8 {
		if st.tab >= 64 {
			md.t.Fatal("the model has no tree bins")
		}
		st.tab *= 2
	}
	if len(st.entries) > st.tab*3/4 {
		st.tab *= 2
	}
}

func (st *mState) find(key string) int {
	return slices.IndexFunc(st.entries, func(e *mEntry) bool { return e.mapKey == key })
}

// remove removes entry i (HashMap.remove), dropping the map when it empties (HeapMapState).
func (st *mState) remove(i int) {
	st.entries = slices.Delete(st.entries, i, i+1)
	if len(st.entries) == 0 {
		st.entries, st.tab = nil, 0
	}
}

// addRecord is the state views' addRecord(row, assoc).
func (md *model) addRecord(st *mState, side int, vals []any, assoc int) {
	if md.layout(side) == LayoutJoinKeyUnique {
		st.one = &mEntry{vals: vals, count: 1, assoc: assoc}
		return
	}
	key, h := md.mapKey(side, vals)
	if i := st.find(key); i >= 0 {
		e := st.entries[i]
		if md.layout(side) == LayoutUniqueKey {
			e.vals, e.assoc = vals, assoc
		} else {
			e.count++
			e.assoc = assoc
		}
		return
	}
	md.put(st, &mEntry{mapKey: key, hash: h, vals: vals, count: 1, assoc: assoc})
}

// retractRecord is the state views' retractRecord(row).
func (md *model) retractRecord(st *mState, side int, vals []any) {
	if md.layout(side) == LayoutJoinKeyUnique {
		st.one = nil
		return
	}
	key, _ := md.mapKey(side, vals)
	i := st.find(key)
	if i < 0 {
		return
	}
	if e := st.entries[i]; md.layout(side) == LayoutNoUniqueKey && e.count > 1 {
		e.count--
		return
	}
	st.remove(i)
}

func rowText(l, r []any) string {
	var parts []string
	for _, side := range [][]any{l, r} {
		if side == nil {
			side = []any{nil, nil, nil}
		}
		for _, v := range side {
			parts = append(parts, enginetest.Format(v))
		}
	}
	return strings.Join(parts, ", ")
}

func (md *model) emit(kind engine.RowKind, input []any, inputIsLeft bool, other []any) {
	l, r := input, other
	if !inputIsLeft {
		l, r = other, input
	}
	md.out = append(md.out, enginetest.Row{Kind: kind}.String()[:2]+"["+rowText(l, r)+"]")
}

// element is processElement for a row of side with row kind kind; suppress is its isSuppress.
func (md *model) element(side int, kind engine.RowKind, vals []any, suppress bool) {
	isLeft := side == 0
	inputOuter, otherOuter := md.outer[side], md.outer[1-side]
	ks := md.keys[fmt.Sprint(vals[0])]
	if ks == nil {
		ks = &[2]mState{}
		md.keys[fmt.Sprint(vals[0])] = ks
	}
	own, other := &ks[side], &ks[1-side]
	keyOK := vals[0] != nil || !md.p.FilterNulls[0] // JoinConditionWithNullFilters
	matches := func(o []any) bool {
		if !keyOK {
			return false
		}
		if md.cond == nil {
			return true
		}
		if isLeft {
			return md.cond(vals, o)
		}
		return md.cond(o, vals)
	}
	// each visits the other side's matching records lazily, in the state's order; a record
	// stored n times is visited n times with its association count read at its first visit.
	each := func(f func(e *mEntry, assoc int)) int {
		n := 0
		if other.one != nil {
			if matches(other.one.vals) {
				f(other.one, other.one.assoc)
				n++
			}
			return n
		}
		for _, e := range other.order() {
			if !matches(e.vals) {
				continue
			}
			assoc := e.assoc
			for range e.count {
				f(e, assoc)
				n++
			}
		}
		return n
	}
	hasMatch := each(func(*mEntry, int) {}) > 0
	acc := kind == engine.Insert || kind == engine.UpdateAfter
	if md.semiAnti { // processElement1/2 of StreamingSemiAntiJoinOperator
		anti := md.p.JoinType == "ANTI"
		emitLeft := func(k engine.RowKind, left []any) {
			parts := make([]string, len(left))
			for i, v := range left {
				parts[i] = enginetest.Format(v)
			}
			md.out = append(md.out, enginetest.Row{Kind: k}.String()[:2]+"["+strings.Join(parts, ", ")+"]")
		}
		if side == 0 {
			n := each(func(*mEntry, int) {})
			if (n == 0) == anti {
				emitLeft(kind, vals)
			}
			if acc {
				md.addRecord(own, side, vals, n)
			} else {
				md.retractRecord(own, side, vals)
			}
			return
		}
		if acc {
			md.addRecord(own, side, vals, -1)
		} else {
			md.retractRecord(own, side, vals)
		}
		each(func(e *mEntry, assoc int) {
			switch {
			case acc && assoc == 0 && anti:
				emitLeft(engine.Delete, e.vals)
			case acc && assoc == 0:
				emitLeft(kind, e.vals)
			case !acc && assoc == 1 && anti:
				emitLeft(engine.Insert, e.vals)
			case !acc && assoc == 1:
				emitLeft(kind, e.vals)
			}
			if acc {
				e.assoc = assoc + 1
			} else {
				e.assoc = assoc - 1
			}
		})
		return
	}
	switch {
	case acc && inputOuter:
		if !hasMatch {
			md.emit(engine.Insert, vals, isLeft, nil)
			md.addRecord(own, side, vals, 0)
			return
		}
		n := each(func(e *mEntry, assoc int) {
			if otherOuter {
				if assoc == 0 && !suppress {
					md.emit(engine.Delete, e.vals, !isLeft, nil)
				}
				e.assoc = assoc + 1
			}
			md.emit(engine.Insert, vals, isLeft, e.vals)
		})
		md.addRecord(own, side, vals, n)
	case acc:
		md.addRecord(own, side, vals, -1)
		each(func(e *mEntry, assoc int) {
			if otherOuter {
				if assoc == 0 && !suppress {
					md.emit(engine.Delete, e.vals, !isLeft, nil)
				}
				e.assoc = assoc + 1
				md.emit(engine.Insert, vals, isLeft, e.vals)
			} else {
				md.emit(kind, vals, isLeft, e.vals)
			}
		})
	default:
		if !suppress {
			md.retractRecord(own, side, vals)
		}
		if !hasMatch {
			if inputOuter {
				md.emit(engine.Delete, vals, isLeft, nil)
			}
			return
		}
		each(func(e *mEntry, assoc int) {
			k := kind
			if inputOuter {
				k = engine.Delete
			}
			md.emit(k, vals, isLeft, e.vals)
			if otherOuter {
				if assoc == 1 && !suppress {
					md.emit(engine.Insert, e.vals, !isLeft, nil)
				}
				e.assoc = assoc - 1
			}
		})
	}
}

// restore rebuilds every map as MapSerializer.deserialize does: a HashMap created with
// CollectionUtil.newHashMapWithExpectedSize(n), filled in iteration order.
func (md *model) restore() {
	for _, ks := range md.keys {
		for s := range ks {
			st := &ks[s]
			if st.entries == nil {
				continue
			}
			old := st.order()
			n := len(old)
			c := n + 1
			if n > 2 {
				c = (n*4 + 2) / 3 // ceil(n / 0.75)
			}
			tab := 1
			for tab < c {
				tab <<= 1
			}
			*st = mState{one: st.one, tab: tab}
			for _, e := range old {
				md.put(st, e)
			}
		}
	}
}

// TestModel compares the join with the model on random streams of inserts, updates and
// retractions (also of rows never inserted) on both sides, NULL keys, conditions, every join
// type and layout pair, in calls of mixed runs, with snapshots and restores in the middle.
func TestModel(t *testing.T) {
	layouts := []string{LayoutJoinKeyUnique, LayoutUniqueKey, LayoutNoUniqueKey}
	conds := []struct {
		expr *joincore.Expr
		fn   func(l, r []any) bool
	}{
		{nil, nil},
		{&joincore.Expr{Op: "le", Args: []joincore.Expr{{Op: "field", Field: 1}, {Op: "field", Field: 4}}},
			func(l, r []any) bool { return l[1].(int64) <= r[1].(int64) }},
		{&joincore.Expr{Op: "ne", Args: []joincore.Expr{{Op: "field", Field: 2}, {Op: "field", Field: 5}}},
			func(l, r []any) bool { return l[2] != nil && r[2] != nil && l[2] != r[2] }},
	}
	scenarios := 0
	for _, jt := range []string{"INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"} {
		for _, ll := range layouts {
			for _, rl := range layouts {
				for seed := range 8 {
					r := rand.New(rand.NewPCG(uint64(seed), uint64(len(jt)*100+len(ll)*10+len(rl))))
					p := params(jt, ll, rl)
					p.FilterNulls = []bool{seed%2 == 0}
					c := conds[r.IntN(len(conds))]
					p.Condition = c.expr
					p.MiniBatch = seed >= 4 && jt != "SEMI" && jt != "ANTI" // no mini-batch SEMI/ANTI operator
					name := fmt.Sprintf("%s/%s/%s/%d/mini_batch=%v", jt, ll, rl, seed, p.MiniBatch)
					runModel(t, name, p, c.fn, r)
					scenarios++
				}
			}
		}
	}
	t.Logf("%d scenarios", scenarios)
}

// checkOut compares got, the output of a call, with the model's.
func checkOut(t *testing.T, name string, call int, evs []ev, got []string, md *model) {
	t.Helper()
	want := md.out
	md.out = nil
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s: call %d (%v): output differs\ngot:\n%s\nwant:\n%s", name, call, evs, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func runModel(t *testing.T, name string, p Params, cond func(l, r []any) bool, r *rand.Rand) {
	const maxPar = 8
	op := openJoin(t, p, maxPar, 2+r.IntN(5))
	md := newModel(t, p, cond)
	var live [2][][]any // rows inserted and not retracted, per side
	values := []any{"a", "b", nil}
	nKeys := 3
	if p.MiniBatch && r.IntN(2) == 0 {
		nKeys = 40 // bundles of many join keys: their HashMap's table grows past 16
	}
	maxRows := 8
	if nKeys > 3 {
		maxRows = 24
	}
	randRow := func(ids int) []any {
		var k any = int64(r.IntN(nKeys))
		if r.IntN(8) == 0 {
			k = nil
		}
		return []any{k, int64(r.IntN(ids)), values[r.IntN(len(values))]}
	}
	ids := 4 + r.IntN(40) // few ids: duplicates and unique-key replacements; many: large maps
	for call := range 60 {
		if r.IntN(10) == 0 {
			if md.mb.queued > 0 { // the host ends a bundle before the barrier
				if err := op.snapshottable(); !errors.Is(err, engine.ErrState) {
					t.Fatalf("%s: call %d: snapshottable with queued rows: %v", name, call, err)
				}
				md.finish()
				checkOut(t, name, call, nil, flush(t, op), md)
			}
			op = snapshotRestore(t, op, p, maxPar)
			md.restore()
			md.mb = mBundles{} // a restored operator opens new bundles
		}
		var evs []ev
		for range 1 + r.IntN(maxRows) {
			s := r.IntN(2)
			var e ev
			switch x := r.IntN(10); {
			case x < 6 || len(live[s]) == 0: // an insert
				vals := randRow(ids)
				e = ev{kind: [...]engine.RowKind{I, UA}[r.IntN(2)], k: vals[0], id: vals[1].(int64), v: vals[2]}
				live[s] = append(live[s], vals)
			case x < 9: // a retraction of a live row
				i := r.IntN(len(live[s]))
				vals := live[s][i]
				live[s] = slices.Delete(live[s], i, i+1)
				e = ev{kind: [...]engine.RowKind{D, UB}[r.IntN(2)], k: vals[0], id: vals[1].(int64), v: vals[2]}
			default: // a retraction of a row maybe never inserted
				vals := randRow(ids)
				e = ev{kind: D, k: vals[0], id: vals[1].(int64), v: vals[2]}
			}
			e.side = "LR"[s]
			evs = append(evs, e)
			if p.MiniBatch {
				md.queue(s, e.kind, e.values())
			} else {
				md.element(s, e.kind, e.values(), false)
			}
		}
		checkOut(t, name, call, evs, feed(t, op, evs), md)
		if p.MiniBatch && r.IntN(3) == 0 {
			md.finish()
			checkOut(t, name, call, nil, flush(t, op), md)
		}
		if op.keys.bytes < 0 {
			t.Fatalf("%s: negative memory estimate %d", name, op.keys.bytes)
		}
	}
	op.Close()
}
