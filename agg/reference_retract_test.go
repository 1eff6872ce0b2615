package agg

import "bytes"

// Reference models of the retracting FIRST_VALUE, LAST_VALUE and LISTAGG, written as Flink
// 2.3's classes are (their data views as Go maps and slices), for refGroupAgg.

// refWall is System.currentTimeMillis as the models of FIRST_VALUE/LAST_VALUE with retraction
// read it: a millisecond that several rows share, advanced by the reference between rows.
type refWall struct{ ms int64 }

// refFirstLastRetract is FirstValueWithRetractAggFunction / LastValueWithRetractAggFunction,
// step for step: the value and its order, valueToOrderMap and orderToValueMap, orders taken
// from the wall clock (rows of one millisecond share an order).
type refFirstLastRetract struct {
	last         bool
	wall         *refWall
	value_       any
	order        *int64
	valueToOrder map[string][]int64
	orderToValue map[int64][]any
}

func newRefFirstLastRetract(last bool, wall *refWall) *refFirstLastRetract {
	return &refFirstLastRetract{last: last, wall: wall, valueToOrder: map[string][]int64{}, orderToValue: map[int64][]any{}}
}

func (r *refFirstLastRetract) accumulate(v any) {
	if v == nil {
		return
	}
	order := r.wall.ms
	id := refDistinctID(v)
	r.valueToOrder[id] = append(r.valueToOrder[id], order)
	if r.order == nil || (!r.last && *r.order > order) || (r.last && *r.order <= order) {
		r.value_, r.order = v, &order
	}
	r.orderToValue[order] = append(r.orderToValue[order], v)
}

func (r *refFirstLastRetract) retract(v any) {
	if v == nil {
		return
	}
	id := refDistinctID(v)
	orders := r.valueToOrder[id]
	if len(orders) == 0 {
		return
	}
	order := orders[0]
	if len(orders) == 1 {
		delete(r.valueToOrder, id)
	} else {
		r.valueToOrder[id] = orders[1:]
	}
	list, ok := r.orderToValue[order]
	if !ok {
		return
	}
	for i, x := range list { // List.indexOf: the first equal element
		if refDistinctID(x) == id {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(r.orderToValue, order)
	} else {
		r.orderToValue[order] = list
	}
	if r.value_ == nil || refDistinctID(r.value_) != id {
		return
	}
	start, found := *r.order, false
	var next int64
	for k := range r.orderToValue { // FIRST: the smallest order >= start; LAST: the largest <= start
		if (!r.last && k >= start && (!found || k < next)) || (r.last && k <= start && (!found || k > next)) {
			next, found = k, true
		}
	}
	if !found {
		r.value_, r.order = nil, nil
		return
	}
	l := r.orderToValue[next]
	if r.last {
		r.value_ = l[len(l)-1]
	} else {
		r.value_ = l[0]
	}
	r.order = &next
}

func (r *refFirstLastRetract) value() any { return r.value_ }

// refListAggRetract is ListAggWithRetractAggFunction (ws false) and
// ListAggWsWithRetractAggFunction (ws true) over StateListViews: list, retractList and the
// delimiter, the lists' elements each stamped as TtlListState stamps them (add: the new one;
// update: all).
type refListAggRetract struct {
	ws          bool
	clock       *refClock
	delim       any // string or nil
	list        []string
	at          []int64 // per element of list: its last write
	retractList []string
}

func newRefListAggRetract(ws bool, clock *refClock) *refListAggRetract {
	return &refListAggRetract{ws: ws, clock: clock, delim: ","}
}

// live is ListState.get: the elements not expired, in order, with their stamps.
func (r *refListAggRetract) live() ([]string, []int64) {
	var l []string
	var at []int64
	for i, x := range r.list {
		if r.clock == nil || r.clock.ttl <= 0 || r.at[i]+r.clock.ttl > r.clock.now {
			l, at = append(l, x), append(at, r.at[i])
		}
	}
	return l, at
}

func (r *refListAggRetract) foldWith(v, d any, add bool) {
	if v == nil {
		return
	}
	if r.ws {
		r.delim = d
	}
	s := v.(string)
	if add {
		r.list = append(r.list, s)
		r.at = append(r.at, r.clock.now)
		return
	}
	l, _ := r.live() // StateListView.remove
	for i, x := range l {
		if x == s {
			l = append(l[:i:i], l[i+1:]...)
			r.list, r.at = l, make([]int64, len(l))
			for j := range r.at {
				r.at[j] = r.clock.now // update stamps every element
			}
			return
		}
	}
	r.retractList = append(r.retractList, s)
}

func (r *refListAggRetract) accumulate(any) { panic("LISTAGG accumulates with its delimiter") }
func (r *refListAggRetract) retract(any)    { panic("LISTAGG retracts with its delimiter") }

func (r *refListAggRetract) value() any {
	l, _ := r.live()
	if len(l) == 0 {
		return nil
	}
	if r.delim == nil {
		return nil // concatWs with a NULL separator
	}
	var b bytes.Buffer
	for i, x := range l {
		if i > 0 {
			b.WriteString(r.delim.(string))
		}
		b.WriteString(x)
	}
	return b.String()
}
