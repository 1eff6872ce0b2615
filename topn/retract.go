package topn

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
)

// RetractableTopNFunction over one key's buffer: its sorted-map (sort key to count) and its
// data-state (sort key to the list of rows) are the groups' counts and rows (group). The
// functions below transcribe Flink's, including what it does when the two disagree (a retraction
// of a row the state does not hold): Flink's function is lenient, logs the state as stale and
// goes on, and Ferry goes on the same way.

// errIndex is Flink's IndexOutOfBoundsException: its function fails the task where a sort key's
// list holds fewer rows than its count says (only after stale retractions).
var errIndex = fmt.Errorf("%w: Flink's RetractableTopNFunction fails on this row: a sort key's data-state holds fewer rows than its sorted-map count (a retraction of a row the state never held went before)", engine.ErrData)

// retractable is RetractableTopNFunction.processElement for row i of in, of key id.
func (t *TopN) retractable(id int32, in *engine.Batch, i int) error {
	t.sk = t.sortKey.encodeRow(t.sk[:0], in, i)
	row := t.encode(in, i) // the row with its RowKind erased to +I, as Flink's function erases it
	withRowNumber := t.p.OutputRankNumber || t.p.RankStart > 1
	s := t.bufs
	if k := in.Kinds[i]; k == engine.Insert || k == engine.UpdateAfter {
		gi := s.group(id, t.sk)
		s.bufs[id].groups[gi].count++
		// Flink adds the row to its list after emitting, which never reads the list of the row's
		// own sort key: the same when added before
		stored := s.putAt(id, gi, row)
		if withRowNumber {
			t.emitWithRowNumber(id, stored)
			return nil
		}
		return t.emitWithoutRowNumber(id, stored)
	}
	var removed bool
	var err error
	if withRowNumber {
		removed = t.retractWithRowNumber(id, row)
	} else {
		removed, err = t.retractWithoutRowNumber(id, row)
	}
	if err != nil {
		return err
	}
	b := &s.bufs[id]
	gi, ok := b.find(t.sk)
	if ok && b.groups[gi].count > 0 {
		b.groups[gi].count-- // else stale: Flink only logs
	}
	if ok && !removed {
		if j := slices.IndexFunc(b.groups[gi].rows, func(r []byte) bool { return bytes.Equal(r, row) }); j >= 0 {
			s.removeRow(id, gi, j)
		}
	}
	if ok {
		s.dropIfEmpty(id, gi)
	}
	return nil
}

// emitWithRowNumber is emitRecordsWithRowNumber for row (stored), after its sort key t.sk was
// counted: the rows behind it move one rank down.
func (t *TopN) emitWithRowNumber(id int32, row []byte) {
	b := &t.bufs.bufs[id]
	rank, found := int64(0), false
	var cur []byte
	for gi := 0; gi < len(b.groups) && rank <= t.p.RankEnd; gi++ {
		g := &b.groups[gi]
		switch {
		case g.count == 0: // no sorted-map entry
		case !found && bytes.Equal(g.sortKey, t.sk):
			rank += g.count
			cur, found = row, true
		case found:
			if len(g.rows) == 0 {
				gi = t.stale(id, gi)
				continue
			}
			cur, rank = t.shift(g.rows, cur, rank, true)
		default:
			rank += g.count
		}
	}
	if rank <= t.p.RankEnd {
		t.emit(engine.Insert, cur, rank)
	}
}

// emitWithoutRowNumber is emitRecordsWithoutRowNumber for row (stored), after its sort key t.sk
// was counted: the row that falls out of the top N goes out as -D, then the row as +I if it
// entered.
func (t *TopN) emitWithoutRowNumber(id int32, row []byte) error {
	b := &t.bufs.bufs[id]
	rank, found := int64(0), false
	var collect, del []byte
	for gi := 0; gi < len(b.groups) && rank <= t.p.RankEnd; gi++ {
		g := &b.groups[gi]
		switch {
		case g.count == 0:
		case !found && bytes.Equal(g.sortKey, t.sk):
			rank += g.count
			if rank >= t.p.RankStart && rank <= t.p.RankEnd {
				collect = row
			}
			found = true
		case found:
			if len(g.rows) == 0 {
				gi = t.stale(id, gi)
				continue
			}
			if last := rank + g.count; last <= t.p.RankEnd {
				rank = last
				continue
			}
			index := t.p.RankEnd - rank
			if index >= int64(len(g.rows)) {
				return errIndex
			}
			del = g.rows[index]
			gi = len(b.groups) // break
		default:
			rank += g.count
		}
	}
	if del != nil {
		t.out.AddKind(del, nil, engine.Delete)
	}
	if collect != nil {
		t.out.AddKind(collect, nil, engine.Insert)
	}
	return nil
}

