package intervaljoin

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/internal/javamap"
)

// The state of Flink's own interval join (TimeIntervalJoin): imported from a checkpoint or
// savepoint Flink's operator wrote (engine.FlinkState), exported for a savepoint Flink's
// operator restores (docs/state.md, "Switching Ferry on or off").
//
// Flink keeps per key IntervalJoinLeftCache and IntervalJoinRightCache, MapState<Long,
// List<Tuple2<RowData, Boolean>>> (row time -> the rows of that time in arrival order with their
// "emitted" flag), IntervalJoinLeftTimerState and IntervalJoinRightTimerState, ValueState<Long>
// (the cleanup times; the left one cleans the right cache), and its cleanup timers in the
// "user-timers" timer service. That is exactly a keyState (without early fire), so the import
// builds keyStates from it and the export writes them back.
//
// The rows of one key are consecutive and in this order; each row has the columns of
// flinkColumns after the key:
//
//   - part 0, the key: left_timer and right_timer, Flink's two timer states (NULL: unset), and
//     left_capacity and right_capacity, the table length of the java.util.HashMap that holds
//     the cache on Flink's heap backend (NULL where the backend holds none: RocksDB, ForSt; an
//     empty map is present only with its capacity);
//   - parts 1 and 2, a cached row of the left or the right cache: time (the map key), joined
//     (the flag) and the side's fields; buckets in the map's iteration order, each bucket's rows
//     consecutive, in list order;
//   - part 3, a timer of the key in "user-timers" (event time for a row-time join, processing
//     time for a processing-time join): time, and position, its place in the iteration of
//     Flink's timer queue (the heap's array order on the heap backend), which orders timers of
//     equal time across keys.
//
// The import rebuilds each cache as a map of the given capacity filled in the given order, which
// reproduces the HashMap Flink holds (same bins, same order in each bin), and checks that the
// rebuilt map iterates in the given order: a map whose order it cannot rebuild (a red-black tree
// bin) is refused. Without a capacity a cache is rebuilt as Ferry restores its own snapshots (a
// map created for its size). The timers must be the timer states' values, as Flink's operator
// keeps them; they are registered in the order of their positions (inserting a binary heap's
// array in order rebuilds it). Rows of a key that never joins are kept as Load keeps them (only
// on a padded side, the times always).
//
// An export row has the key as the bytes of Flink's BinaryRowData, then the same columns; a
// key's timers carry their positions in Ferry's timer heap. Refused (ErrUnsupported): early fire
// (its fired flags and early-fire timers have no place in Flink 2.3's state) and a key whose rows
// Ferry did not store (a key that never joins, on a side that is not padded or padded on
// arrival).

// The parts of an import or export row.
const (
	partKey   = 0
	partLeft  = 1
	partRight = 2
	partTimer = 3
)

// Columns after the key (import) or the key bytes (export), before the left and right fields.
const (
	colPart = iota
	colTime
	colJoined
	colPosition
	colLeftTimer
	colRightTimer
	colLeftCapacity
	colRightCapacity
	flinkColumns
)

// flinkTypes are the types of the columns after the key: flinkColumns, then the left and the
// right fields, all nullable.
func (j *IntervalJoin) flinkTypes() []engine.Type {
	n := func(id engine.TypeID) engine.Type { return engine.Type{ID: id, Nullable: true} }
	types := []engine.Type{{ID: engine.TinyInt}, n(engine.BigInt), n(engine.Boolean), n(engine.BigInt),
		n(engine.BigInt), n(engine.BigInt), n(engine.Int), n(engine.Int)}
	for side := range 2 {
		for _, t := range j.layouts[side].Types() {
			t.Nullable = true
			types = append(types, t)
		}
	}
	return types
}

func (j *IntervalJoin) flinkRefusal() error {
	if j.earlyFire {
		return fmt.Errorf("%w: the interval join with early fire keeps fired flags and early-fire timers that Flink 2.3's interval join does not have", engine.ErrUnsupported)
	}
	return nil
}

