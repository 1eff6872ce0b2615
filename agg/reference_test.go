package agg

import (
	"fmt"
	"math"
	"math/big"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// This file is an independent, row-at-a-time model of Flink 2.3's GroupAggFunction and the
// built-in aggregate functions, written from Flink's Java source with boxed values and maps. It
// shares no code with the kernels and serves as the oracle of the randomized tests.
//
// Values use enginetest's representation: int64 for every integer type, float32, float64.

// jAdd is Java's (T)(a + b) for the argument type t.
func jAdd(t engine.TypeID, a, b any) any {
	switch t {
	case engine.Float:
		return a.(float32) + b.(float32)
	case engine.Double:
		return a.(float64) + b.(float64)
	}
	return wrap(t, a.(int64)+b.(int64))
}

func jSub(t engine.TypeID, a, b any) any {
	switch t {
	case engine.Float:
		return a.(float32) - b.(float32)
	case engine.Double:
		return a.(float64) - b.(float64)
	}
	return wrap(t, a.(int64)-b.(int64))
}

func zero(t engine.TypeID) any {
	switch t {
	case engine.Float:
		return float32(0)
	case engine.Double:
		return float64(0)
	}
	return int64(0)
}

func wrap(t engine.TypeID, v int64) int64 {
	switch t {
	case engine.TinyInt:
		return int64(int8(v))
	case engine.SmallInt:
		return int64(int16(v))
	case engine.Int:
		return int64(int32(v))
	}
	return v
}

// jLess / jGreater are Java's primitive < and >.
func jLess(a, b any) bool {
	switch x := a.(type) {
	case float32:
		return x < b.(float32)
	case float64:
		return x < b.(float64)
	case enginetest.Timestamp: // TimestampData.compareTo
		y := b.(enginetest.Timestamp)
		return x.Millis < y.Millis || (x.Millis == y.Millis && x.Nanos < y.Nanos)
	case bool: // Boolean.compare
		return !x && b.(bool)
	}
	return a.(int64) < b.(int64)
}

func jGreater(a, b any) bool { return jLess(b, a) }

// jPrimEq is the equaliser's == on primitives.
func jPrimEq(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.(type) {
	case float32:
		return x == b.(float32)
	case float64:
		return x == b.(float64)
	case *big.Int: // DecimalData: compareTo == 0
		return x.Cmp(b.(*big.Int)) == 0
	case string: // BinaryStringData.equals
		return x == b.(string)
	case enginetest.Timestamp: // TimestampData.equals
		return x == b.(enginetest.Timestamp)
	case bool:
		return x == b.(bool)
	}
	return a.(int64) == b.(int64)
}

// jBits is doubleToLongBits / floatToIntBits / the integer itself: the identity of
// Double.equals and of MapView keys.
func jBits(v any) int64 {
	switch x := v.(type) {
	case float32:
		if x != x {
			return 0x7fc00000
		}
		return int64(int32(math.Float32bits(x)))
	case float64:
		if x != x {
			return 0x7ff8000000000000
		}
		return int64(math.Float64bits(x))
	case enginetest.Timestamp: // ordered as TimestampData.compareTo within test ranges
		return x.Millis*1_000_000 + int64(x.Nanos)
	case bool:
		if x {
			return 1
		}
		return 0
	}
	return v.(int64)
}

// jCompareTo is Comparable.compareTo of the boxed values.
func jCompareTo(a, b any) int {
	switch x := a.(type) {
	case float32:
		y := b.(float32)
		if x < y {
			return -1
		}
		if x > y {
			return 1
		}
	case float64:
		y := b.(float64)
		if x < y {
			return -1
		}
		if x > y {
			return 1
		}
	}
	ab, bb := jBits(a), jBits(b)
	if ab < bb {
		return -1
	}
	if ab > bb {
		return 1
	}
	return 0
}

// refSingleValue is SingleValueAggFunction's expressions; failed records a throw.
type refSingleValue struct {
	v      any
	count  int32
	failed bool
}

func (r *refSingleValue) accumulate(v any) {
	if r.count > 0 {
		r.failed = true
	}
	r.v, r.count = v, r.count+1
}

func (r *refSingleValue) retract(any) {
	if r.count != 1 && r.count != 0 {
		r.failed = true
	}
	r.v, r.count = nil, r.count-1
}

func (r *refSingleValue) value() any { return r.v }

type refAgg interface {
	accumulate(v any)
	retract(v any)
	value() any
}

type refCount struct {
	star bool
	n    int64
}

func (r *refCount) accumulate(v any) {
	if r.star || v != nil {
		r.n++
	}
}
func (r *refCount) retract(v any) {
	if r.star || v != nil {
		r.n--
	}
}
func (r *refCount) value() any { return r.n }

// refSum is SumAggFunction, or SumWithRetractAggFunction when withRetract.
type refSum struct {
	t           engine.TypeID
	withRetract bool
	sum         any
	count       int64
}

func (r *refSum) accumulate(v any) {
	if v == nil {
		return
	}
	if r.sum == nil {
		r.sum = v
	} else {
		r.sum = jAdd(r.t, r.sum, v)
	}
	r.count++
}

func (r *refSum) retract(v any) {
	if v == nil {
		return
	}
	if r.sum == nil {
		r.sum = jSub(r.t, zero(r.t), v)
	} else {
		r.sum = jSub(r.t, r.sum, v)
	}
	r.count--
}

func (r *refSum) value() any {
	if r.withRetract && r.count == 0 {
		return nil
	}
	return r.sum
}

// refSum0 is Sum0AggFunction: starts at 0, NULLs ignored, never NULL.
type refSum0 struct {
	t   engine.TypeID
	sum any
}

func (r *refSum0) accumulate(v any) {
	if v != nil {
		r.sum = jAdd(r.t, r.sum, v)
	}
}

func (r *refSum0) retract(v any) {
	if v != nil {
		r.sum = jSub(r.t, r.sum, v)
	}
}

func (r *refSum0) value() any { return r.sum }

// refAvg is AvgAggFunction: BIGINT or DOUBLE sum, BIGINT count, cast(sum / count).
type refAvg struct {
	t     engine.TypeID
	isum  int64
	fsum  float64
	count int64
}

func (r *refAvg) accumulate(v any) {
	if v == nil {
		return
	}
	switch x := v.(type) {
	case float32:
		r.fsum += float64(x)
	case float64:
		r.fsum += x
	default:
		r.isum += x.(int64)
	}
	r.count++
}

func (r *refAvg) retract(v any) {
	if v == nil {
		return
	}
	switch x := v.(type) {
	case float32:
		r.fsum -= float64(x)
	case float64:
		r.fsum -= x
	default:
		r.isum -= x.(int64)
	}
	r.count--
}

func (r *refAvg) value() any {
	if r.count == 0 {
		return nil
	}
	switch r.t {
	case engine.Float:
		return float32(r.fsum / float64(r.count))
	case engine.Double:
		return r.fsum / float64(r.count)
	}
	return wrap(r.t, r.isum/r.count)
}

// refMinMax is the declarative MinAggFunction / MaxAggFunction (retract does nothing).
type refMinMax struct {
	max bool
	v   any
}

func (r *refMinMax) accumulate(v any) {
	if v == nil {
		return
	}
	if r.v == nil || (r.max && jGreater(v, r.v)) || (!r.max && jLess(v, r.v)) {
		r.v = v
	}
}
func (r *refMinMax) retract(any) {}
func (r *refMinMax) value() any  { return r.v }

// refWelford is WelfordM2AggFunction.NumberFunction, written as Java's source reads.
type refWelford struct {
	n        int64
	mean, m2 float64
}

func toDouble(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case float32:
		return float64(x)
	}
	panic(fmt.Sprintf("WELFORD_M2 over %T", v))
}

