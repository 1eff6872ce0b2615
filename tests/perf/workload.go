package main

import (
	"encoding/json"

	"github.com/ferrystream/ferry/engine"
)

// workload is the measured query: GROUP BY auction with COUNT(*), SUM(price), MAX(price),
// AVG(price) over BIGINT, insert-only, generate_update_before, max parallelism 128. By default
// the operator's input is what Flink's plan feeds it after projection, (auction, price); wide
// feeds all five bid columns (auction, bidder, price, channel, dateTime).
type workload struct{ wide bool }

// colData is one input column over generated bids: int64 values, or VARCHAR offsets and bytes.
type colData struct {
	vals  []int64
	offs  []int32
	bytes []byte
}

func (w workload) fields() []engine.FieldSpec {
	f := false
	if !w.wide {
		return []engine.FieldSpec{
			{Name: "auction", Type: "BIGINT", Nullable: &f},
			{Name: "price", Type: "BIGINT"},
		}
	}
	return []engine.FieldSpec{
		{Name: "auction", Type: "BIGINT", Nullable: &f},
		{Name: "bidder", Type: "BIGINT"},
		{Name: "price", Type: "BIGINT"},
		{Name: "channel", Type: "VARCHAR"},
		{Name: "dateTime", Type: "TIMESTAMP(3)"},
	}
}

// columns returns the input columns of w over b, in spec order.
func (w workload) columns(b *bids) []colData {
	if !w.wide {
		return []colData{{vals: b.auction}, {vals: b.price}}
	}
	return []colData{
		{vals: b.auction}, {vals: b.bidder}, {vals: b.price},
		{offs: b.channelOffs, bytes: b.channelData}, {vals: b.dateTime},
	}
}

// specJSON is the operator spec both drivers open, byte for byte.
func (w workload) specJSON() string {
	price := 1
	if w.wide {
		price = 2
	}
	s := engine.Spec{
		Kind:  "group_aggregate",
		Name:  "GroupAggregate(groupBy=[auction])",
		Input: w.fields(),
		Keys:  []int{0},
		Aggs: []engine.AggCall{
			{Func: "COUNT", Name: "bids"},
			{Func: "SUM", Args: []int{price}, Name: "total"},
			{Func: "MAX", Args: []int{price}, Name: "top"},
			{Func: "AVG", Args: []int{price}, Name: "avg"},
		},
		GenerateUpdateBefore: true,
		MaxParallelism:       128,
	}
	data, err := json.Marshal(&s)
	if err != nil {
		panic(err)
	}
	return string(data)
}
