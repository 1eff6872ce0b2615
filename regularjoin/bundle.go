package regularjoin

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/internal/javamap"
)

// miniBatch is the mini-batch mode of a Join (params mini_batch): Flink 2.3's
// MiniBatchStreamingJoinOperator, which queues each side's rows in a BufferBundle of the side's
// layout (operators/join/stream/bundle) and joins them at the end of the bundle (finishBundle):
//
//   - join_key_contains_unique_key (JoinKeyContainsUniqueKeyBundle): per join key a list;
//   - input_has_unique_key (InputSideHasUniqueKeyBundle): per join key a HashMap unique key ->
//     list;
//   - no_unique_key (InputSideHasNoUniqueKeyBundle): per join key a HashMap Integer (the row's
//     hashCode, RowKind INSERT) -> list.
//
// The lists of the two unique-key layouts fold on their last message (foldLast): they hold +X,
// -X or -X +X. Flink fills every map with computeIfAbsent, which links a new key at the head of
// its bin and resizes before it looks the key up (javamap.Map.ComputeIfAbsent). A no_unique_key list drops the last earlier row of the opposite kind (+ against
// -) equal to a new row, else appends it. Every map is a java.util.HashMap (javamap), the
// bundle's map of join keys kept with its table across bundles (BufferBundle.clear is
// HashMap.clear), so the rows are joined in Flink's order.
type miniBatch struct {
	sides [2]bundle
	count int   // rows queued since the last finish (BufferBundle.count of both sides)
	bytes int64 // an estimate of the queued rows' memory, counted in the join's Bytes
}

// queuedBytes estimates a queued row's memory beyond its bytes (its share of the lists and maps).
const queuedBytes = 64

// bundle is one side's BufferBundle: its join keys (Flink's field bundle).
type bundle struct {
	keys joinKeyMap
}

type joinKeyMap = javamap.Map[[]byte, bKey, *bKey]

// queued is a queued input row: its kind and the row as process reads it, its bytes owned by
// the bundle.
type queued struct {
	kind engine.RowKind
	in   input
}

// bKey is a join key of a bundle: its messages (join_key_contains_unique_key), or its map of
// unique keys (uk) or of row hashCodes (rows).
type bKey struct {
	e    javamap.Entry[bKey]
	key  []byte
	hash int32 // the join key's hashCode
	list []queued
	uk   javamap.Map[[]byte, bList, *bList]
	rows javamap.Map[int32, bHash, *bHash]
}

func (k *bKey) Entry() *javamap.Entry[bKey] { return &k.e }
func (k *bKey) KeyEquals(o []byte) bool     { return bytes.Equal(k.key, o) }

// Compare stands in for tieBreakOrder (identity hash codes) between BinaryRowData keys of equal
// hash in a tree bin, as record.Compare does.
func (k *bKey) Compare(o *bKey) int { return bytes.Compare(k.key, o.key) }

// bList is a unique key's messages (input_has_unique_key).
type bList struct {
	e    javamap.Entry[bList]
	key  []byte
	list []queued
}

func (l *bList) Entry() *javamap.Entry[bList] { return &l.e }
func (l *bList) KeyEquals(o []byte) bool      { return bytes.Equal(l.key, o) }
func (l *bList) Compare(o *bList) int         { return bytes.Compare(l.key, o.key) }

// bHash is the messages of the rows of one hashCode (no_unique_key): an Integer key.
type bHash struct {
	e    javamap.Entry[bHash]
	h    int32
	list []queued
}

func (l *bHash) Entry() *javamap.Entry[bHash] { return &l.e }
func (l *bHash) KeyEquals(h int32) bool       { return l.h == h }
func (l *bHash) Compare(o *bHash) int         { return cmp.Compare(l.h, o.h) } // Integer.compareTo

// bRef is a join key in the HashMap InputSideHasNoUniqueKeyBundle.getRecords builds anew.
type bRef struct {
	e javamap.Entry[bRef]
	k *bKey
}

func (r *bRef) Entry() *javamap.Entry[bRef] { return &r.e }
func (r *bRef) KeyEquals(o []byte) bool     { return bytes.Equal(r.k.key, o) }
func (r *bRef) Compare(o *bRef) int         { return bytes.Compare(r.k.key, o.k.key) }

// queue adds the rows of a Process call to the bundles, in arrival order
// (processElement1/2: BufferBundle.addRecord). The call's rows are encoded (j.call).
func (mb *miniBatch) queue(j *Join, in *engine.Inputs) {
	var next [2]int
	for _, r := range in.Runs {
		side := r.Input
		kinds := in.Batches[side].Kinds
		for i := next[side]; i < next[side]+r.Rows; i++ {
			q := queued{kind: kinds[i], in: j.input(side, i)}
			q.in.key, q.in.mk = slices.Clone(q.in.key), slices.Clone(q.in.mk)
			mb.sides[side].add(j.sides[side].layout, q)
			mb.count++
			mb.bytes += queuedBytes + int64(len(q.in.key)+len(q.in.row)+len(q.in.mk))
		}
		next[side] += r.Rows
	}
}

