package agg

import (
	"encoding/binary"
	"fmt"

	"github.com/ferrystream/ferry/engine"
)

// Partial state of DISTINCT calls (docs/group-aggregate.md#data-views-in-the-partial-row). Flink's
// local aggregate emits each distinct map, after every call's accumulator fields, as a RAW field
// holding a heap MapView from argument value (NULL included) to a BIGINT or long[] value: a
// bitmask of calls on insert-only input, one count per call on retracting input. Ferry carries
// one map per row as a VARBINARY column in its own layout (docs/abi.md#data-views), entries in
// any order:
//
//	map   := words uint32 LE, entry*
//	entry := null byte (0 value, 1 NULL) [key] words × int64 LE
//	key   := VARCHAR: uint32 LE length, UTF-8 bytes; BOOLEAN: 1 byte 0/1;
//	         other types: their Arrow value bytes (Type.Width, little-endian)
//
// words is viewWords: 1 for Flink's BIGINT form, the long[] length otherwise. The state form
// (flinkstate.go: Flink's MapState distinctAcc_<i> with idle-state TTL) follows each entry's
// value by its last write, int64 LE (ms).

// viewType is the type of a distinct map column.
var viewType = engine.Type{ID: engine.Binary, Nullable: true}

// viewWords is the number of int64 words of an entry's value in Flink's form
// (DataViewUtils.createDistinctViewDataType and DistinctAggCodeGen's value generators): one
// BIGINT for up to 64 calls on insert-only input and for one call on retracting input, else a
// long[] of calls/64+1 bitmask words or of one count per call.
func (d *distinctSet) viewWords() int {
	k := len(d.calls)
	switch {
	case !d.retract && k <= 64, d.retract && k == 1:
		return 1
	case d.retract:
		return k
	}
	return k/64 + 1
}

// entryBytes is the encoded size of entry e, with its last write when times is set.
func (d *distinctSet) entryBytes(e int32, times bool) int {
	n := 1 + 8*d.viewWords()
	if times {
		n += 8
	}
	if d.entLen[e] != nullLen {
		n += keyBytes(d.typ, d.keyOf(e))
	}
	return n
}

// viewBytes is the encoded size of the maps of groups, with each entry's last write when times
// is set.
func (d *distinctSet) viewBytes(groups []int32, times bool) int {
	n := 4 * len(groups)
	for _, g := range groups {
		for e := d.head[g]; e >= 0; e = d.next[e] {
			n += d.entryBytes(e, times)
		}
	}
	return n
}

// writeView writes the map of group groups[j] to row j of out, a VARBINARY column laid out for
// len(groups) rows with viewBytes(groups, times) bytes; times (only with TTL) writes each
// entry's last write after its value.
func (d *distinctSet) writeView(out *engine.OutColumn, groups []int32, times bool) {
	k := len(d.calls)
	words := d.viewWords()
	pos := 0
	for j, g := range groups {
		out.Offs[j] = int32(pos)
		binary.LittleEndian.PutUint32(out.Data[pos:], uint32(words))
		pos += 4
		for e := d.head[g]; e >= 0; e = d.next[e] {
			b := out.Data[pos:pos:len(out.Data)]
			if d.entLen[e] == nullLen {
				b = append(b, 1)
			} else {
				b = appendKey(append(b, 0), d.typ, d.keyOf(e))
			}
			cnt := d.counts[int(e)*k : int(e)*k+k]
			switch {
			case d.retract:
				for _, c := range cnt {
					b = binary.LittleEndian.AppendUint64(b, uint64(c))
				}
			default: // bitmask words
				for w := range words {
					var x uint64
					for c := 64 * w; c < k && c < 64*w+64; c++ {
						if cnt[c] != 0 {
							x |= 1 << (c % 64)
						}
					}
					b = binary.LittleEndian.AppendUint64(b, x)
				}
			}
			if times {
				b = binary.LittleEndian.AppendUint64(b, uint64(d.at[e]))
			}
			pos += len(b)
		}
	}
	out.Offs[len(groups)] = int32(pos)
}

// viewEntry is one decoded entry of an encoded map.
type viewEntry struct {
	null bool
	key  []byte  // aliases the encoded bytes
	vals []int64 // per call: its bit (0/1) or count
}