// ImportTypes implements engine.FlinkState: the key fields, then flinkTypes.
func (j *IntervalJoin) ImportTypes() ([]engine.Type, error) {
	if err := j.flinkRefusal(); err != nil {
		return nil, err
	}
	return append(append([]engine.Type(nil), j.keyTypes...), j.flinkTypes()...), nil
}

// ExportTypes implements engine.FlinkState: the key (BinaryRowData bytes), then flinkTypes.
func (j *IntervalJoin) ExportTypes() ([]engine.Type, error) {
	if err := j.flinkRefusal(); err != nil {
		return nil, err
	}
	return append([]engine.Type{{ID: engine.Binary}}, j.flinkTypes()...), nil
}

func i64(c *engine.Column, i int) int64 { return int64(binary.LittleEndian.Uint64(c.Fixed(i))) }

// importedKey is one key of an import batch while its rows are read.
type importedKey struct {
	id        int32
	part      int // the last part seen
	capacity  [2]int
	hasCap    [2]bool
	buckets   [2][]importedBucket // in the given order
	seen      [2]map[int64]bool
	timers    []importedTimer
	lastTimer int64 // position of the last timer, which must grow
}

// importedTimer is a timer of Flink's timer queue: its time and position.
type importedTimer struct {
	time int64
	pos  uint64
}

type importedBucket struct {
	time    int64
	rows    [][]byte // nil for rows not kept (a key that never joins, a side not padded)
	matched []bool
}

