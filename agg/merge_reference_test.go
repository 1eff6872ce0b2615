package agg

import (
	"math/big"

	"github.com/ferrystream/ferry/engine"
)

// The reference model's partial state and merge, written from Flink 2.3.0's merge expressions
// (SumAggFunction, SumWithRetractAggFunction, Sum0AggFunction, AvgAggFunction, CountAggFunction,
// Count1AggFunction, Max/MinAggFunction in flink-table-planner's functions/aggfunctions) and
// Min/MaxWithRetractAggFunction.merge (flink-table-runtime's functions/aggregate), on the boxed
// accumulators of reference_test.go and reference_decimal_test.go. It shares no code with the
// kernels.

// refPartial is the accumulator row of a reference accumulator: its fields in Flink's order.
func refPartial(a refAgg) []any {
	switch r := a.(type) {
	case *refCount:
		return []any{r.n}
	case *refSum:
		if r.withRetract {
			return []any{r.sum, r.count}
		}
		return []any{r.sum}
	case *refSum0:
		return []any{r.sum}
	case *refAvg:
		if r.t == engine.Float || r.t == engine.Double {
			return []any{r.fsum, r.count}
		}
		return []any{r.isum, r.count}
	case *refMinMax:
		return []any{r.v}
	case *refDecSum:
		if r.withRetract {
			return []any{decOrNil(r.sum), r.count}
		}
		return []any{decOrNil(r.sum)}
	case *refDecSum0:
		return []any{decOrNil(r.sum)}
	case *refDecAvg:
		return []any{decOrNil(r.sum), r.count}
	case *refObjMinMax:
		return []any{objValue(r.v)}
	}
	panic("no partial state")
}

func decOrNil(v *big.Int) any {
	if v == nil {
		return nil
	}
	return v
}

// refMergePartial merges one accumulator row p into a.
func refMergePartial(a refAgg, p []any) {
	switch r := a.(type) {
	case *refCount: // count + mergeOperand(count)
		r.n += p[0].(int64)
	case *refSum: // isNull(op) ? sum : isNull(sum) ? op : sum + op; count + op.count
		if p[0] != nil {
			if r.sum == nil {
				r.sum = p[0]
			} else {
				r.sum = jAdd(r.t, r.sum, p[0])
			}
		}
		if r.withRetract {
			r.count += p[1].(int64)
		}
	case *refSum0: // cast(sum0 + op)
		r.sum = jAdd(r.t, r.sum, p[0])
	case *refAvg: // sum + op.sum, count + op.count
		if r.t == engine.Float || r.t == engine.Double {
			r.fsum += p[0].(float64)
		} else {
			r.isum += p[0].(int64)
		}
		r.count += p[1].(int64)
	case *refMinMax: // isNull(op) ? v : isNull(v) ? op : op > v ? op : v (< for MIN)
		if p[0] != nil && (r.v == nil || (r.max && jGreater(p[0], r.v)) || (!r.max && jLess(p[0], r.v))) {
			r.v = p[0]
		}
	case *refDecSum: // as refSum, with aggDecimalPlus
		if p[0] != nil {
			if r.sum == nil {
				r.sum = p[0].(*big.Int)
			} else {
				r.sum = fromBigDecimal(new(big.Int).Add(r.sum, p[0].(*big.Int)), r.s, 38, r.s)
			}
		}
		if r.withRetract {
			r.count += p[1].(int64)
		}
	case *refDecSum0: // aggDecimalPlus: NULL when either side is
		r.sum = refDecPlus(r.sum, p[0], r.s)
	case *refDecAvg:
		r.sum = refDecPlus(r.sum, p[0], r.s)
		r.count += p[1].(int64)
	case *refObjMinMax:
		if p[0] != nil && (r.v == nil || (r.max && objCompareTo(p[0], r.v) > 0) || (!r.max && objCompareTo(p[0], r.v) < 0)) {
			r.v = p[0]
		}
	default:
		panic("no partial merge")
	}
}

// refDecPlus is aggDecimalPlus(sum, op) at DECIMAL(38, s): NULL in, NULL out; NULL beyond 38
// digits.
func refDecPlus(sum *big.Int, op any, s int) *big.Int {
	if sum == nil || op == nil {
		return nil
	}
	return fromBigDecimal(new(big.Int).Add(sum, op.(*big.Int)), s, 38, s)
}

// refMergeAcc is Min/MaxWithRetractAggFunction.merge(acc, [other]).
func refMergeAcc(a, b refAgg) {
	switch r := a.(type) {
	case *refMinMaxRetract:
		o := b.(*refMinMaxRetract)
		if r.mapSize == 0 || (o.mapSize > 0 && o.min != nil && r.better(r.min, o.min)) {
			r.min = o.min
		}
		update := false
		for k, oc := range o.counts {
			tc := r.get(k)
			m := oc + tc
			if m == 0 {
				r.remove(k)
			} else {
				r.put(k, o.keys[k], m)
			}
			switch {
			case m <= 0 && tc > 0:
				r.mapSize--
				if r.min != nil && jBits(o.keys[k]) == jBits(r.min) {
					update = true
				}
			case m > 0 && tc <= 0:
				r.mapSize++
			}
		}
		if update { // updateMin: every key, negative counts included
			has := false
			for kk, key := range r.keys {
				if refExpired(r.clock, r.at, kk) { // the iterator skips and deletes it
					r.remove(kk)
					continue
				}
				if !has || r.better(r.min, key) {
					r.min, has = key, true
				}
			}
			if !has {
				r.mapSize, r.min = 0, nil
			}
		}
	case *refObjMinMaxRetract:
		o := b.(*refObjMinMaxRetract)
		if r.mapSize == 0 || (o.mapSize > 0 && o.ext != nil && r.better(r.ext, o.ext)) {
			r.ext = o.ext
		}
		update := false
		for k, oc := range o.counts {
			tc := r.get(k)
			m := oc + tc
			if m == 0 {
				r.remove(k)
			} else {
				r.put(k, o.keys[k], m)
			}
			switch {
			case m <= 0 && tc > 0:
				r.mapSize--
				if r.ext != nil && objKey(o.keys[k]) == objKey(r.ext) {
					update = true
				}
			case m > 0 && tc <= 0:
				r.mapSize++
			}
		}
		if update {
			has := false
			for kk, key := range r.keys {
				if refExpired(r.clock, r.at, kk) { // the iterator skips and deletes it
					r.remove(kk)
					continue
				}
				if !has || r.better(r.ext, key) {
					r.ext, has = key, true
				}
			}
			if !has {
				r.mapSize, r.ext = 0, nil
			}
		}
	default:
		panic("no accumulator merge")
	}
}
