package agg

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/kernels"
	"github.com/ferrystream/ferry/engine"
)

// The state of Flink's own group aggregate (engine.FlinkState; docs/state.md, "Switching Ferry
// on or off"): imported from a checkpoint or savepoint Flink's operator wrote, exported for a
// savepoint Flink's operator restores. Flink keeps one
// accumulator row per key in its ValueState accState: every call's accumulator fields, the
// partial state of kernels.PartialState, in call order; and per DISTINCT argument column i a
// MapState distinctAcc_<i> from value to bitmask or counts. An import row is the key's fields,
// then those accumulator fields, then one VARBINARY per DISTINCT set holding its map (in the
// layout of dataview.DistinctMap; with idle-state TTL each entry followed by its own last write,
// as Flink's TtlMapState stamps every entry), then, for the single-phase aggregate over
// retracting input, the record count Flink's RetractionRecordCounter reads (the value of the
// COUNT(*) call or of the count1 Flink inserted), then, with idle-state TTL, the processing time
// (ms) the key was last written at (Flink's TtlValue timestamp: both use OnCreateAndWrite). The
// global aggregate's count1 is one of its calls.
//
// Each call merges the accumulator into the key's fresh state, as the global aggregate merges a
// partial row (a DISTINCT call's inner aggregate takes its fields as they are), and the state is
// then written back as partial state and compared with the row, field by field and bit for bit:
// a key whose state would not read back exactly as Flink held it fails the import, so what
// continues is Flink's state, never an approximation of it. A map's entries are taken as they
// are, with two exceptions that no later row can tell apart: the NULL value's entry (Flink's
// distinctAcc_<i>_null_state, which every inner aggregate ignores; the single-phase state keeps
// none) and an entry without a bit or count (which reads as absent) are left out.
//
// An export row is the key as the bytes of Flink's BinaryRowData, then the accumulator fields,
// maps and the record count as above, keys in id order.
//
// MIN/MAX with retraction keep their value→count entries in Flink's MapState agg<a>$map: the
// call's column carries its accumulator with those entries (kernels.ViewState, in the layout of
// dataview.MinMaxAcc), loaded as it is.
//
// Neither imported nor exported (ErrUnsupported): FIRST_VALUE, LAST_VALUE and LISTAGG with
// retraction, whose data views (MapViews of lists, ListViews) live in other states of Flink's
// backend.

// importLayout lays out the accumulator fields of an import row, after the key fields.
func (g *groupAgg) importLayout() (partialLayout, error) {
	for i, c := range g.calls {
		_, carried := c.(kernels.ViewState)
		if kernels.KeepsDataView(c) && !carried {
			return partialLayout{}, fmt.Errorf("%w: aggs[%d]: importing Flink's state of an aggregate with retraction that keeps a data view in Flink's MapState: not supported yet", engine.ErrUnsupported, i)
		}
	}
	return newPartialLayout(g.calls, len(g.sets), len(g.keyCols))
}

// ImportTypes implements engine.FlinkState: the key fields, every call's accumulator fields,
// one map per DISTINCT set, for the single-phase aggregate over retracting input the record
// count, and with idle-state TTL the last write time (both BIGINT, not NULL).
func (g *groupAgg) ImportTypes() ([]engine.Type, error) {
	l, err := g.importLayout()
	if err != nil {
		return nil, err
	}
	types := make([]engine.Type, 0, len(g.keyCols)+len(l.all)+1)
	for _, k := range g.keyCols {
		types = append(types, g.spec.InputTypes[k])
	}
	types = append(types, l.all...)
	if g.counter != nil {
		types = append(types, engine.Type{ID: engine.BigInt})
	}
	if g.ttl {
		types = append(types, engine.Type{ID: engine.BigInt})
	}
	return types, nil
}