// viewEntries returns the entries of an encoded map after checking its header.
func (d *distinctSet) viewEntries(src []byte) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("%w: distinct map of %d bytes has no header", engine.ErrData, len(src))
	}
	// An empty map's header is not checked: a JVM holding no entry cannot know a long[]'s length.
	if w := binary.LittleEndian.Uint32(src); len(src) > 4 && int64(w) != int64(d.viewWords()) {
		return nil, fmt.Errorf("%w: distinct map of %d-word values, want %d for %d calls", engine.ErrData, w, d.viewWords(), len(d.calls))
	}
	return src[4:], nil
}

// nextEntry decodes the entry at the start of src into ent (ent.vals reused) and returns the
// rest.
func (d *distinctSet) nextEntry(src []byte, ent *viewEntry) ([]byte, error) {
	k := len(d.calls)
	words := d.viewWords()
	if len(src) < 1 || src[0] > 1 {
		return nil, fmt.Errorf("%w: distinct map entry: bad NULL flag", engine.ErrData)
	}
	ent.null = src[0] == 1
	src = src[1:]
	ent.key = nil
	if !ent.null {
		var err error
		if ent.key, src, err = nextKey(d.typ, src); err != nil {
			return nil, fmt.Errorf("distinct map entry: %w", err)
		}
	}
	if len(src) < 8*words {
		return nil, fmt.Errorf("%w: distinct map entry: value of %d words truncated", engine.ErrData, words)
	}
	ent.vals = resize(ent.vals, k)
	for w := range words {
		x := binary.LittleEndian.Uint64(src[8*w:])
		if d.retract {
			ent.vals[w] = int64(x)
			continue
		}
		for b := 0; b < 64; b++ {
			c := 64*w + b
			switch {
			case c < k:
				ent.vals[c] = int64(x >> b & 1)
			case x>>b&1 != 0:
				return nil, fmt.Errorf("%w: distinct map entry: bit %d set for %d calls", engine.ErrData, c, k)
			}
		}
	}
	return src[8*words:], nil
}

// checkViews validates column c (encoded maps) at the rows of gids that are >= 0, before a
// merge changes anything: no NULL, every entry well-formed.
func (d *distinctSet) checkViews(c *engine.Column, gids []int32) error {
	var ent viewEntry
	for i, g := range gids {
		if g < 0 {
			continue
		}
		if c.IsNull(i) {
			return fmt.Errorf("%w: distinct map at row %d is NULL, which Flink's local aggregate never writes", engine.ErrData, i)
		}
		src, err := d.viewEntries(c.Bytes(i))
		for err == nil && len(src) > 0 {
			src, err = d.nextEntry(src, &ent)
		}
		if err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
	}
	return nil
}

// mergeView merges an encoded map (src, checked by checkViews) into group g, in the map's
// entry order, as DistinctAggCodeGen.merge does. NULL keys are skipped: the calls ignore them
// and nothing reads the merged map but later merges. When rows is not nil, every merged entry
// becomes a row of it with the calls' actions (+1 accumulate the key, -1 retract it, 0
// nothing).
func (d *distinctSet) mergeView(src []byte, g int32, rows *viewRows) {
	k := len(d.calls)
	ent := &d.scratchEntry
	for src = src[4:]; len(src) > 0; {
		src, _ = d.nextEntry(src, ent)
		if ent.null {
			continue
		}
		h := hashKey(g, ent.key)
		e := d.findLive(g, ent.key, false, h)
		if e < 0 {
			e = d.insert(g, ent.key, false, h)
		}
		cnt := d.counts[int(e)*k : int(e)*k+k]
		row := -1
		if rows != nil {
			row = rows.add(g, ent.key)
		}
		empty, changed := true, d.retract // a merge on retracting input always puts
		for j, other := range ent.vals {
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
				rows.acts[j][row] = act
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
			d.touch(e) // Flink puts the merged value (insert-only input: when a bit turned on)
		}
	}
}