// retractWithRowNumber is retractRecordWithRowNumber for row: the first row of its sort key equal
// to it leaves the list, the rows behind move one rank up, the last one in the range goes out as
// -D. It reports whether the row was found (and removed).
func (t *TopN) retractWithRowNumber(id int32, row []byte) bool {
	b := &t.bufs.bufs[id]
	rank, found := int64(0), false
	var prev []byte
	for gi := 0; gi < len(b.groups) && rank <= t.p.RankEnd; gi++ {
		g := &b.groups[gi]
		switch {
		case g.count == 0:
		case !found && bytes.Equal(g.sortKey, t.sk):
			if len(g.rows) == 0 {
				gi = t.stale(id, gi)
				continue
			}
			j, removed := t.removeInRange(id, gi, row, rank)
			if j < 0 {
				rank += int64(len(g.rows))
				continue
			}
			found = true // the rows behind it move one rank up
			prev, rank = t.shift(g.rows[j:], removed, rank+int64(j)+1, false)
		case found:
			if len(g.rows) == 0 {
				gi = t.stale(id, gi)
				continue
			}
			prev, rank = t.shift(g.rows, prev, rank, false)
		default:
			rank += g.count
		}
	}
	if rank <= t.p.RankEnd && found {
		t.emit(engine.Delete, prev, rank) // not found: stale, Flink only logs
	}
	return found
}

// retractWithoutRowNumber is retractRecordWithoutRowNumber for row: the row goes out as -D if it
// was in the top N, and the row that moves up into rank N as +I. It reports whether the row was
// found (and removed).
func (t *TopN) retractWithoutRowNumber(id int32, row []byte) (bool, error) {
	b := &t.bufs.bufs[id]
	next, found := int64(1), false // the next rank
	for gi := 0; gi < len(b.groups) && next <= t.p.RankEnd; gi++ {
		g := &b.groups[gi]
		switch {
		case g.count == 0:
		case !found && bytes.Equal(g.sortKey, t.sk):
			if len(g.rows) == 0 {
				gi = t.stale(id, gi)
				continue
			}
			j, removed := t.removeInRange(id, gi, row, next)
			if j < 0 {
				next += int64(len(g.rows))
				continue
			}
			next += int64(j)
			t.emit(engine.Delete, removed, next)
			found = true
			// the rows behind it move one rank up: the one that reaches rank N enters the top N
			behind := g.rows[j:]
			if i := t.p.RankEnd - next; i < int64(len(behind)) {
				t.emit(engine.Insert, behind[i], t.p.RankEnd)
			}
			next += int64(len(behind))
		case found:
			if last := next + g.count - 1; last < t.p.RankEnd {
				next = last + 1
				continue
			}
			if len(g.rows) == 0 {
				gi = t.stale(id, gi)
				continue
			}
			index := t.p.RankEnd - next
			if index >= int64(len(g.rows)) {
				return false, errIndex
			}
			t.out.AddKind(g.rows[index], nil, engine.Insert)
			gi = len(b.groups) // break
		default:
			next += g.count
		}
	}
	return found, nil
}

// removeInRange removes from group gi of key id's buffer the first row equal to row among those
// ranked up to N, the group's first row ranking first, and returns its index in the group and
// the stored row; -1 when no such row is there (Flink's iteration of the sort key's list, which
// stops at rank N).
func (t *TopN) removeInRange(id int32, gi int, row []byte, first int64) (int, []byte) {
	g := &t.bufs.bufs[id].groups[gi]
	for j, cur := range g.rows {
		if first+int64(j) > t.p.RankEnd {
			break
		}
		if bytes.Equal(cur, row) {
			t.bufs.removeRow(id, gi, j)
			return j, cur
		}
	}
	return -1, nil
}

// stale is processStateStaled: group gi has a count but no rows, so its sorted-map entry goes
// (Flink logs the state as stale). It returns the index the caller's loop continues after.
func (t *TopN) stale(id int32, gi int) int {
	t.bufs.bufs[id].groups[gi].count = 0
	if t.bufs.dropIfEmpty(id, gi) {
		return gi - 1
	}
	return gi
}