// ImportState implements engine.FlinkState. Every key must be new to the operator; on any
// error no key of the batch is kept.
func (g *groupAgg) ImportState(in *engine.Batch) error {
	l, err := g.importLayout()
	if err != nil {
		return err
	}
	types, _ := g.ImportTypes()
	if len(in.Cols) != len(types) {
		return fmt.Errorf("%w: an import batch has %d columns, want %d (keys, accumulator fields%s%s%s)", engine.ErrInvalid, len(in.Cols), len(types),
			map[bool]string{true: ", distinct maps"}[len(g.sets) > 0],
			map[bool]string{true: ", record count"}[g.counter != nil], map[bool]string{true: ", last write"}[g.ttl])
	}
	if err := in.CheckTypes(0, types, "import"); err != nil {
		return err
	}
	n := in.Len
	if n == 0 {
		return nil
	}
	var counts, lastWrites []int64
	if g.ttl {
		c := &in.Cols[len(types)-1]
		if c.Valid != nil {
			for i := range n {
				if c.IsNull(i) {
					return fmt.Errorf("%w: row %d: a key without its last write time", engine.ErrData, i)
				}
			}
		}
		lastWrites = engine.Values[int64](c, n)
	}
	if g.counter != nil {
		c := &in.Cols[len(g.keyCols)+len(l.all)]
		counts = engine.Values[int64](c, n)
		for i := range n {
			if c.IsNull(i) || counts[i] == 0 {
				return fmt.Errorf("%w: row %d: a key with record count NULL or 0, which Flink never keeps", engine.ErrData, i)
			}
		}
	}
	keyCols := make([]int, len(g.keyCols))
	for k := range keyCols {
		keyCols[k] = k
	}
	keys := engine.NewKeyEncoder(keyCols, types)
	if err := keys.Encode(in); err != nil {
		return err
	}
	st := g.state
	gids := make([]int32, 0, n)
	fail := func(err error) error {
		for _, id := range gids {
			st.Remove(id)
		}
		st.EndBatch() // resets every registered PerKey of the removed ids, the DISTINCT sets among them
		return err
	}
	for i := range n {
		key, hash := keys.Key(i), keys.Hash(i)
		kg, err := st.KeyGroupOf(hash)
		if err != nil {
			return fail(fmt.Errorf("row %d: %w", i, err))
		}
		if st.Find(key, hash, kg) >= 0 {
			return fail(fmt.Errorf("%w: row %d: the key holds state already (imported twice?)", engine.ErrData, i))
		}
		id := st.Insert(key, hash, kg)
		gids = append(gids, id)
		if g.counter != nil {
			g.counter.n[id] = counts[i]
		}
		if g.ttl {
			st.Touch(id, lastWrites[i])
		}
	}
	changed := make([]bool, n)
	for c, acc := range g.calls {
		var err error
		if v, ok := acc.(kernels.ViewState); ok {
			err = v.LoadState(&in.Cols[l.first[c]], gids, g.ttl)
		} else {
			err = acc.Merge(in, l.first[c], gids, changed)
		}
		if err != nil {
			return fail(fmt.Errorf("aggs[%d]: %w", c, err))
		}
	}
	for s, d := range g.sets {
		col := &in.Cols[l.views+s]
		for i, id := range gids {
			if err := d.LoadState(col, i, id); err != nil {
				return fail(fmt.Errorf("row %d: distinct map %d: %w", i, s, err))
			}
		}
	}
	if err := g.checkImported(in, &l, gids); err != nil {
		return fail(err)
	}
	st.EndBatch()
	return nil
}

// checkImported writes the partial state of groups (row i's group is groups[i]) and compares it
// with the accumulator fields of in, bit for bit.
func (g *groupAgg) checkImported(in *engine.Batch, l *partialLayout, groups []int32) error {
	fields := l.all[:l.views-l.start] // the calls' fields; the maps were loaded as they are
	vb := make([]int, len(l.all))
	l.varBytes(g.calls, nil, groups, vb)
	out := engine.OutBatch{Alloc: &scratch.Allocator{}}
	if err := out.Init(fields, len(groups), vb[:len(fields)]); err != nil {
		return err
	}
	if err := l.writePartials(g.calls, nil, &out, 0, groups); err != nil {
		return err
	}
	out.Finish()
	var back engine.Batch
	viewOf(&out, &back)
	call := 0
	for k := range fields {
		col := l.start + k
		for call+1 < len(l.first) && l.first[call+1] <= col {
			call++
		}
		if _, ok := g.calls[call].(kernels.ViewState); ok {
			continue // loaded as it is
		}
		for i := range groups {
			if !sameValue(&in.Cols[col], &back.Cols[k], i) {
				return fmt.Errorf("%w: row %d: aggs[%d]: accumulator field %d would not continue as Flink held it (it reads back differently after the import)", engine.ErrUnsupported, i, call, col-l.first[call])
			}
		}
	}
	return nil
}

