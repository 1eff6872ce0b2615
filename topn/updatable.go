package topn

import (
	"bytes"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// UpdatableTopNFunction over one key's buffer: Flink's TopNBuffer of row keys (LinkedHashSets
// under sort keys) and its rowKeyMap (row key to the row) are one structure here, each group's
// rows beside their row keys (group.rowKeys). Flink keeps its buffers in an LRU cache in front of
// its data-state-with-update, flushed at every snapshot and eviction and rebuilt in the same order
// after a miss, so the cache does not change results. Flink's function is lenient: a row whose
// sort key got worse (the monotonicity the planner assumed broken) is logged and handled as Flink
// handles it.

// errRank is Flink's checkArgument(currentRank == oldRank) failing.
var errRank = fmt.Errorf("%w: Flink's UpdatableTopNFunction fails on this row: its checkArgument(currentRank == oldRank) does not hold", engine.ErrData)

// updatable is UpdatableTopNFunction.processElement for row i of in, of key id.
func (t *TopN) updatable(id int32, in *engine.Batch, i int) error {
	t.sk = t.sortKey.encodeRow(t.sk[:0], in, i)
	t.rk = t.bufs.rowKey.encodeRow(t.rk[:0], in, i)
	gi, j, known := t.findRowKey(id, t.rk)
	if !known && !t.bufs.bufs[id].admits(t.sk, t.p.RankEnd) {
		return nil // checkSortKeyInBufferRange: a new row key behind a full buffer; never encoded
	}
	row := t.encode(in, i)
	if t.p.OutputRankNumber || t.p.RankStart > 1 {
		return t.updatableWithRowNumber(id, row, gi, j, known)
	}
	t.updatableWithoutRowNumber(id, row, gi, j, known)
	return nil
}

// findRowKey returns the position of the row of row key rk in key id's buffer (rowKeyMap's entry),
// ok false when absent.
func (t *TopN) findRowKey(id int32, rk []byte) (gi, j int, ok bool) {
	for gi, g := range t.bufs.bufs[id].groups {
		for j, k := range g.rowKeys {
			if bytes.Equal(k, rk) {
				return gi, j, true
			}
		}
	}
	return 0, 0, false
}

// rowNumber is Flink's rowNumber: the rank of the row of row key rk under sort key sk (found: the
// caller knows it is there).
func (t *TopN) rowNumber(id int32, sk, rk []byte) int64 {
	rank := int64(1)
	for _, g := range t.bufs.bufs[id].groups {
		if !bytes.Equal(g.sortKey, sk) {
			rank += int64(len(g.rows))
			continue
		}
		for _, k := range g.rowKeys {
			if bytes.Equal(k, rk) {
				return rank
			}
			rank++
		}
	}
	panic("topn: rowNumber of a row not in the buffer")
}

// move takes the row at (gi, j) of key id's buffer out and puts row, of sort key t.sk, at the end
// of its sort key's rows; it returns the stored copy.
func (t *TopN) move(id int32, gi, j int, row []byte) []byte {
	t.bufs.removeRow(id, gi, j)
	t.bufs.dropIfEmpty(id, gi)
	return t.bufs.put(id, t.sk, row)
}

// updatableWithRowNumber is processElementWithRowNumber for row, whose row key is at (gi, j) of
// key id's buffer when known (else it was admitted).
func (t *TopN) updatableWithRowNumber(id int32, row []byte, gi, j int, known bool) error {
	b := &t.bufs.bufs[id]
	if !known {
		stored := t.bufs.put(id, t.sk, row)
		return t.updatableEmit(id, stored, nil, nil, -1)
	}
	old := b.groups[gi].rows[j]
	oldSk := b.groups[gi].sortKey
	switch cmp := bytes.Compare(t.sk, oldSk); {
	case cmp == 0:
		rank := t.rowNumber(id, t.sk, t.rk)
		stored := t.bufs.replace(id, gi, j, row)
		t.emit(engine.UpdateBefore, old, rank)
		t.emit(engine.UpdateAfter, stored, rank)
		return nil
	case cmp < 0:
		oldRank := t.rowNumber(id, oldSk, t.rk)
		stored := t.move(id, gi, j, row)
		return t.updatableEmit(id, stored, oldSk, old, oldRank)
	default: // the sort key got worse: Flink logs it and emits as emitRecordsWithRowNumberIgnoreStateError
		oldRank := t.rowNumber(id, oldSk, t.rk)
		stored := t.move(id, gi, j, row)
		newRank := t.rowNumber(id, t.sk, t.rk)
		t.emit(engine.UpdateBefore, old, oldRank)
		rank := int64(0)
	affected:
		for _, g := range t.bufs.bufs[id].groups {
			for _, cur := range g.rows {
				rank++
				if rank == newRank {
					break affected
				}
				if oldRank <= rank {
					t.emit(engine.UpdateBefore, cur, rank+1)
					t.emit(engine.UpdateAfter, cur, rank)
				}
			}
		}
		t.emit(engine.UpdateAfter, stored, newRank)
		return nil
	}
}

// updatableEmit is emitRecordsWithRowNumber for row (stored, of sort key t.sk), which either
// entered the buffer (old nil) or moved up from sort key oldSk, where it had rank oldRank and
// went out as old: the rows it passes move one rank down; behind the rank end, sort keys leave the
// buffer.
func (t *TopN) updatableEmit(id int32, row, oldSk, old []byte, oldRank int64) error {
	b := &t.bufs.bufs[id]
	rank, found, oldRetracted := int64(0), false, false
	cur, curIsRow := []byte(nil), false
	// passes emits -U of the row at rank, and of old first when row takes its first rank
	passes := func(prev []byte) {
		t.emit(engine.UpdateBefore, prev, rank)
		if curIsRow && old != nil && !oldRetracted {
			t.emit(engine.UpdateBefore, old, oldRank)
			oldRetracted = true
		}
		t.emit(engine.UpdateAfter, cur, rank)
		cur, curIsRow = prev, false
		rank++
	}
	gi := 0
loop:
	for ; gi < len(b.groups) && rank <= t.p.RankEnd; gi++ {
		g := &b.groups[gi]
		switch {
		case !found && bytes.Equal(g.sortKey, t.sk):
			rank += int64(len(g.rows))
			cur, curIsRow, found = row, true, true
		case found && oldSk == nil:
			for _, prev := range g.rows {
				if rank > t.p.RankEnd {
					break
				}
				passes(prev)
			}
		case found:
			if bytes.Compare(g.sortKey, oldSk) > 0 {
				gi++ // the iterator moved past it
				break loop
			}
			for _, prev := range g.rows {
				if rank >= oldRank {
					break
				}
				passes(prev)
			}
		default:
			rank += int64(len(g.rows))
		}
	}
	if rank <= t.p.RankEnd {
		if old == nil {
			t.emit(engine.Insert, cur, rank)
			return nil
		}
		if rank != oldRank {
			return errRank
		}
		if !oldRetracted {
			t.emit(engine.UpdateBefore, old, oldRank)
		}
		t.emit(engine.UpdateAfter, cur, rank)
		return nil
	}
	t.bufs.dropGroupsFrom(id, gi)
	return nil
}

// updatableWithoutRowNumber is processElementWithoutRowNumber: a known row key's row is replaced
// (moved when its sort key changed) and goes out as -U and +U; a new one enters if in range, the
// buffer's last row leaving as -D when it then holds more than N (the new row itself too). The
// row's row key is at (gi, j) of key id's buffer when known (else it was admitted).
func (t *TopN) updatableWithoutRowNumber(id int32, row []byte, gi, j int, known bool) {
	b := &t.bufs.bufs[id]
	if known {
		old := b.groups[gi].rows[j]
		var stored []byte
		if bytes.Equal(b.groups[gi].sortKey, t.sk) {
			stored = t.bufs.replace(id, gi, j, row)
		} else {
			stored = t.move(id, gi, j, row)
		}
		if t.p.GenerateUpdateBefore {
			t.out.AddKind(old, nil, engine.UpdateBefore)
		}
		t.out.AddKind(stored, nil, engine.UpdateAfter)
		return
	}
	stored := t.bufs.put(id, t.sk, row)
	if int64(b.n) > t.p.RankEnd {
		t.out.AddKind(t.bufs.dropLast(id), nil, engine.Delete)
	}
	t.out.AddKind(stored, nil, engine.Insert)
}
