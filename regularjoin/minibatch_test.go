package regularjoin

import (
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// The model's mini-batch mode, written from MiniBatchStreamingJoinOperator and its bundles'
// comments: per side a java.util.HashMap of join keys (nmap: the naive HashMap, its table kept by
// clear()), each holding the messages of its key (join_key_contains_unique_key), a map unique key
// -> messages (input_has_unique_key) or a map row hashCode -> rows (no_unique_key), folded as
// the bundles' tables say; at the bundle's end the right side first (the left first for RIGHT),
// the keys in their maps' orders, a "-X +X" pair with isSuppress.

// nmap is a naive java.util.HashMap: entries in insertion order, the iteration order computed
// (sorted by bin, stable), the table length tracked through resizes (no tree bins).
type nmap struct {
	t    interface{ Fatal(...any) }
	tab  int
	ents []*nent
}

type nent struct {
	key  string
	hash int32
	val  any
}

func (m *nmap) get(key string) *nent {
	for _, e := range m.ents {
		if e.key == key {
			return e
		}
	}
	return nil
}

// put adds an absent key: the table allocated at 16 at the first put, doubled when a bin of 8
// or more grows in a table shorter than 64 (a tree bin otherwise: outside the model) and when the
// size exceeds 3/4 of it.
func (m *nmap) put(key string, hash int32, val any) *nent {
	if m.tab == 0 {
		m.tab = 16
	}
	n := 0
	for _, x := range m.ents {
		if bin(x.hash, m.tab) == bin(hash, m.tab) {
			n++
		}
	}
	e := &nent{key: key, hash: hash, val: val}
	m.ents = append(m.ents, e)
	if n >= 8 {
		if m.tab >= 64 {
			m.t.Fatal("the model has no tree bins")
		}
		m.tab *= 2
	}
	if len(m.ents) > m.tab*3/4 {
		m.tab *= 2
	}
	return e
}

func (m *nmap) remove(key string) {
	m.ents = slices.DeleteFunc(m.ents, func(e *nent) bool { return e.key == key })
}

func (m *nmap) order() []*nent {
	o := slices.Clone(m.ents)
	slices.SortStableFunc(o, func(a, b *nent) int { return bin(a.hash, m.tab) - bin(b.hash, m.tab) })
	return o
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

// queue is BufferBundle.addRecord.
func (md *model) queue(side int, kind engine.RowKind, vals []any) {
	mb := &md.mb
	mb.queued++
	keys := &mb.sides[side]
	keys.t = md.t
	jk := fmt.Sprint(vals[0])
	ke := keys.get(jk)
	if ke == nil {
		ke = keys.put(jk, md.joinKeyHash(vals), &mbKey{inner: nmap{t: md.t}})
	}
	k := ke.val.(*mbKey)
	m := mMsg{kind, vals}
	// foldLast folds m into the messages of a unique key: +/+ and -/- keep the last, + then -
	// clears both, - then + keeps both. It reports whether the list emptied.
	foldLast := func(msgs *[]mMsg) bool {
		if n := len(*msgs); n > 0 {
			last := (*msgs)[n-1]
			switch {
			case isAcc(last.kind) && !isAcc(m.kind):
				*msgs = (*msgs)[:n-1]
				return len(*msgs) == 0
			case isAcc(last.kind) == isAcc(m.kind):
				(*msgs)[n-1] = m
				return false
			}
		}
		*msgs = append(*msgs, m)
		return false
	}
	switch md.layout(side) {
	case LayoutJoinKeyUnique:
		if foldLast(&k.msgs) {
			keys.remove(jk)
		}
	case LayoutUniqueKey:
		uk, h := md.mapKey(side, vals)
		e := k.inner.get(uk)
		if e == nil {
			e = k.inner.put(uk, h, &[]mMsg{})
		}
		if foldLast(e.val.(*[]mMsg)) {
			k.inner.remove(uk)
			if len(k.inner.ents) == 0 {
				keys.remove(jk)
			}
		}
	default:
		id, h := md.mapKey(side, vals)
		hk := fmt.Sprint(h) // an Integer key: its hashCode is its value
		e := k.inner.get(hk)
		if e == nil {
			e = k.inner.put(hk, h, &[]mMsg{})
		}
		msgs := e.val.(*[]mMsg)
		for i := len(*msgs) - 1; i >= 0; i-- {
			o := (*msgs)[i]
			if isAcc(o.kind) != isAcc(kind) {
				if oid, _ := md.mapKey(side, o.vals); oid == id {
					*msgs = slices.Delete(*msgs, i, i+1)
					if len(*msgs) == 0 {
						k.inner.remove(hk)
						if len(k.inner.ents) == 0 {
							keys.remove(jk)
						}
					}
					return
				}
			}
		}
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
				result.put(ke.key, ke.hash, ke.val)
			}
			for _, ke := range result.order() {
				for _, e := range ke.val.(*mbKey).inner.order() {
					for _, m := range *e.val.(*[]mMsg) {
						md.element(side, m.kind, m.vals, false)
					}
				}
			}
		}
		keys.ents = nil // clear(): the table stays
	}
	md.mb.queued = 0
}
