package main

import (
	"encoding/json"
	"fmt"

	"github.com/ferrystream/ferry/agg"
	"github.com/ferrystream/ferry/engine"
)

// The value columns a workload can aggregate (-values).
const (
	valuesBigint  = "bigint"  // price BIGINT: COUNT(*), SUM, MAX, AVG(price)
	valuesDecimal = "decimal" // price DECIMAL(18, 2): COUNT(*), SUM, MAX, AVG(price)
	valuesString  = "string"  // channel VARCHAR: COUNT(*), MIN, MAX, COUNT(channel)
)

// workload is the measured query: GROUP BY auction over one value column, insert-only,
// generate_update_before, max parallelism 128. values picks the column and its aggregates:
// price as BIGINT or as DECIMAL(18, 2) (unscaled = the generated cents) with COUNT(*), SUM,
// MAX, AVG (results BIGINT, or DECIMAL(38, 2), (18, 2), (38, 6)), or channel VARCHAR with
// COUNT(*), MIN, MAX, COUNT(channel). By default the operator's input is what Flink's plan feeds
// it after projection, (auction, value); wide feeds all five bid columns (auction, bidder,
// price, channel, dateTime), price typed as values says (BIGINT for string).
type workload struct {
	wide   bool
	values string
}

// query describes the workload's aggregates for the report's header.
func (w workload) query() string {
	switch w.values {
	case valuesDecimal:
		return "COUNT(*), SUM, MAX, AVG(price), price DECIMAL(18, 2)"
	case valuesString:
		return "COUNT(*), MIN, MAX, COUNT(channel), channel VARCHAR"
	}
	return "COUNT(*), SUM, MAX, AVG(price), BIGINT"
}

// colData is one input column over generated bids: int64 values, 16-byte DECIMAL values, or
// VARCHAR offsets and bytes.
type colData struct {
	vals  []int64
	dec   []byte
	offs  []int32
	bytes []byte
}

// keep is the columns generate must keep for w.
func (w workload) keep() columnSet {
	var k columnSet
	if w.wide {
		k |= keepAll
	}
	switch w.values {
	case valuesDecimal:
		k |= keepPriceDec
	case valuesString:
		k |= keepChannel
	}
	return k
}

func (w workload) priceType() string {
	if w.values == valuesDecimal {
		return "DECIMAL(18, 2)"
	}
	return "BIGINT"
}

func (w workload) fields() []engine.FieldSpec {
	f := false
	auction := engine.FieldSpec{Name: "auction", Type: "BIGINT", Nullable: &f}
	switch {
	case w.wide:
		return []engine.FieldSpec{
			auction,
			{Name: "bidder", Type: "BIGINT"},
			{Name: "price", Type: w.priceType()},
			{Name: "channel", Type: "VARCHAR"},
			{Name: "dateTime", Type: "TIMESTAMP(3)"},
		}
	case w.values == valuesString:
		return []engine.FieldSpec{auction, {Name: "channel", Type: "VARCHAR"}}
	}
	return []engine.FieldSpec{auction, {Name: "price", Type: w.priceType()}}
}

// columns returns the input columns of w over b, in spec order.
func (w workload) columns(b *bids) []colData {
	price := colData{vals: b.price}
	if w.values == valuesDecimal {
		price = colData{dec: b.priceDec}
	}
	channel := colData{offs: b.channelOffs, bytes: b.channelData}
	switch {
	case w.wide:
		return []colData{{vals: b.auction}, {vals: b.bidder}, price, channel, {vals: b.dateTime}}
	case w.values == valuesString:
		return []colData{{vals: b.auction}, channel}
	}
	return []colData{{vals: b.auction}, price}
}

// aggs are the workload's aggregate calls over input column arg (price or channel).
func (w workload) aggs() []agg.AggCall {
	arg := 1
	switch {
	case w.wide && w.values == valuesString:
		arg = 3
	case w.wide:
		arg = 2
	}
	if w.values == valuesString {
		return []agg.AggCall{
			{Func: "COUNT", Name: "bids"},
			{Func: "MIN", Args: []int{arg}, Name: "first"},
			{Func: "MAX", Args: []int{arg}, Name: "last"},
			{Func: "COUNT", Args: []int{arg}, Name: "channels"},
		}
	}
	return []agg.AggCall{
		{Func: "COUNT", Name: "bids"},
		{Func: "SUM", Args: []int{arg}, Name: "total"},
		{Func: "MAX", Args: []int{arg}, Name: "top"},
		{Func: "AVG", Args: []int{arg}, Name: "avg"},
	}
}

// specJSON is the operator spec both drivers open, byte for byte.
func (w workload) specJSON() string {
	params, err := json.Marshal(&agg.Params{Aggs: w.aggs(), GenerateUpdateBefore: true})
	if err != nil {
		panic(err)
	}
	s := engine.Spec{
		Kind:           agg.Kind,
		Name:           "GroupAggregate(groupBy=[auction])",
		Inputs:         []engine.Input{{Fields: w.fields(), Keys: []int{0}}},
		MaxParallelism: 128,
		Params:         params,
	}
	data, err := json.Marshal(&s)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// checkValues validates a -values name.
func checkValues(v string) error {
	switch v {
	case valuesBigint, valuesDecimal, valuesString:
		return nil
	}
	return fmt.Errorf("-values: unknown value column %q (bigint, decimal, string)", v)
}
