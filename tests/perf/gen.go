package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"unsafe"
)

// Nexmark's bid generator (nexmark/nexmark, nexmark-flink BidGenerator and GeneratorConfig),
// reduced to a fixed key cardinality: the ids start where Nexmark's do, prices and channels
// follow its formulas, and a share of the bids goes to a few hot auctions and bidders.
const (
	firstAuctionID   = 1000 // GeneratorConfig.FIRST_AUCTION_ID
	firstPersonID    = 1000 // GeneratorConfig.FIRST_PERSON_ID
	hotBiddersRatio  = 4    // GeneratorConfig default: P(hot bidder) = 1 - 1/4
	hotChannelsRatio = 2    // BidGenerator.HOT_CHANNELS_RATIO
	channelsNumber   = 10_000
	// baseTimeMillis is 2026-01-01T00:00:00Z; events are 0.1 ms apart (Nexmark's default rate
	// of 10,000 events per second).
	baseTimeMillis = 1_767_225_600_000
)

var hotChannels = [...]string{"Google", "Facebook", "Baidu", "Apple"} // BidGenerator.HOT_CHANNELS

// genConfig shapes the bids of one key cardinality.
type genConfig struct {
	keys int // distinct auctions
	// hotRatio is Nexmark's hotAuctionRatio: a bid goes to a hot auction unless
	// rand.IntN(hotRatio) == 0, so P(hot) = 1 - 1/hotRatio (2: half the bids; 1: none, uniform).
	hotRatio int
	hotKeys  int // size of the hot-auction set (at most keys)
	seed     uint64
}

// bids holds generated bid columns, struct-of-arrays, in the layout the Arrow C Data Interface
// and engine.Column views expect: int64 values, DECIMAL as 16-byte little-endian two's
// complement unscaled values, VARCHAR as int32 offsets plus UTF-8 bytes. Every row is an insert
// (+I); kinds is all zeros. Columns generate was not asked to keep are nil.
type bids struct {
	n           int
	auction     []int64
	bidder      []int64
	price       []int64 // cents: 100 to 100,000,000
	priceDec    []byte  // price as DECIMAL(18, 2): unscaled = cents, 16 bytes per row
	dateTime    []int64 // TIMESTAMP(3): epoch milliseconds
	channelOffs []int32 // n+1 entries
	channelData []byte
	kinds       []byte
}

// columnSet selects the bid columns generate keeps besides auction and price.
type columnSet uint8

const (
	keepBidder columnSet = 1 << iota
	keepChannel
	keepDateTime
	keepPriceDec // price as DECIMAL(18, 2), derived from price
	keepAll      = keepBidder | keepChannel | keepDateTime
)

// hotSet returns the hot auctions: spread over the key space the way Nexmark's hot auctions are
// every HOT_AUCTION_RATIO-th id.
func (c genConfig) hotSet() []int64 {
	h := max(1, min(c.hotKeys, c.keys))
	hot := make([]int64, h)
	for j := range hot {
		hot[j] = firstAuctionID + int64(j*(c.keys/h))
	}
	return hot
}

// nextPrice is Nexmark's PriceGenerator.nextPrice: round(10^(6u) * 100), 100 to 100,000,000.
func nextPrice(r *rand.Rand) int64 {
	return int64(math.Round(math.Pow(10, r.Float64()*6) * 100))
}

// generate returns n bids, a deterministic function of c and n. Event i is 0.1 ms after event
// i-1. Only auction, price and the columns of keep are kept; every column is still drawn, so
// each column's values do not depend on keep.
func generate(c genConfig, n int, keep columnSet) *bids {
	r := rand.New(rand.NewPCG(c.seed, uint64(c.keys)))
	hot := c.hotSet()
	persons := max(1, c.keys/3) // Nexmark creates one person per three auctions
	hotBidders := max(1, min(len(hot), persons))
	b := &bids{n: n, auction: make([]int64, n), price: make([]int64, n), kinds: make([]byte, n)}
	if keep&keepBidder != 0 {
		b.bidder = make([]int64, n)
	}
	if keep&keepDateTime != 0 {
		b.dateTime = make([]int64, n)
	}
	if keep&keepChannel != 0 {
		b.channelOffs = make([]int32, n+1)
		b.channelData = make([]byte, 0, 10*n)
	}
	ratio := max(1, c.hotRatio)
	var channel []byte
	for i := range n {
		if r.IntN(ratio) > 0 {
			b.auction[i] = hot[r.IntN(len(hot))]
		} else {
			b.auction[i] = firstAuctionID + int64(r.IntN(c.keys))
		}
		var bidder int64
		if r.IntN(hotBiddersRatio) > 0 {
			// Hot bidders are the second person of their block, so they are not hot sellers.
			bidder = firstPersonID + int64(r.IntN(hotBidders)*(persons/hotBidders)) + 1
		} else {
			bidder = firstPersonID + int64(r.IntN(persons))
		}
		b.price[i] = nextPrice(r)
		if r.IntN(hotChannelsRatio) > 0 {
			channel = append(channel[:0], hotChannels[r.IntN(len(hotChannels))]...)
		} else {
			channel = append(channel[:0], "channel-"...)
			channel = strconv.AppendInt(channel, int64(r.IntN(channelsNumber)), 10)
		}
		if b.bidder != nil {
			b.bidder[i] = bidder
		}
		if b.channelOffs != nil {
			b.channelData = append(b.channelData, channel...)
			b.channelOffs[i+1] = int32(len(b.channelData))
		}
		if b.dateTime != nil {
			b.dateTime[i] = baseTimeMillis + int64(i)/10
		}
	}
	if keep&keepPriceDec != 0 {
		b.priceDec = decimal128Bytes(b.price)
	}
	return b
}

// decimal128Bytes returns v as Arrow decimal128 values: per row 16 bytes, the little-endian
// two's complement of v[i] sign-extended to 128 bits.
func decimal128Bytes(v []int64) []byte {
	out := make([]byte, 16*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(out[16*i:], uint64(x))
		binary.LittleEndian.PutUint64(out[16*i+8:], uint64(x>>63))
	}
	return out
}

// permutation maps 0..keys-1 onto itself bijectively and scrambled (i*p mod keys with p coprime
// to keys), so every key can be created in a shuffled order without a table of keys entries.
type permutation struct{ keys, p uint64 }

func newPermutation(keys int) permutation {
	k := uint64(keys)
	p := uint64(2654435761) % k // Knuth's multiplicative constant, a prime
	if p == 0 {
		p = 1
	}
	for gcd(p, k) != 1 {
		p++
	}
	return permutation{k, p}
}

func (m permutation) at(i int) int64 { return int64(uint64(i) * m.p % m.keys) }

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// int64Bytes reinterprets an int64 slice as its little-endian bytes (the Arrow data buffer).
func int64Bytes(v []int64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), 8*len(v))
}