// sameValue reports whether row i of a and b (columns of one type) hold the same value, NULL
// included, bit for bit.
func sameValue(a, b *engine.Column, i int) bool {
	an, bn := a.IsNull(i), b.IsNull(i)
	switch {
	case an || bn:
		return an == bn
	case a.Type.ID == engine.Boolean:
		return a.Bool(i) == b.Bool(i)
	case a.Type.Variable():
		return bytes.Equal(a.Bytes(i), b.Bytes(i))
	default:
		return bytes.Equal(a.Fixed(i), b.Fixed(i))
	}
}

// exportChunk is the number of keys per chunk of an export.
const exportChunk = 4096

// exportCursor is the position of an export: the next key id, and scratch.
type exportCursor struct {
	next int32
	ids  []int32
}

// ExportTypes implements engine.FlinkState: the key (BinaryRowData bytes), then the import
// layout's accumulator fields, maps, record count and last write time.
func (g *groupAgg) ExportTypes() ([]engine.Type, error) {
	types, err := g.ImportTypes()
	if err != nil {
		return nil, err
	}
	return append([]engine.Type{{ID: engine.Binary}}, types[len(g.keyCols):]...), nil
}

// ExportState implements engine.FlinkState: the next exportChunk keys in id order.
func (g *groupAgg) ExportState(out *engine.OutBatch, first bool) (bool, error) {
	l, err := g.importLayout()
	if err != nil {
		return false, err
	}
	types, _ := g.ExportTypes()
	st, c := g.state, &g.export
	if first {
		c.next = 0
	}
	c.ids = st.LiveIDs(c.ids[:0], &c.next, exportChunk)
	vb := make([]int, len(types))
	vb[0] = st.KeyBytes(c.ids)
	l.varBytes(g.calls, nil, c.ids, vb[1:])
	for k, acc := range g.calls {
		if v, ok := acc.(kernels.ViewState); ok {
			vb[1+l.first[k]-l.start] = v.StateBytes(c.ids, g.ttl)
		}
	}
	for s, d := range g.sets {
		vb[1+l.views-l.start+s] = d.ViewBytes(c.ids, g.ttl)
	}
	if err := out.Init(types, len(c.ids), vb); err != nil || len(c.ids) == 0 {
		return false, err
	}
	st.WriteKeys(&out.Cols[0], c.ids)
	for k, acc := range g.calls {
		from := 1 + l.first[k] - l.start
		if v, ok := acc.(kernels.ViewState); ok {
			v.WriteState(&out.Cols[from], c.ids, g.ttl)
		} else if err := acc.WritePartial(out.Cols[from:from+len(l.types[k])], c.ids); err != nil {
			return false, err
		}
	}
	for s, d := range g.sets {
		d.WriteView(&out.Cols[1+l.views-l.start+s], c.ids, g.ttl)
	}
	if g.counter != nil {
		counts := out.Cols[1+len(l.all)].Data
		for j, id := range c.ids {
			binary.LittleEndian.PutUint64(counts[8*j:], uint64(g.counter.n[id]))
		}
	}
	if g.ttl {
		times := out.Cols[len(types)-1].Data
		for j, id := range c.ids {
			binary.LittleEndian.PutUint64(times[8*j:], uint64(st.LastWrite(id)))
		}
	}
	out.Finish()
	return c.next < int32(st.Cap()), nil
}
