package distinct

import (
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/agg/dataview"
	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// The DISTINCT maps of partial rows and of Flink's state (dataview.DistinctMap has their
// layout): written per group, checked, merged into a set as DistinctAggCodeGen.merge does, and
// loaded as Flink's MapState distinctAcc_<i> holds them.

// layout is the layout of the set's maps.
func (d *Set) layout() dataview.DistinctMap {
	return dataview.DistinctMap{Key: d.typ, Calls: len(d.calls), Retract: d.retract}
}

// ViewBytes is the encoded size of the maps of groups, with each entry's last write when times
// is set.
func (d *Set) ViewBytes(groups []int32, times bool) int {
	m := d.layout()
	n := dataview.MapHeaderSize * len(groups)
	for _, g := range groups {
		for e := d.table.Head[g]; e >= 0; e = d.table.Next[e] {
			n += m.EntrySize(d.keyOf(e), d.entLen[e] == nullLen, times)
		}
	}
	return n
}

// WriteView writes the map of group groups[j] to row j of out, a VARBINARY column laid out for
// len(groups) rows with ViewBytes(groups, times) bytes; times (only with TTL) writes each
// entry's last write after its value.
func (d *Set) WriteView(out *engine.OutColumn, groups []int32, times bool) {
	m := d.layout()
	k := len(d.calls)
	pos := 0
	for j, g := range groups {
		out.Offs[j] = int32(pos)
		pos += len(m.AppendHeader(out.Data[pos:pos:len(out.Data)]))
		for e := d.table.Head[g]; e >= 0; e = d.table.Next[e] {
			var at int64
			if times {
				at = d.table.At[e]
			}
			b := m.AppendEntry(out.Data[pos:pos:len(out.Data)], d.keyOf(e), d.entLen[e] == nullLen,
				d.counts[int(e)*k:int(e)*k+k], times, at)
			pos += len(b)
		}
	}
	out.Offs[len(groups)] = int32(pos)
}

// CheckViews validates column c (encoded maps) at the rows of gids that are >= 0, before a
// merge changes anything: no NULL, every entry well-formed.
func (d *Set) CheckViews(c *engine.Column, gids []int32) error {
	return d.layout().Check(c, gids)
}

// MergeView merges an encoded map (src, checked by CheckViews) into group g, in the map's
// entry order, as DistinctAggCodeGen.merge does. NULL keys are skipped: the calls ignore them
// and nothing reads the merged map but later merges. When rows is not nil, every merged entry
// becomes a row of it with the calls' actions (+1 accumulate the key, -1 retract it, 0
// nothing).
func (d *Set) MergeView(src []byte, g int32, rows *Rows) {
	k := len(d.calls)
	m := d.layout()
	ent := &d.scratchEntry
	for src = src[dataview.MapHeaderSize:]; len(src) > 0; {
		src, _ = m.NextEntry(src, false, ent)
		if ent.Null {
			continue
		}
		h := values.HashBytes(g, ent.Key)
		e := d.findLive(g, ent.Key, false, h)
		if e < 0 {
			e = d.insert(g, ent.Key, false, h)
		}
		cnt := d.counts[int(e)*k : int(e)*k+k]
		row := -1
		if rows != nil {
			row = rows.add(g, ent.Key)
		}
		empty, changed := true, d.retract // a merge on retracting input always puts
		for j, other := range ent.Vals {
			this := cnt[j]
			act := int8(0)
			if d.retract {
				merged := this + other
				switch {
				case merged <= 0 && this > 0:
					act = -1
				case merged > 0 && this <= 0:
					act = 1
				}
				cnt[j] = merged
			} else if this == 0 && other != 0 {
				act, cnt[j], changed = 1, 1, true
			}
			if row >= 0 {
				rows.Acts[j][row] = act
			}
			if cnt[j] != 0 {
				empty = false
			}
		}
		// Flink keeps an all-zero entry of a long[] map, and a bitmask entry with no bit set;
		// either reads as absent in every later merge, so Ferry drops it.
		if empty {
			d.remove(e)
		} else if changed {
			d.table.Touch(e) // Flink puts the merged value (insert-only input: when a bit turned on)
		}
	}
}

// Rows are the entries a merge into the state produced, as rows the calls of a distinct set
// fold: the key column (the set's argument column of a batch over the local aggregate's input),
// the entry's group, and per call its action. Their buffers are reused from merge to merge.
type Rows struct {
	Keys  dataview.KeyColumn
	Gids  []int32  // per row: its group
	Acts  [][]int8 // per call of the set, per row: +1 accumulate, -1 retract, 0 nothing
	First []int32  // per bundle key: its first row (an anchor without actions)
	Last  []int32  // per bundle key: its last row
}

// Reset prepares rows for a merge into set d.
func (r *Rows) Reset(d *Set) {
	r.Keys.Reset(d.typ)
	r.Gids = r.Gids[:0]
	r.Acts = scratch.Resize(r.Acts, len(d.calls))
	for c := range r.Acts {
		r.Acts[c] = r.Acts[c][:0]
	}
	r.First, r.Last = r.First[:0], r.Last[:0]
}

// Anchor adds a row of group g with a NULL key and no action, the first of a bundle key: its
// value before and after is the key's value before the merge.
func (r *Rows) Anchor(g int32) {
	r.First = append(r.First, int32(len(r.Gids)))
	r.Last = append(r.Last, int32(len(r.Gids)))
	r.add(g, nil)
}

// add appends a row of group g and key (NULL when nil), without actions, and returns its index.
func (r *Rows) add(g int32, key []byte) int {
	i := len(r.Gids)
	r.Gids = append(r.Gids, g)
	if len(r.Last) > 0 {
		r.Last[len(r.Last)-1] = int32(i)
	}
	r.Keys.Add(key)
	for c := range r.Acts {
		r.Acts[c] = append(r.Acts[c], 0)
	}
	return i
}

// LoadState loads row i of col, a map in the state form (with TTL each entry's last write after
// its value), into group g, which holds no entry: every entry as it is, except the NULL value's
// and one without a bit or count, which no later row can tell from no entry (agg's import of
// Flink's state). On error the group may hold some entries.
func (d *Set) LoadState(col *engine.Column, i int, g int32) error {
	if col.IsNull(i) {
		return fmt.Errorf("%w: NULL, want a map (empty when the key has no value)", engine.ErrData)
	}
	m := d.layout()
	src, err := m.Entries(col.Bytes(i))
	if err != nil {
		return err
	}
	k := len(d.calls)
	ent := &d.scratchEntry
	times := d.table.At != nil
	for len(src) > 0 {
		if src, err = m.NextEntry(src, times, ent); err != nil {
			return err
		}
		if ent.Null || !slices.ContainsFunc(ent.Vals, func(v int64) bool { return v != 0 }) {
			continue
		}
		h := values.HashBytes(g, ent.Key)
		if d.find(g, ent.Key, false, h) >= 0 {
			return fmt.Errorf("%w: distinct map holds a value twice", engine.ErrData)
		}
		e := d.insert(g, ent.Key, false, h)
		copy(d.counts[int(e)*k:int(e)*k+k], ent.Vals)
		if times {
			d.table.At[e] = ent.At
		}
	}
	return nil
}