func (r *refWelford) accumulate(v any) {
	if v == nil {
		return
	}
	r.n++
	if r.n <= 0 {
		return
	}
	val := toDouble(v)
	delta := val - r.mean
	r.mean = r.mean + float64(delta/float64(r.n))
	delta2 := val - r.mean
	r.m2 = r.m2 + float64(delta*delta2)
}

func (r *refWelford) retract(v any) {
	if v == nil {
		return
	}
	r.n--
	if r.n <= 0 {
		if r.n == 0 {
			r.mean, r.m2 = 0, 0
		}
		return
	}
	val := toDouble(v)
	delta2 := val - r.mean
	r.mean = r.mean - float64(delta2/float64(r.n))
	delta := val - r.mean
	r.m2 = r.m2 - float64(delta*delta2)
}

func (r *refWelford) value() any {
	if r.n <= 0 || r.m2 < 0 {
		return nil
	}
	return r.m2
}

// refListAgg is the declarative ListAggFunction: (accDelimiter, acc), initially (",", NULL).
type refListAgg struct {
	acc any // string or nil
}

func (r *refListAgg) accumulateWith(v, d any) {
	switch {
	case v == nil:
	case r.acc == nil:
		r.acc = v
	case d == nil:
		r.acc = nil // CONCAT with a NULL delimiter
	default:
		r.acc = r.acc.(string) + d.(string) + v.(string)
	}
}
func (r *refListAgg) accumulate(any) { panic("LISTAGG accumulates with its delimiter") }
func (r *refListAgg) retract(any)    { panic("LISTAGG has no retract") }
func (r *refListAgg) value() any     { return r.acc }