// add is BufferBundle.addRecord of a side of layout l, its HashMap calls as Flink makes them:
// computeIfAbsent of the join key (and of the unique key or row hashCode), the fold, and, when
// the row is kept, computeIfAbsent again before the list's add (a call that can resize the map,
// though the key is present: HashMap.computeIfAbsent resizes first).
func (b *bundle) add(l layout, q queued) {
	newKey := func() *bKey { return &bKey{key: q.in.key, hash: q.in.hash} }
	k := b.keys.ComputeIfAbsent(q.in.key, q.in.hash, newKey)
	switch l {
	case joinKeyUnique:
		if foldLast(&k.list, q) {
			if len(k.list) == 0 {
				b.keys.RemoveKey(k)
			}
			return
		}
		k = b.keys.ComputeIfAbsent(q.in.key, q.in.hash, newKey)
		k.list = append(k.list, q)
	case uniqueKey:
		newList := func() *bList { return &bList{key: q.in.mk} }
		e := k.uk.ComputeIfAbsent(q.in.mk, q.in.mh, newList)
		if foldLast(&e.list, q) {
			if len(e.list) == 0 {
				k.uk.RemoveKey(e)
				if k.uk.Len() == 0 {
					b.keys.RemoveKey(k)
				}
			}
			return
		}
		k = b.keys.ComputeIfAbsent(q.in.key, q.in.hash, newKey)
		e = k.uk.ComputeIfAbsent(q.in.mk, q.in.mh, newList)
		e.list = append(e.list, q)
	default:
		newHash := func() *bHash { return &bHash{h: q.in.mh} }
		e := k.rows.ComputeIfAbsent(q.in.mh, q.in.mh, newHash) // in foldRecord
		acc := engine.IsAccumulate(q.kind)
		for i := len(e.list) - 1; i >= 0; i-- { // InputSideHasNoUniqueKeyBundle.foldRecord
			if o := e.list[i]; engine.IsAccumulate(o.kind) != acc && bytes.Equal(o.in.mk, q.in.mk) {
				e.list = slices.Delete(e.list, i, i+1)
				if len(e.list) == 0 {
					k.rows.RemoveKey(e)
					if k.rows.Len() == 0 {
						b.keys.RemoveKey(k)
					}
				}
				return
			}
		}
		k = b.keys.ComputeIfAbsent(q.in.key, q.in.hash, newKey)
		e = k.rows.ComputeIfAbsent(q.in.mh, q.in.mh, newHash)
		e.list = append(e.list, q)
	}
}

// foldLast is the foldRecord of the two unique-key bundles, on the last message of list: after
// an accumulate message, both go for a retraction q (folded: q is dropped) and the last goes for
// an accumulate q; after a retraction, a retraction q replaces it. Unless folded, q is then
// appended by the caller (so after a retraction an accumulate message follows it).
func foldLast(list *[]queued, q queued) (folded bool) {
	acc := engine.IsAccumulate(q.kind)
	if n := len(*list); n > 0 {
		lastAcc := engine.IsAccumulate((*list)[n-1].kind)
		if lastAcc || !acc {
			*list = (*list)[:n-1]
		}
		return lastAcc && !acc
	}
	return false
}

// finish is finishBundle: processBundles, then both bundles cleared. A RIGHT join processes the
// left bundle first; INNER, LEFT and FULL the right bundle first.
func (mb *miniBatch) finish(j *Join) {
	first := 1
	if !j.sides[0].outer && j.sides[1].outer {
		first = 0
	}
	mb.finishSide(j, first)
	mb.finishSide(j, 1-first)
	for s := range mb.sides {
		mb.sides[s].keys.Clear()
	}
	mb.count, mb.bytes = 0, 0
}

// finishSide is processSingleSideBundles for side's bundle: the join keys in their HashMap's
// order, and within a key the unique keys or row hashCodes in theirs.
func (mb *miniBatch) finishSide(j *Join, side int) {
	b := &mb.sides[side]
	keys := b.keys.AppendOrder(nil)
	switch j.sides[side].layout {
	case joinKeyUnique:
		for _, k := range keys {
			j.suppressed(side, k.list)
		}
	case uniqueKey:
		var lists []*bList
		for _, k := range keys {
			lists = k.uk.AppendOrder(lists[:0])
			for _, l := range lists {
				j.suppressed(side, l.list)
			}
		}
	default:
		// getRecords copies the join keys into a new HashMap, whose order can differ from the
		// bundle's (a longer table); the -U/+U pairs are folded already, so no suppression.
		var result javamap.Map[[]byte, bRef, *bRef]
		for _, k := range keys {
			result.ComputeIfAbsent(k.key, k.hash, func() *bRef { return &bRef{k: k} })
		}
		var lists []*bHash
		for _, r := range result.AppendOrder(nil) {
			lists = r.k.rows.AppendOrder(lists[:0])
			for _, l := range lists {
				for i := range l.list {
					j.process(side, &l.list[i].in, l.list[i].kind, false)
				}
			}
		}
	}
}

// suppressed is processElementWithSuppress over the messages of one key of side: a retraction
// followed by an accumulate message is processed as a suppressed pair.
func (j *Join) suppressed(side int, list []queued) {
	var pre *queued // a retraction whose processing waits for the next message
	for i := 0; i < len(list); i++ {
		cur := &list[i]
		if !engine.IsAccumulate(cur.kind) && i+1 < len(list) {
			i++
			next := &list[i]
			suppress := engine.IsAccumulate(next.kind)
			if !suppress {
				pre = next // retraction, retraction
			}
			j.process(side, &cur.in, cur.kind, suppress)
			if suppress {
				j.process(side, &next.in, next.kind, true)
			}
			continue
		}
		suppress := false
		if pre != nil {
			suppress = engine.IsAccumulate(cur.kind)
			j.process(side, &pre.in, pre.kind, suppress)
			pre = nil
		}
		j.process(side, &cur.in, cur.kind, suppress)
	}
}
