package regularjoin

import (
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// The model's mini-batch mode, written from MiniBatchStreamingJoinOperator and its bundles'
// comments: per side a java.util.HashMap of join keys (nmap: a naive HashMap filled with
// computeIfAbsent, its table kept by clear()), each holding the messages of its key (join_key_contains_unique_key), a map unique key
// -> messages (input_has_unique_key) or a map row hashCode -> rows (no_unique_key), folded as
// the bundles' tables say; at the bundle's end the right side first (the left first for RIGHT),
// the keys in their maps' orders, a "-X +X" pair with isSuppress.

// nmap is a naive java.util.HashMap filled with computeIfAbsent: its bins as slices (no tree
// bins: it fails if one would form), split in order when the table doubles.
type nmap struct {
	t    interface{ Fatal(...any) }
	bins [][]*nent
	size int
}

type nent struct {
	key  string
	hash int32
	val  any
}

func (m *nmap) grow() {
	n := 16
	if len(m.bins) > 0 {
		n = 2 * len(m.bins)
	}
	nb := make([][]*nent, n)
	for _, b := range m.bins {
		for _, e := range b {
			nb[bin(e.hash, n)] = append(nb[bin(e.hash, n)], e)
		}
	}
	m.bins = nb
}

// computeIfAbsent is HashMap.computeIfAbsent: first a resize when the size exceeds 3/4 of the
// table (or its allocation, 16 bins), whether key is present or not; a new key goes to the head
// of its bin, and a bin that held 7 keys or more doubles a table shorter than 64 (a tree bin in
// a longer one: outside the model).
func (m *nmap) computeIfAbsent(key string, hash int32, val func() any) *nent {
	if m.bins == nil || m.size > len(m.bins)*3/4 {
		m.grow()
	}
	i := bin(hash, len(m.bins))
	for _, e := range m.bins[i] {
		if e.key == key {
			return e
		}
	}
	e := &nent{key: key, hash: hash, val: val()}
	held := len(m.bins[i])
	m.bins[i] = append([]*nent{e}, m.bins[i]...)
	m.size++
	if held >= 7 {
		if len(m.bins) >= 64 {
			m.t.Fatal("the model has no tree bins")
		}
		m.grow()
	}
	return e
}

func (m *nmap) remove(key string) {
	for i, b := range m.bins {
		if j := slices.IndexFunc(b, func(e *nent) bool { return e.key == key }); j >= 0 {
			m.bins[i] = slices.Delete(b, j, j+1)
			m.size--
			return
		}
	}
}

func (m *nmap) order() []*nent {
	var o []*nent
	for _, b := range m.bins {
		o = append(o, b...)
	}
	return o
}

// clear is HashMap.clear: the table stays.
func (m *nmap) clear() {
	clear(m.bins)
	m.size = 0
}

// mMsg is one queued message.
type mMsg struct {
	kind engine.RowKind
	vals []any
}

// mbKey is a join key of a model bundle: its messages, or its inner map.
type mbKey struct {
	msgs  []mMsg
	inner nmap // values: *[]mMsg
}

type mBundles struct {
	sides  [2]nmap // join key -> *mbKey
	queued int
}

func isAcc(k engine.RowKind) bool { return k == engine.Insert || k == engine.UpdateAfter }

// joinKeyHash is the BinaryRowData hashCode of the join key of vals.
func (md *model) joinKeyHash(vals []any) int32 {
	enc := engine.NewKeyEncoder([]int{0}, sideTypes)
	b := enginetest.Batch(sideTypes, [][]any{vals}, []engine.RowKind{0}, enginetest.Options{})
	if err := enc.Encode(b); err != nil {
		md.t.Fatal(err)
	}
	return enc.Hash(0)
}

// queue is BufferBundle.addRecord: computeIfAbsent of the join key (and of the unique key or
// row hashCode), the fold, and unless folded computeIfAbsent again before the list's add.
func (md *model) queue(side int, kind engine.RowKind, vals []any) {
	mb := &md.mb
	mb.queued++
	keys := &mb.sides[side]
	keys.t = md.t
	jk, jh := fmt.Sprint(vals[0]), md.joinKeyHash(vals)
	newKey := func() any { return &mbKey{inner: nmap{t: md.t}} }
	k := keys.computeIfAbsent(jk, jh, newKey).val.(*mbKey)
	m := mMsg{kind, vals}
	// foldLast folds m into the messages of a unique key (the bundles' table): +X then -X
	// clears both (folded: m dropped), +/+ and -/- keep only m, -X then +X keeps both.
	foldLast := func(msgs *[]mMsg) (folded bool) {
		if n := len(*msgs); n > 0 {
			last := (*msgs)[n-1]
			switch {
			case isAcc(last.kind) && !isAcc(m.kind):
				*msgs = (*msgs)[:n-1]
				return true
			case isAcc(last.kind) == isAcc(m.kind):
				*msgs = (*msgs)[:n-1]
			}
		}
		return false
	}
	newList := func() any { return &[]mMsg{} }
	switch md.layout(side) {
	case LayoutJoinKeyUnique:
		if foldLast(&k.msgs) {
			if len(k.msgs) == 0 {
				keys.remove(jk)
			}
			return
		}
		k = keys.computeIfAbsent(jk, jh, newKey).val.(*mbKey)
		k.msgs = append(k.msgs, m)
	case LayoutUniqueKey:
		uk, h := md.mapKey(side, vals)
		msgs := k.inner.computeIfAbsent(uk, h, newList).val.(*[]mMsg)
		if foldLast(msgs) {
			if len(*msgs) == 0 {
				k.inner.remove(uk)
				if k.inner.size == 0 {
					keys.remove(jk)
				}
			}
			return
		}
		k = keys.computeIfAbsent(jk, jh, newKey).val.(*mbKey)
		msgs = k.inner.computeIfAbsent(uk, h, newList).val.(*[]mMsg)
		*msgs = append(*msgs, m)
	default:
		id, h := md.mapKey(side, vals)
		hk := fmt.Sprint(h) // an Integer key: its hashCode is its value
		msgs := k.inner.computeIfAbsent(hk, h, newList).val.(*[]mMsg)
		for i := len(*msgs) - 1; i >= 0; i-- {
			o := (*msgs)[i]
			if isAcc(o.kind) != isAcc(kind) {
				if oid, _ := md.mapKey(side, o.vals); oid == id {
					*msgs = slices.Delete(*msgs, i, i+1)
					if len(*msgs) == 0 {
						k.inner.remove(hk)
						if k.inner.size == 0 {
							keys.remove(jk)
						}
					}
					return
				}
			}
		}
		k = keys.computeIfAbsent(jk, jh, newKey).val.(*mbKey)
		msgs = k.inner.computeIfAbsent(hk, h, newList).val.(*[]mMsg)
		*msgs = append(*msgs, m)
	}
}

// finish is finishBundle.
func (md *model) finish() {
	order := []int{1, 0}
	if md.p.JoinType == "RIGHT" {
		order = []int{0, 1}
	}
	for _, side := range order {
		keys := &md.mb.sides[side]
		// withSuppress: the folded lists of the unique-key layouts are "+X", "-X" or "-X +X".
		withSuppress := func(msgs []mMsg) {
			switch {
			case len(msgs) == 1:
				md.element(side, msgs[0].kind, msgs[0].vals, false)
			case len(msgs) == 2 && !isAcc(msgs[0].kind) && isAcc(msgs[1].kind):
				md.element(side, msgs[0].kind, msgs[0].vals, true)
				md.element(side, msgs[1].kind, msgs[1].vals, true)
			default:
				md.t.Fatalf("model: unexpected folded messages %v", msgs)
			}
		}
		switch md.layout(side) {
		case LayoutJoinKeyUnique:
			for _, ke := range keys.order() {
				withSuppress(ke.val.(*mbKey).msgs)
			}
		case LayoutUniqueKey:
			for _, ke := range keys.order() {
				for _, e := range ke.val.(*mbKey).inner.order() {
					withSuppress(*e.val.(*[]mMsg))
				}
			}
		default:
			result := nmap{t: md.t} // getRecords' new HashMap of the join keys
			for _, ke := range keys.order() {
				val := ke.val
				result.computeIfAbsent(ke.key, ke.hash, func() any { return val })
			}
			for _, ke := range result.order() {
				for _, e := range ke.val.(*mbKey).inner.order() {
					for _, m := range *e.val.(*[]mMsg) {
						md.element(side, m.kind, m.vals, false)
					}
				}
			}
		}
		keys.clear()
	}
	md.mb.queued = 0
}