// refFirstLast is FirstValueAggFunction / LastValueAggFunction (no retract method: the planner
// never gives them retracting input).
type refFirstLast struct {
	last bool
	v    any
}

func (r *refFirstLast) accumulate(v any) {
	if v != nil && (r.v == nil || r.last) {
		r.v = v
	}
}
func (r *refFirstLast) retract(any) { panic("FIRST_VALUE/LAST_VALUE have no retract") }
func (r *refFirstLast) value() any  { return r.v }

// refMinMaxRetract is MinWithRetractAggFunction / MaxWithRetractAggFunction.
type refMinMaxRetract struct {
	max     bool
	min     any
	mapSize int64
	keys    map[int64]any
	counts  map[int64]int64
	at      map[int64]int64 // with TTL: each entry's last write
	clock   *refClock
}

// get is the MapView's get of k's count: an expired entry reads as absent and is deleted.
func (r *refMinMaxRetract) get(k int64) int64 {
	if refExpired(r.clock, r.at, k) {
		delete(r.counts, k)
		delete(r.keys, k)
		delete(r.at, k)
	}
	return r.counts[k]
}

// put is the MapView's put of k's count (v the value, kept when k is present).
func (r *refMinMaxRetract) put(k int64, v any, count int64) {
	if _, ok := r.keys[k]; !ok {
		r.keys[k] = v
	}
	r.counts[k] = count
	refStamp(r.clock, r.at, k)
}

func (r *refMinMaxRetract) remove(k int64) {
	delete(r.counts, k)
	delete(r.keys, k)
	delete(r.at, k)
}

func (r *refMinMaxRetract) better(cur, v any) bool {
	if r.max {
		return jCompareTo(cur, v) < 0
	}
	return jCompareTo(cur, v) > 0
}

func (r *refMinMaxRetract) accumulate(v any) {
	if v == nil {
		return
	}
	if r.mapSize == 0 || r.better(r.min, v) {
		r.min = v
	}
	k := jBits(v)
	count := r.get(k) + 1
	if count == 0 {
		r.remove(k)
	} else {
		r.put(k, v, count)
	}
	if count == 1 {
		r.mapSize++
	}
}

func (r *refMinMaxRetract) retract(v any) {
	if v == nil {
		return
	}
	k := jBits(v)
	count := r.get(k) - 1
	if count == 0 {
		r.remove(k)
		r.mapSize--
		if r.mapSize == 0 {
			r.min = nil
			return
		}
		if r.min != nil && jBits(v) == jBits(r.min) {
			hasMin := false
			for kk, key := range r.keys {
				if refExpired(r.clock, r.at, kk) { // the iterator skips and deletes it
					r.remove(kk)
					continue
				}
				if !hasMin || r.better(r.min, key) {
					r.min = key
					hasMin = true
				}
			}
			if !hasMin {
				r.mapSize = 0
				r.min = nil
			}
		}
	} else {
		r.put(k, v, count)
	}
}