// ImportState implements engine.FlinkState. Every key must be new to the operator and all its
// rows in one batch; on any error no key of the batch is kept.
func (j *IntervalJoin) ImportState(in *engine.Batch) error {
	types, err := j.ImportTypes()
	if err != nil {
		return err
	}
	if len(in.Cols) != len(types) {
		return fmt.Errorf("%w: an import batch has %d columns, want %d (key fields, %d state columns, left and right fields)", engine.ErrInvalid, len(in.Cols), len(types), flinkColumns)
	}
	if err := in.CheckTypes(0, types, "import"); err != nil {
		return err
	}
	n := in.Len
	if n == 0 {
		return nil
	}
	nk := len(j.keyTypes)
	col := func(c int) *engine.Column { return &in.Cols[nk+c] }
	keyCols := make([]int, nk)
	for k := range keyCols {
		keyCols[k] = k
	}
	keys := engine.NewKeyEncoder(keyCols, types)
	if err := keys.Encode(in); err != nil {
		return err
	}
	var sides [2]engine.Batch
	first := nk + flinkColumns
	for side := range 2 {
		w := len(j.layouts[side].Types())
		sides[side] = engine.Batch{Len: n, Cols: in.Cols[first : first+w]}
		first += w
	}
	st := j.state
	var ids []int32
	fail := func(i int, err error) error {
		for _, id := range ids {
			st.Remove(id)
		}
		st.EndBatch()
		return fmt.Errorf("import row %d: %w", i, err)
	}
	var cur *importedKey
	for i := range n {
		pc := col(colPart)
		if pc.IsNull(i) {
			return fail(i, dataErr("part is NULL"))
		}
		part := int(int8(pc.Fixed(i)[0]))
		if part < partKey || part > partTimer {
			return fail(i, dataErr("part %d, want 0 (key), 1 (left row), 2 (right row) or 3 (timer)", part))
		}
		if part == partKey {
			if cur != nil {
				if err := j.finishImport(cur); err != nil {
					return fail(i-1, err)
				}
			}
			key, hash := keys.Key(i), keys.Hash(i)
			kg, err := st.KeyGroupOf(hash)
			if err != nil {
				return fail(i, err)
			}
			if st.Find(key, hash, kg) >= 0 {
				return fail(i, dataErr("the key holds state already (imported twice, or its rows split across batches?)"))
			}
			id := st.Insert(key, hash, kg)
			ids = append(ids, id)
			cur = &importedKey{id: id, lastTimer: -1}
			ks := &j.keys.k[id]
			if c := col(colLeftTimer); !c.IsNull(i) {
				ks.leftTimer, ks.hasLeftTimer = i64(c, i), true
			}
			if c := col(colRightTimer); !c.IsNull(i) {
				ks.rightTimer, ks.hasRightTimer = i64(c, i), true
			}
			for side, x := range []int{colLeftCapacity, colRightCapacity} {
				if col(x).IsNull(i) {
					continue
				}
				v := int64(int32(binary.LittleEndian.Uint32(col(x).Fixed(i))))
				if v < 1 || v > javamap.MaxCapacity || v&(v-1) != 0 {
					return fail(i, dataErr("%s cache capacity %d is not a HashMap table length (a power of two up to 2^30)", sideName(side), v))
				}
				cur.capacity[side], cur.hasCap[side] = int(v), true
			}
			for _, x := range []int{colTime, colJoined, colPosition} {
				if !col(x).IsNull(i) {
					return fail(i, dataErr("a key row with column %d set", nk+x))
				}
			}
			continue
		}
		if cur == nil || string(keys.Key(i)) != string(st.Key(cur.id)) {
			return fail(i, dataErr("part %d of a key without its part 0 row before it", part))
		}
		if part < cur.part {
			return fail(i, dataErr("part %d after part %d: a key's rows go key, left rows, right rows, timers", part, cur.part))
		}
		cur.part = part
		if col(colTime).IsNull(i) {
			return fail(i, dataErr("part %d without a time", part))
		}
		t := i64(col(colTime), i)
		if part == partTimer {
			if col(colPosition).IsNull(i) {
				return fail(i, dataErr("a timer without its position"))
			}
			pos := i64(col(colPosition), i)
			if pos <= cur.lastTimer {
				return fail(i, dataErr("timer positions of a key must grow (%d after %d)", pos, cur.lastTimer))
			}
			cur.lastTimer = pos
			cur.timers = append(cur.timers, importedTimer{time: t, pos: uint64(pos)})
			continue
		}
		if col(colJoined).IsNull(i) {
			return fail(i, dataErr("a cached row without its joined flag"))
		}
		if err := j.importRow(cur, part-partLeft, &sides[part-partLeft], i, t, col(colJoined).Bool(i)); err != nil {
			return fail(i, err)
		}
	}
	if err := j.finishImport(cur); err != nil {
		return fail(n-1, err)
	}
	for _, id := range ids {
		j.removeIfEmpty(id)
	}
	st.EndBatch()
	return nil
}

func dataErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{engine.ErrData}, args...)...)
}

func sideName(side int) string {
	if side == 0 {
		return "left"
	}
	return "right"
}

// importRow reads row i of side (its fields in b), cached at time t.
func (j *IntervalJoin) importRow(cur *importedKey, side int, b *engine.Batch, i int, t int64, joined bool) error {
	bs := cur.buckets[side]
	if len(bs) == 0 || bs[len(bs)-1].time != t {
		if cur.seen[side] == nil {
			cur.seen[side] = map[int64]bool{}
		}
		if cur.seen[side][t] {
			return dataErr("%s cache: the rows of time %d are not consecutive", sideName(side), t)
		}
		cur.seen[side][t] = true
		bs = append(bs, importedBucket{time: t})
		cur.buckets[side] = bs
	}
	layout := j.layouts[side]
	for c, ty := range layout.Types() {
		if !ty.Nullable && b.Cols[c].IsNull(i) {
			return dataErr("%s cache: field %d is NULL, its type %s", sideName(side), c, ty)
		}
	}
	row := layout.Encode(nil, b, i)
	if j.rowtime {
		if tc := j.timeIndex[side]; layout.IsNull(row, tc) || layout.Int64At(row, tc) != t {
			return dataErr("%s cache: a row of time %d in the entry of time %d", sideName(side), layout.Int64At(row, tc), t)
		}
	}
	if j.joinable(j.state.Key(cur.id)) || j.padded(side) {
		bk := &bs[len(bs)-1]
		bk.rows = append(bk.rows, row)
		bk.matched = append(bk.matched, joined)
	}
	return nil
}

