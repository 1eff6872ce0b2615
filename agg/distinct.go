package agg

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/ferrystream/ferry/engine"
)

// distinctSet is the state Flink keeps for the DISTINCT calls that share one argument column
// (DistinctAggCodeGen): per key, a map from each distinct argument value to a value per call.
// On insert-only input the value is a bit per call — set the first time the call sees the value
// under its FILTER, which is when the call's inner aggregate accumulates. On retracting input it
// is a count per call: the inner aggregate accumulates when the count turns 1 and retracts when
// it turns 0; an entry whose counts are all 0 is removed; counts may go negative.
//
// The set turns each row into one action per call (+1 accumulate, -1 retract, 0 nothing) that
// the call's ordinary accumulator then folds. NULL argument values get no entry: Flink stores
// them, but every inner aggregate ignores NULL, so nothing observable changes.
//
// Pointer-free: entries live in flat slices chained per group, keys in one byte arena, and an
// open-addressing index maps (group, key) to an entry.
type distinctSet struct {
	col     int   // argument column
	calls   []int // indices of the operator's calls that share this set, in call order
	filters []int // per call: FILTER column, or -1
	retract bool  // counts (retracting input) rather than bits
	acts    [][]int8

	entGroup []int32 // owning group; -1 for free entries
	entOff   []int64 // key offset in arena
	entLen   []int32
	entHash  []uint64
	counts   []int64 // len(calls) per entry
	next     []int32 // next entry of the group, or of the free list
	prev     []int32
	head     []int32 // per group: first entry, -1 when empty
	free     int32
	arena    []byte
	garbage  int
	slots    []int32 // entry+1, 0 empty; power-of-two length
	used     int
	keyBuf   []byte
}

func newDistinctSet(col int, retract bool) *distinctSet {
	return &distinctSet{col: col, retract: retract, free: -1}
}

func (d *distinctSet) addCall(call int, filter int) {
	d.calls = append(d.calls, call)
	d.filters = append(d.filters, filter)
	d.acts = append(d.acts, nil)
}

func (d *distinctSet) Grow(n int) {
	for len(d.head) < n {
		d.head = append(d.head, -1)
	}
}

// reset removes every entry of group g (Flink's cleanup of the MapView).
func (d *distinctSet) Reset(g int32) {
	for d.head[g] >= 0 {
		d.remove(d.head[g])
	}
}

func (d *distinctSet) Bytes() int64 {
	return int64(cap(d.entGroup))*(4+8+4+8+4+4) + int64(cap(d.counts))*8 + int64(cap(d.head))*4 +
		int64(cap(d.arena)) + int64(cap(d.slots))*4
}

// key returns the identity bytes of row i's argument: the raw value for fixed-width types (with
// NaN canonical, as Java's Double/Float equals), the UTF-8 bytes for VARCHAR.
func (d *distinctSet) key(col *engine.Column, i int) []byte {
	switch col.Type.ID {
	case engine.Varchar:
		return col.Bytes(i)
	case engine.Boolean:
		d.keyBuf = append(d.keyBuf[:0], 0)
		if col.Bool(i) {
			d.keyBuf[0] = 1
		}
		return d.keyBuf
	case engine.Double:
		v := math.Float64frombits(binary.LittleEndian.Uint64(col.Fixed(i)))
		return binary.LittleEndian.AppendUint64(d.keyBuf[:0], uint64(bitsOf(v)))
	case engine.Float:
		v := math.Float32frombits(binary.LittleEndian.Uint32(col.Fixed(i)))
		return binary.LittleEndian.AppendUint32(d.keyBuf[:0], uint32(bitsOf(v)))
	}
	return col.Fixed(i)
}

func hashKey(g int32, key []byte) uint64 {
	h := uint64(g)*0x9e3779b97f4a7c15 ^ uint64(len(key))
	for len(key) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(key)) * 0xbf58476d1ce4e5b9
		h = bits.RotateLeft64(h, 31)
		key = key[8:]
	}
	for _, b := range key {
		h = (h ^ uint64(b)) * 0x94d049bb133111eb
	}
	return h ^ h>>29
}

// resolve computes the action of every call of the set for every row, in row order, updating
// the set as Flink's generated accumulate/retract code would. base[i] is the row's own action.
func (d *distinctSet) resolve(in *engine.Batch, gids []int32, base []int8) {
	n := in.Len
	col := &in.Cols[d.col]
	for c := range d.calls {
		d.acts[c] = resize(d.acts[c], n)
		clear(d.acts[c])
	}
	k := len(d.calls)
	for i, g := range gids[:n] {
		if g < 0 || col.IsNull(i) {
			continue
		}
		// A row no filter passes does not touch the set (Flink guards the whole block).
		touched := false
		for _, f := range d.filters {
			if f < 0 || passes(&in.Cols[f], i) {
				touched = true
				break
			}
		}
		if !touched {
			continue
		}
		key := d.key(col, i)
		h := hashKey(g, key)
		e := d.find(g, key, h)
		if e < 0 {
			e = d.insert(g, key, h)
		}
		cnt := d.counts[int(e)*k : int(e)*k+k]
		for c, f := range d.filters {
			if f >= 0 && !passes(&in.Cols[f], i) {
				continue
			}
			switch {
			case !d.retract: // bit per call; insert-only input
				if cnt[c] == 0 {
					cnt[c] = 1
					d.acts[c][i] = 1
				}
			case base[i] > 0:
				if cnt[c]++; cnt[c] == 1 {
					d.acts[c][i] = 1
				}
			default:
				if cnt[c]--; cnt[c] == 0 {
					d.acts[c][i] = -1
				}
			}
		}
		if d.retract {
			empty := true
			for _, x := range cnt {
				if x != 0 {
					empty = false
				}
			}
			if empty {
				d.remove(e)
			}
		}
	}
}