// viewRows are the entries a merge into the state produced, as rows the calls of a distinct set
// fold: the key column (the set's argument column of a batch over the local aggregate's input),
// the entry's group, and per call its action.
type viewRows struct {
	keys  keyColumn
	gids  []int32
	acts  [][]int8 // per call of the set
	first []int32  // per bundle key: its first row (an anchor without actions)
	last  []int32  // per bundle key: its last row
}

// reset prepares rows for a merge into set d.
func (r *viewRows) reset(d *distinctSet) {
	r.keys.reset(d.typ)
	r.gids = r.gids[:0]
	r.acts = resize(r.acts, len(d.calls))
	for c := range r.acts {
		r.acts[c] = r.acts[c][:0]
	}
	r.first, r.last = r.first[:0], r.last[:0]
}

// anchor adds a row of group g with a NULL key and no action, the first of a bundle key: its
// value before and after is the key's value before the merge.
func (r *viewRows) anchor(g int32) {
	r.first = append(r.first, int32(len(r.gids)))
	r.last = append(r.last, int32(len(r.gids)))
	r.add(g, nil)
}

// add appends a row of group g and key (NULL when nil), without actions, and returns its index.
func (r *viewRows) add(g int32, key []byte) int {
	i := len(r.gids)
	r.gids = append(r.gids, g)
	if len(r.last) > 0 {
		r.last[len(r.last)-1] = int32(i)
	}
	r.keys.add(key)
	for c := range r.acts {
		r.acts[c] = append(r.acts[c], 0)
	}
	return i
}

// keyColumn builds a column of type typ from encoded keys (their Arrow value bytes; VARCHAR's
// UTF-8 bytes; BOOLEAN's byte 0/1), for accumulators to read as they read their argument.
type keyColumn struct {
	col engine.Column
	n   int
}

func (k *keyColumn) reset(typ engine.Type) {
	c := &k.col
	*c = engine.Column{Type: typ, Data: c.Data[:0], Valid: c.Valid[:0], Offs: append(c.Offs[:0], 0)}
	k.n = 0
}

// add appends key (NULL when nil).
func (k *keyColumn) add(key []byte) {
	c := &k.col
	i := k.n
	k.n++
	if i%8 == 0 {
		c.Valid = append(c.Valid, 0)
	}
	if key != nil {
		c.Valid[i/8] |= 1 << (i % 8)
	}
	switch c.Type.ID {
	case engine.Varchar:
		c.Data = append(c.Data, key...)
		c.Offs = append(c.Offs, int32(len(c.Data)))
	case engine.Boolean:
		if i%8 == 0 {
			c.Data = append(c.Data, 0)
		}
		if key != nil && key[0] == 1 {
			c.Data[i/8] |= 1 << (i % 8)
		}
	default:
		if key == nil {
			c.Data = append(c.Data, make([]byte, c.Type.Width())...)
		} else {
			c.Data = append(c.Data, key...)
		}
	}
}

// nextKey splits the encoded key of a value of type t off src: a VARCHAR's uint32 LE length and
// bytes, BOOLEAN's byte, or the type's Arrow value bytes.
func nextKey(t engine.Type, src []byte) (key, rest []byte, err error) {
	l := t.Width()
	switch t.ID {
	case engine.Varchar:
		if len(src) < 4 {
			return nil, nil, fmt.Errorf("%w: truncated key length", engine.ErrData)
		}
		l, src = int(binary.LittleEndian.Uint32(src)), src[4:]
	case engine.Boolean:
		l = 1
	}
	if l > len(src) {
		return nil, nil, fmt.Errorf("%w: key of %d bytes, %d left", engine.ErrData, l, len(src))
	}
	if t.ID == engine.Boolean && src[0] > 1 {
		return nil, nil, fmt.Errorf("%w: BOOLEAN key byte %d", engine.ErrData, src[0])
	}
	return src[:l], src[l:], nil
}

// keyBytes is the encoded size of key (see nextKey) of type t.
func keyBytes(t engine.Type, key []byte) int {
	if t.ID == engine.Varchar {
		return 4 + len(key)
	}
	return len(key)
}

// appendKey appends the encoding of key (see nextKey) of type t.
func appendKey(dst []byte, t engine.Type, key []byte) []byte {
	if t.ID == engine.Varchar {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	}
	return append(dst, key...)
}