func (r *refMinMaxRetract) value() any {
	if r.mapSize > 0 {
		return r.min
	}
	return nil
}

// refGroupAgg is GroupAggFunction.processElement with its record counter
// (docs/group-aggregate.md#the-record-counter).
type refGroupAgg struct {
	spec  *Spec
	state map[string]*refKey
	clock *refClock
	wall  refWall // FIRST_VALUE/LAST_VALUE with retraction: the wall clock, a tick every third row
	rows  int
}

// refClock is the idle-state TTL of the reference's MapViews: Flink's TtlMapState wraps each
// entry with its last write; an entry last written at t reads as absent (and is deleted) once
// t + ttl <= now. A nil clock or a ttl of 0 keeps entries forever.
type refClock struct {
	ttl, now int64
}

// expired reports whether an entry of at under k is expired; ok is false when there is none.
func refExpired[K comparable](c *refClock, at map[K]int64, k K) bool {
	if c == nil || c.ttl <= 0 {
		return false
	}
	t, ok := at[k]
	return ok && t+c.ttl <= c.now
}

// stamp records that the entry under k was put now.
func refStamp[K comparable](c *refClock, at map[K]int64, k K) {
	if c != nil && c.ttl > 0 {
		at[k] = c.now
	}
}

// refKey is one key's state: the accumulators (plus the count1 last when retracting) and, per
// argument column of DISTINCT calls, the MapView from distinct value to per-call bit or count.
type refKey struct {
	accs       []refAgg
	distinct   map[int]map[string][]int64
	distinctAt map[int]map[string]int64 // with TTL: each distinct entry's last write
	views      []refView                // the two-phase global's distinct maps, per set
	lastWrite  int64                    // processing time of the last accState.update (TTL OnCreateAndWrite)
}

func newRefGroupAgg(spec *Spec) *refGroupAgg {
	return &refGroupAgg{spec: spec, state: map[string]*refKey{}, clock: &refClock{ttl: spec.StateTTLMs}}
}

func (r *refGroupAgg) create() []refAgg {
	var accs []refAgg
	for _, c := range r.spec.Aggs {
		var a refAgg
		var t engine.TypeID
		if len(c.Args) > 0 {
			t = r.spec.InputTypes[c.Args[0]].ID
		}
		switch c.Func {
		case "COUNT":
			a = &refCount{star: len(c.Args) == 0}
		case "SUM":
			a = &refSum{t: t, withRetract: c.Retract}
		case "SUM0":
			a = &refSum0{t: t, sum: zero(t)}
		case "AVG":
			a = &refAvg{t: t}
		case "FIRST_VALUE", "LAST_VALUE":
			if c.Retract {
				a = newRefFirstLastRetract(c.Func == "LAST_VALUE", &r.wall)
			} else {
				a = &refFirstLast{last: c.Func == "LAST_VALUE"}
			}
		case "LISTAGG":
			if c.Retract {
				a = newRefListAggRetract(len(c.Args) == 2, r.clock)
			} else {
				a = &refListAgg{}
			}
		case "WELFORD_M2":
			a = &refWelford{}
		case "SINGLE_VALUE":
			a = &refSingleValue{}
		case "MIN", "MAX":
			if c.Retract {
				a = &refMinMaxRetract{max: c.Func == "MAX", keys: map[int64]any{}, counts: map[int64]int64{}, at: map[int64]int64{}, clock: r.clock}
			} else {
				a = &refMinMax{max: c.Func == "MAX"}
			}
		}
		if o := refObjAgg(r.spec, c); o != nil && !(c.Retract && (c.Func == "FIRST_VALUE" || c.Func == "LAST_VALUE")) { // DECIMAL and VARCHAR (reference_decimal_test.go)
			a = o
			if m, ok := o.(*refObjMinMaxRetract); ok {
				m.clock = r.clock
			}
		}
		accs = append(accs, a)
	}
	if r.spec.NeedRetraction {
		accs = append(accs, &refCount{star: true})
	}
	return accs
}

