package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"unsafe"
)

// limitRunner is the limit baseline: the same rows folded into dense arrays indexed by a
// group id computed before timing. What it leaves out is what the operator adds on top of the
// folds themselves: key encoding and hashing, key groups, the hash lookup, the changelog (and
// for DECIMAL the 38-digit overflow checks, for VARCHAR copying the new extremes).
type limitRunner struct {
	gids []int32
	f    limitFolder
}

// limitFolder folds ring rows into one dense slot per group, for one value column.
type limitFolder interface {
	// fold folds rows [start, start+len(gids)) of the ring; gids are their group ids.
	fold(gids []int32, start int)
	// total is the number of rows folded so far (a check that the loop ran).
	total() int64
}

func newLimit(keys int, w workload, ring *bids) *limitRunner {
	l := &limitRunner{gids: make([]int32, ring.n)}
	for i, a := range ring.auction {
		l.gids[i] = int32(a - firstAuctionID)
	}
	switch w.values {
	case valuesDecimal:
		l.f = newLimitDec(keys, ring.priceDec)
	case valuesString:
		l.f = newLimitStr(keys, ring.channelOffs, ring.channelData)
	default:
		l.f = newLimitInt(keys, ring.price)
	}
	return l
}

// limitSlotBytes is the size of one group's slot for value column values.
func limitSlotBytes(values string) uintptr {
	switch values {
	case valuesDecimal:
		return unsafe.Sizeof(limitDecSlot{})
	case valuesString:
		return unsafe.Sizeof(limitStrSlot{})
	}
	return unsafe.Sizeof(limitSlot{})
}

func (l *limitRunner) run(size, count int, pos *int) error {
	for range count {
		if *pos+size > len(l.gids) {
			*pos = 0
		}
		l.f.fold(l.gids[*pos:*pos+size], *pos)
		*pos += size
	}
	return nil
}

func (l *limitRunner) total() int64 { return l.f.total() }

// limitSlot is the dense state of one group for the four BIGINT aggregates: COUNT(*),
// SUM(price), MAX(price) and AVG(price)'s sum and count, in one 40-byte record (one cache line
// per row).
type limitSlot struct {
	count, sum, max, avgSum, avgCount int64
}

type limitInt struct {
	slots []limitSlot
	price []int64
}

func newLimitInt(keys int, price []int64) *limitInt {
	l := &limitInt{slots: make([]limitSlot, keys), price: price}
	for i := range l.slots {
		l.slots[i].max = math.MinInt64 // touches every page before timing
	}
	return l
}

func (l *limitInt) fold(gids []int32, start int) {
	slots := l.slots
	price := l.price[start : start+len(gids)]
	for i, g := range gids {
		s := &slots[g]
		p := price[i]
		s.count++
		s.sum += p
		if p > s.max {
			s.max = p
		}
		s.avgSum += p
		s.avgCount++
	}
}

func (l *limitInt) total() int64 {
	var n int64
	for i := range l.slots {
		n += l.slots[i].count
	}
	return n
}

// u128 is a 128-bit two's-complement integer, a DECIMAL's unscaled value.
type u128 struct {
	lo uint64
	hi int64
}

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	return u128{lo, a.hi + b.hi + int64(c)}
}

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

// limitDecSlot is limitSlot for DECIMAL: 128-bit sums and maximum, 64 bytes.
type limitDecSlot struct {
	count         int64
	sum, max, avg u128
	avgCount      int64
}

type limitDec struct {
	slots []limitDecSlot
	price []byte // 16 bytes per row
}

func newLimitDec(keys int, price []byte) *limitDec {
	l := &limitDec{slots: make([]limitDecSlot, keys), price: price}
	for i := range l.slots {
		l.slots[i].max = u128{hi: math.MinInt64} // touches every page before timing
	}
	return l
}

func (l *limitDec) fold(gids []int32, start int) {
	slots := l.slots
	price := l.price[16*start : 16*(start+len(gids))]
	for i, g := range gids {
		s := &slots[g]
		p := u128{binary.LittleEndian.Uint64(price[16*i:]), int64(binary.LittleEndian.Uint64(price[16*i+8:]))}
		s.count++
		s.sum = s.sum.add(p)
		if s.max.less(p) {
			s.max = p
		}
		s.avg = s.avg.add(p)
		s.avgCount++
	}
}

func (l *limitDec) total() int64 {
	var n int64
	for i := range l.slots {
		n += l.slots[i].count
	}
	return n
}

// limitStrSlot is the dense state of one group for COUNT(*), MIN, MAX and COUNT over VARCHAR:
// the extremes are copied into the slot (every generated channel fits in 16 bytes; minLen 0xff:
// none yet), so a compare touches the slot's cache line only; 56 bytes.
type limitStrSlot struct {
	min, max       [16]byte
	count, nonNull int64
	minLen, maxLen uint8
}

type limitStr struct {
	slots []limitStrSlot
	offs  []int32
	data  []byte
}

func newLimitStr(keys int, offs []int32, data []byte) *limitStr {
	for i := range len(offs) - 1 {
		if offs[i+1]-offs[i] > 16 {
			panic("limit baseline: a channel longer than 16 bytes")
		}
	}
	l := &limitStr{slots: make([]limitStrSlot, keys), offs: offs, data: data}
	for i := range l.slots {
		l.slots[i].minLen = 0xff // touches every page before timing
	}
	return l
}

func (l *limitStr) fold(gids []int32, start int) {
	slots := l.slots
	offs := l.offs[start : start+len(gids)+1]
	for i, g := range gids {
		s := &slots[g]
		v := l.data[offs[i]:offs[i+1]]
		s.count++
		if s.minLen == 0xff || bytes.Compare(v, s.min[:s.minLen]) < 0 {
			s.minLen = uint8(copy(s.min[:], v))
		}
		if s.nonNull == 0 || bytes.Compare(v, s.max[:s.maxLen]) > 0 {
			s.maxLen = uint8(copy(s.max[:], v))
		}
		s.nonNull++
	}
}

func (l *limitStr) total() int64 {
	var n int64
	for i := range l.slots {
		n += l.slots[i].count
	}
	return n
}