// finishImport builds a key's caches (a map of the given capacity, or one created for its size)
// and checks their iteration order; checks its timers and imports them with their positions
// (engine.TimerService.ImportFlink).
func (j *IntervalJoin) finishImport(cur *importedKey) error {
	ks := &j.keys.k[cur.id]
	for side, m := range []**bucketMap{&ks.left, &ks.right} {
		bs := cur.buckets[side]
		if len(bs) == 0 && !cur.hasCap[side] {
			continue
		}
		x := newMapWithExpectedSize(len(bs))
		if cur.hasCap[side] {
			x = javamap.WithCapacity[int64, bucket](cur.capacity[side])
			x.Allocate() // a present map, maybe empty: its table is allocated
		}
		*m = x // counted from here: Reset drops it
		for _, ib := range bs {
			b := j.keys.bucketAt(x, ib.time)
			for r, row := range ib.rows {
				j.keys.addRow(b, row, ib.matched[r], false)
			}
		}
		if cur.hasCap[side] {
			for k, b := range x.AppendOrder(nil) {
				if b.time != bs[k].time {
					return fmt.Errorf("%w: %s cache: Flink's HashMap of capacity %d iterates its %d row times in an order Ferry cannot rebuild (a bin that is a red-black tree?)", engine.ErrUnsupported, sideName(side), cur.capacity[side], len(bs))
				}
			}
		}
	}
	// Flink's operator has one timer per set timer state, at its value.
	want := map[int64]bool{}
	if ks.hasLeftTimer {
		want[ks.leftTimer] = true
	}
	if ks.hasRightTimer {
		want[ks.rightTimer] = true
	}
	for _, t := range cur.timers {
		if !want[t.time] {
			return dataErr("a timer at %d, not a cleanup time of the key (left %s, right %s), or twice", t.time, timeOrUnset(ks.hasLeftTimer, ks.leftTimer), timeOrUnset(ks.hasRightTimer, ks.rightTimer))
		}
		delete(want, t.time)
	}
	if len(want) > 0 {
		return dataErr("the key has %d timers, want one per cleanup time set (left %s, right %s)", len(cur.timers), timeOrUnset(ks.hasLeftTimer, ks.leftTimer), timeOrUnset(ks.hasRightTimer, ks.rightTimer))
	}
	for _, t := range cur.timers {
		j.timers.ImportFlink(j.domain, cur.id, t.time, 0, t.pos) // distinct times: checked above
	}
	return nil
}

func timeOrUnset(set bool, t int64) string {
	if !set {
		return "unset"
	}
	return fmt.Sprint(t)
}

// exportRows bounds the rows of one export chunk (a key's rows are never split).
const exportRows = 4096