// carryMaps hands the MIN/MAX-with-retraction MapViews of accs to the fresh accumulators of the
// same calls: an expired accumulator row is replaced, its MapViews' entries stay.
func carryMaps(accs, fresh []refAgg) {
	for i, a := range accs {
		switch m := a.(type) {
		case *refMinMaxRetract:
			n := fresh[i].(*refMinMaxRetract)
			n.keys, n.counts, n.at = m.keys, m.counts, m.at
		case *refObjMinMaxRetract:
			n := fresh[i].(*refObjMinMaxRetract)
			n.keys, n.counts, n.at = m.keys, m.counts, m.at
		case *refListAggRetract: // the ListViews stay, the delimiter (accumulator row) is fresh
			n := fresh[i].(*refListAggRetract)
			n.list, n.at, n.retractList = m.list, m.at, m.retractList
		}
	}
}

func (r *refGroupAgg) values(accs []refAgg) []any {
	var out []any
	for _, a := range accs[:len(r.spec.Aggs)] {
		out = append(out, a.value())
	}
	return out
}

func (r *refGroupAgg) process(row []any, kind engine.RowKind, now int64) []enginetest.Row {
	var keyVals []any
	for _, k := range r.spec.Keys {
		keyVals = append(keyVals, row[k])
	}
	key := keyString(keyVals)
	accumulate := engine.IsAccumulate(kind)
	r.clock.now = now
	if r.rows++; r.rows%3 == 0 {
		r.wall.ms++
	}
	st, ok := r.state[key]
	expired := ok && r.spec.StateTTLMs > 0 && st.lastWrite+r.spec.StateTTLMs <= now
	first := false
	if !ok || expired { // an expired accumulator row reads null (NeverReturnExpired)
		if !accumulate {
			return nil
		}
		first = true
		fresh := &refKey{accs: r.create(), distinct: map[int]map[string][]int64{}, distinctAt: map[int]map[string]int64{}}
		if ok { // the MapViews are state of their own, bound to the key: their entries stay
			fresh.distinct, fresh.distinctAt = st.distinct, st.distinctAt
			carryMaps(st.accs, fresh.accs)
		}
		st = fresh
	}
	accs := st.accs
	prev := r.values(accs)
	apply := func(i int, add bool) {
		var v any
		if i < len(r.spec.Aggs) && len(r.spec.Aggs[i].Args) > 0 {
			v = row[r.spec.Aggs[i].Args[0]]
			if j := r.spec.Aggs[i].JavaStrings; j != nil && v != nil && row[*j] == true {
				v = javaString(v.(string))
			}
		}
		d := any(",")
		if i < len(r.spec.Aggs) && len(r.spec.Aggs[i].Args) == 2 {
			d = row[r.spec.Aggs[i].Args[1]]
		}
		if la, ok := accs[i].(*refListAgg); ok {
			la.accumulateWith(v, d)
		} else if lr, ok := accs[i].(*refListAggRetract); ok {
			lr.foldWith(v, d, add)
		} else if add {
			accs[i].accumulate(v)
		} else {
			accs[i].retract(v)
		}
	}
	filterPasses := func(i int) bool {
		f := r.spec.Aggs[i].Filter
		return f == nil || row[*f] == true
	}
	refDistinct(r.spec, st.distinct, nil, row, accumulate, apply, r.clock, st.distinctAt)
	for i := range accs {
		if i < len(r.spec.Aggs) && (r.spec.Aggs[i].Distinct || !filterPasses(i)) {
			continue
		}
		apply(i, accumulate)
	}
	next := r.values(accs)
	out := func(k engine.RowKind, vals []any) enginetest.Row {
		return enginetest.Row{Kind: k, Values: append(append([]any(nil), keyVals...), vals...)}
	}
	countZero := r.spec.NeedRetraction && accs[len(accs)-1].value().(int64) == 0
	if !countZero {
		st.lastWrite = now
		r.state[key] = st
		if first {
			return []enginetest.Row{out(engine.Insert, next)}
		}
		equal := r.spec.StateTTLMs == 0 // with TTL Flink skips the equaliser
		for i := range prev {
			if equal && !jPrimEq(prev[i], next[i]) {
				equal = false
			}
		}
		if equal {
			return nil
		}
		var rows []enginetest.Row
		if r.spec.GenerateUpdateBefore {
			rows = append(rows, out(engine.UpdateBefore, prev))
		}
		return append(rows, out(engine.UpdateAfter, next))
	}
	delete(r.state, key)
	if first {
		return nil
	}
	return []enginetest.Row{out(engine.Delete, prev)}
}

