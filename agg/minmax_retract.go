package agg

import (
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// minMaxRetractAcc is MIN or MAX with retraction: Flink's Min/MaxWithRetractAggFunction, step
// for step. Per group it keeps the current extreme, mapSize (values whose count turned
// positive) and a value→count multiset in which counts may go negative. Retracting the current
// extreme down to count 0 rescans every value of the group, negative counts included. The value
// is the extreme while mapSize > 0, else NULL.
type minMaxRetractAcc[T number] struct {
	col     int
	max     bool
	ext     []T    // current min (or max)
	hasExt  []bool // ext is not NULL
	mapSize []int64
	counts  valueCounts[T]
	rowValues[T]
}

func (a *minMaxRetractAcc[T]) Grow(n int) {
	a.ext, a.hasExt, a.mapSize = extend(a.ext, n), extend(a.hasExt, n), extend(a.mapSize, n)
	a.counts.growGroups(n)
}

func (a *minMaxRetractAcc[T]) Reset(g int32) {
	a.ext[g], a.hasExt[g], a.mapSize[g] = 0, false, 0
	a.counts.clearGroup(g)
}

func (a *minMaxRetractAcc[T]) Bytes() int64 {
	return int64(cap(a.ext))*8 + int64(cap(a.hasExt)) + int64(cap(a.mapSize))*8 + a.counts.bytes()
}

func (a *minMaxRetractAcc[T]) value(g int32) (T, bool) {
	if a.mapSize[g] > 0 && a.hasExt[g] {
		return a.ext[g], false
	}
	return 0, true
}

// beyond reports whether v would replace ext: ext.compareTo(v) > 0 for MIN, < 0 for MAX.
func (a *minMaxRetractAcc[T]) beyond(ext, v T) bool {
	if a.max {
		return compare(ext, v) < 0
	}
	return compare(ext, v) > 0
}

func (a *minMaxRetractAcc[T]) fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.rowValues.reset(in.Len)
	col := &in.Cols[a.col]
	vals := engine.Values[T](col, in.Len)
	act = act[:in.Len]
	gids = gids[:in.Len]
	for i, g := range gids {
		if g < 0 {
			continue
		}
		pv, pn := a.value(g)
		if d := act[i]; d != 0 && !col.IsNull(i) {
			if d > 0 {
				a.accumulate(g, vals[i])
			} else {
				a.retract(g, vals[i])
			}
		}
		nv, nn := a.value(g)
		a.record(i, pv, pn, nv, nn, changed)
	}
}

func (a *minMaxRetractAcc[T]) accumulate(g int32, v T) {
	if a.mapSize[g] == 0 || a.beyond(a.ext[g], v) {
		a.ext[g], a.hasExt[g] = v, true
	}
	m := &a.counts
	e := m.find(g, v)
	var c int64 = 1
	if e >= 0 {
		c = m.cnt[e] + 1
	}
	switch {
	case c == 0: // a -1 brought back to 0
		m.remove(e)
	case e >= 0:
		m.cnt[e] = c
	default:
		m.insert(g, v, c)
	}
	if c == 1 {
		a.mapSize[g]++
	}
}

func (a *minMaxRetractAcc[T]) retract(g int32, v T) {
	m := &a.counts
	e := m.find(g, v)
	var c int64 = -1
	if e >= 0 {
		c = m.cnt[e] - 1
	}
	if c != 0 {
		if e >= 0 {
			m.cnt[e] = c
		} else {
			m.insert(g, v, c)
		}
		return // negative counts are not part of mapSize
	}
	m.remove(e)
	a.mapSize[g]--
	if a.mapSize[g] == 0 {
		a.hasExt[g] = false
		return
	}
	if a.hasExt[g] && bitsOf(v) == bitsOf(a.ext[g]) {
		a.rescan(g)
	}
}

// rescan is Flink's updateMin/updateMax: the extreme over every value of the group.
func (a *minMaxRetractAcc[T]) rescan(g int32) {
	m := &a.counts
	found := false
	for e := m.head[g]; e >= 0; e = m.next[e] {
		if v := m.val[e]; !found || a.beyond(a.ext[g], v) {
			a.ext[g], found = v, true
		}
	}
	if !found {
		a.mapSize[g], a.hasExt[g] = 0, false
	}
}

func (a *minMaxRetractAcc[T]) Save(dst []byte, g int32) []byte {
	dst = putBool(dst, a.hasExt[g])
	dst = putScalar(dst, a.ext[g])
	dst = putVarint(dst, a.mapSize[g])
	m := &a.counts
	n := 0
	for e := m.head[g]; e >= 0; e = m.next[e] {
		n++
	}
	dst = putVarint(dst, int64(n))
	for e := m.head[g]; e >= 0; e = m.next[e] {
		dst = putVarint(putScalar(dst, m.val[e]), m.cnt[e])
	}
	return dst
}

func (a *minMaxRetractAcc[T]) Load(src []byte, g int32) ([]byte, error) {
	var err error
	if a.hasExt[g], src, err = getBool(src); err != nil {
		return nil, err
	}
	if a.ext[g], src, err = getScalar[T](src); err != nil {
		return nil, err
	}
	if a.mapSize[g], src, err = getVarint(src); err != nil {
		return nil, err
	}
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src)) {
		return nil, fmt.Errorf("%w: value count %d out of range", engine.ErrData, n)
	}
	for k := int64(0); k < n; k++ {
		var v T
		var c int64
		if v, src, err = getScalar[T](src); err != nil {
			return nil, err
		}
		if c, src, err = getVarint(src); err != nil {
			return nil, err
		}
		if c == 0 || a.counts.find(g, v) >= 0 {
			return nil, fmt.Errorf("%w: invalid value count entry", engine.ErrData)
		}
		a.counts.insert(g, v, c)
	}
	return src, nil
}