// passes reports whether a FILTER column is TRUE at row i.
func passes(f *engine.Column, i int) bool { return !f.IsNull(i) && f.Bool(i) }

func (d *distinctSet) find(g int32, key []byte, h uint64) int32 {
	if d.used == 0 {
		return -1
	}
	mask := len(d.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := d.slots[i]
		if s == 0 {
			return -1
		}
		e := s - 1
		if d.entHash[e] == h && d.entGroup[e] == g && string(d.arena[d.entOff[e]:d.entOff[e]+int64(d.entLen[e])]) == string(key) {
			return e
		}
	}
}

func (d *distinctSet) insert(g int32, key []byte, h uint64) int32 {
	k := len(d.calls)
	var e int32
	if d.free >= 0 {
		e = d.free
		d.free = d.next[e]
	} else {
		e = int32(len(d.entGroup))
		d.entGroup = append(d.entGroup, 0)
		d.entOff = append(d.entOff, 0)
		d.entLen = append(d.entLen, 0)
		d.entHash = append(d.entHash, 0)
		d.next = append(d.next, -1)
		d.prev = append(d.prev, -1)
		d.counts = append(d.counts, make([]int64, k)...)
	}
	d.entGroup[e], d.entOff[e], d.entLen[e], d.entHash[e] = g, int64(len(d.arena)), int32(len(key)), h
	d.arena = append(d.arena, key...)
	clear(d.counts[int(e)*k : int(e)*k+k])
	hd := d.head[g]
	d.next[e], d.prev[e] = hd, -1
	if hd >= 0 {
		d.prev[hd] = e
	}
	d.head[g] = e
	if (d.used+1)*4 > len(d.slots)*3 {
		d.rehash()
	}
	mask := len(d.slots) - 1
	i := int(h) & mask
	for d.slots[i] != 0 {
		i = (i + 1) & mask
	}
	d.slots[i] = e + 1
	d.used++
	return e
}

func (d *distinctSet) remove(e int32) {
	g := d.entGroup[e]
	if p := d.prev[e]; p >= 0 {
		d.next[p] = d.next[e]
	} else {
		d.head[g] = d.next[e]
	}
	if n := d.next[e]; n >= 0 {
		d.prev[n] = d.prev[e]
	}
	mask := len(d.slots) - 1
	i := int(d.entHash[e]) & mask
	for d.slots[i] != e+1 {
		i = (i + 1) & mask
	}
	for { // backward-shift deletion
		d.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			s := d.slots[j]
			if s == 0 {
				d.used--
				d.garbage += int(d.entLen[e])
				d.entGroup[e] = -1
				d.next[e] = d.free
				d.free = e
				if d.garbage > 1<<16 && d.garbage*2 > len(d.arena) {
					d.compact()
				}
				return
			}
			home := int(d.entHash[s-1]) & mask
			if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
				d.slots[i] = s
				i = j
				break
			}
		}
	}
}

func (d *distinctSet) rehash() {
	n := 16
	for n*3 < (d.used+1)*4*2 {
		n *= 2
	}
	d.slots = make([]int32, n)
	mask := n - 1
	for e, g := range d.entGroup {
		if g < 0 {
			continue
		}
		i := int(d.entHash[e]) & mask
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i] = int32(e) + 1
	}
}

func (d *distinctSet) compact() {
	arena := make([]byte, 0, len(d.arena)-d.garbage)
	for e, g := range d.entGroup {
		if g >= 0 {
			off := d.entOff[e]
			d.entOff[e] = int64(len(arena))
			arena = append(arena, d.arena[off:off+int64(d.entLen[e])]...)
		}
	}
	d.arena, d.garbage = arena, 0
}

// save appends group g's entries: their number, then each key (length-prefixed) and its values.
func (d *distinctSet) Save(dst []byte, g int32) []byte {
	n := 0
	for e := d.head[g]; e >= 0; e = d.next[e] {
		n++
	}
	dst = putVarint(dst, int64(n))
	k := len(d.calls)
	for e := d.head[g]; e >= 0; e = d.next[e] {
		dst = putVarint(dst, int64(d.entLen[e]))
		dst = append(dst, d.arena[d.entOff[e]:d.entOff[e]+int64(d.entLen[e])]...)
		for _, c := range d.counts[int(e)*k : int(e)*k+k] {
			dst = putVarint(dst, c)
		}
	}
	return dst
}

func (d *distinctSet) Load(src []byte, g int32) ([]byte, error) {
	n, src, err := getVarint(src)
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(src)) {
		return nil, fmt.Errorf("%w: distinct value count %d out of range", engine.ErrData, n)
	}
	k := len(d.calls)
	for range n {
		var l int64
		if l, src, err = getVarint(src); err != nil {
			return nil, err
		}
		if l < 0 || l > int64(len(src)) {
			return nil, fmt.Errorf("%w: distinct key length %d invalid", engine.ErrData, l)
		}
		key := src[:l]
		src = src[l:]
		h := hashKey(g, key)
		if d.find(g, key, h) >= 0 {
			return nil, fmt.Errorf("%w: duplicate distinct value", engine.ErrData)
		}
		e := d.insert(g, key, h)
		cnt := d.counts[int(e)*k : int(e)*k+k]
		for c := range cnt {
			if cnt[c], src, err = getVarint(src); err != nil {
				return nil, err
			}
		}
	}
	return src, nil
}