// distinctArgs groups the DISTINCT calls of spec by argument column, the columns in order of
// first appearance (AggregateUtil.extractDistinctInformation's LinkedHashMap).
func distinctArgs(spec *Spec) (order []int, byArg map[int][]int) {
	byArg = map[int][]int{}
	for i, c := range spec.Aggs {
		if c.Distinct {
			if _, seen := byArg[c.Args[0]]; !seen {
				order = append(order, c.Args[0])
			}
			byArg[c.Args[0]] = append(byArg[c.Args[0]], i)
		}
	}
	return order, byArg
}

// refDistinctID identifies a distinct value as Java's equals does: NULL, the value, or a
// float's canonical bits.
func refDistinctID(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float32, float64:
		return fmt.Sprint(jBits(v))
	}
	return enginetest.Format(v)
}

// refDistinct runs the DISTINCT calls of spec on row, per argument column, as
// DistinctAggCodeGen's accumulate and retract do: maps holds each column's MapView (value id →
// per-call bit or count), apply(i, add) folds the row into call i. vals, when not nil, records
// each column's ids' values. With a clock, at holds each column's entries' last writes: an
// expired entry reads as absent, and every put stamps its entry.
func refDistinct(spec *Spec, maps map[int]map[string][]int64, vals map[int]map[string]any, row []any, accumulate bool, apply func(i int, add bool),
	clock *refClock, at map[int]map[string]int64) {
	filterPasses := func(i int) bool {
		f := spec.Aggs[i].Filter
		return f == nil || row[*f] == true
	}
	argOrder, byArg := distinctArgs(spec)
	for _, arg := range argOrder {
		calls := byArg[arg]
		guarded, anyPasses := true, false
		for _, i := range calls {
			if spec.Aggs[i].Filter == nil {
				guarded = false
			}
			if filterPasses(i) {
				anyPasses = true
			}
		}
		if guarded && !anyPasses {
			continue
		}
		m := maps[arg]
		if m == nil {
			m = map[string][]int64{}
			maps[arg] = m
		}
		id := refDistinctID(row[arg])
		var stamps map[string]int64
		if clock != nil {
			if at[arg] == nil {
				at[arg] = map[string]int64{}
			}
			stamps = at[arg]
			if refExpired(clock, stamps, id) {
				delete(m, id)
				delete(stamps, id)
			}
		}
		if vals != nil {
			if vals[arg] == nil {
				vals[arg] = map[string]any{}
			}
			vals[arg][id] = row[arg]
		}
		val := m[id]
		if val == nil {
			val = make([]int64, len(calls))
		}
		changed := false
		for j, i := range calls {
			if !filterPasses(i) {
				continue
			}
			switch {
			case !spec.NeedRetraction:
				if val[j] == 0 {
					val[j], changed = 1, true
					apply(i, true)
				}
			case accumulate:
				if val[j]++; val[j] == 1 {
					apply(i, true)
				}
			default:
				if val[j]--; val[j] == 0 {
					apply(i, false)
				}
			}
		}
		if spec.NeedRetraction {
			empty := true
			for _, x := range val {
				if x != 0 {
					empty = false
				}
			}
			if empty {
				delete(m, id)
				delete(stamps, id)
			} else {
				m[id] = val
				refStamp(clock, stamps, id)
			}
		} else if changed {
			m[id] = val
			refStamp(clock, stamps, id)
		}
	}
}

// keyString identifies a key by its values' exact bits (Flink keys compare BinaryRowData bytes).
func keyString(vals []any) string {
	s := ""
	for _, v := range vals {
		switch x := v.(type) {
		case float32:
			s += "f" + enginetest.Format(math.Float32bits(x))
		case float64:
			s += "d" + enginetest.Format(math.Float64bits(x))
		default:
			s += "v" + enginetest.Format(v)
		}
		s += "|"
	}
	return s
}