// ExportState implements engine.FlinkState: the keys in id order, a chunk ending after the
// key that brings it to exportRows rows.
func (j *IntervalJoin) ExportState(out *engine.OutBatch, first bool) (bool, error) {
	types, err := j.ExportTypes()
	if err != nil {
		return false, err
	}
	st := j.state
	if first {
		j.exportNext = 0
	}
	type exported struct {
		id   int32
		part int
		t    int64
		b    *bucket
		r    int // the row of b; a timer's heap position
	}
	var rows []exported
	for ; j.exportNext < int32(st.Cap()) && len(rows) < exportRows; j.exportNext++ {
		id := j.exportNext
		if !st.Live(id) {
			continue
		}
		ks := &j.keys.k[id]
		rows = append(rows, exported{id: id, part: partKey})
		for side, m := range [2]*bucketMap{ks.left, ks.right} {
			if m == nil {
				continue
			}
			for _, b := range m.AppendOrder(nil) {
				if len(b.rows) == 0 {
					return false, fmt.Errorf("%w: a key that never joins (a NULL key field) holds %s rows Ferry did not keep (Flink's operator would still hold them); a savepoint in Flink's form needs them", engine.ErrUnsupported, sideName(side))
				}
				for r := range b.rows {
					rows = append(rows, exported{id: id, part: partLeft + side, t: b.time, b: b, r: r})
				}
			}
		}
		at := len(rows)
		j.timers.Each(id, func(t engine.Timer) {
			if t.Domain == j.domain {
				pos, _ := j.timers.Position(j.domain, id, t.Time, 0)
				rows = append(rows, exported{id: id, part: partTimer, t: t.Time, r: pos})
			}
		})
		slices.SortFunc(rows[at:], func(a, b exported) int { return a.r - b.r }) // in heap order
	}
	n := len(rows)
	nl := len(j.layouts[0].Types())
	var sideRows [2][][]byte
	sideRows[0], sideRows[1] = make([][]byte, n), make([][]byte, n)
	keyIDs := make([]int32, n) // per row: its key's id on a key row, else -1 (no key bytes)
	for k, e := range rows {
		keyIDs[k] = -1
		if e.part == partKey {
			keyIDs[k] = e.id
		}
		if e.part == partLeft || e.part == partRight {
			sideRows[e.part-partLeft][k] = e.b.rows[e.r]
		}
	}
	vb := make([]int, len(types))
	vb[0] = st.KeyBytes(keyIDs)
	for side := range 2 {
		for c, t := range j.layouts[side].Types() {
			if t.ID == engine.Varchar {
				vb[1+flinkColumns+side*nl+c] = j.layouts[side].VarBytes(sideRows[side], c)
			}
		}
	}
	if err := out.Init(types, n, vb); err != nil || n == 0 {
		return false, err
	}
	st.WriteKeys(&out.Cols[0], keyIDs)
	c := func(x int) *engine.OutColumn { return &out.Cols[1+x] }
	putI64 := func(x, k int, v int64) { binary.LittleEndian.PutUint64(c(x).Data[8*k:], uint64(v)) }
	for k, e := range rows {
		ks := &j.keys.k[e.id]
		c(colPart).Data[k] = byte(e.part)
		set := [flinkColumns]bool{}
		switch e.part {
		case partKey:
			if ks.hasLeftTimer {
				set[colLeftTimer] = true
				putI64(colLeftTimer, k, ks.leftTimer)
			}
			if ks.hasRightTimer {
				set[colRightTimer] = true
				putI64(colRightTimer, k, ks.rightTimer)
			}
			for side, m := range [2]*bucketMap{ks.left, ks.right} {
				if m != nil && m.Capacity() > 0 {
					x := colLeftCapacity + side
					set[x] = true
					binary.LittleEndian.PutUint32(c(x).Data[4*k:], uint32(m.Capacity()))
				}
			}
		case partLeft, partRight:
			set[colTime], set[colJoined] = true, true
			putI64(colTime, k, e.t)
			if e.b.matched[e.r] {
				c(colJoined).Data[k>>3] |= 1 << (k & 7)
			}
		case partTimer:
			set[colTime], set[colPosition] = true, true
			putI64(colTime, k, e.t)
			putI64(colPosition, k, int64(e.r))
		}
		for x := colTime; x < flinkColumns; x++ {
			if !set[x] {
				c(x).SetNull(k)
			}
		}
	}
	for side := range 2 {
		for f := range j.layouts[side].Types() {
			j.layouts[side].WriteColumn(c(flinkColumns+side*nl+f), sideRows[side], f)
		}
	}
	out.Finish()
	return j.exportNext < int32(st.Cap()), nil
}

var _ engine.FlinkState = (*IntervalJoin)(nil)
