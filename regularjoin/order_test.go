package regularjoin

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

// TestBinaryRowMapOrder replays a golden vector of JDK 17's HashMap<RowData, ?> over Flink's
// BinaryRowData keys (tests/hashmaporder/BinaryRowOrder.java): the rows' bytes and hash codes
// from the key encoder and the recordMap's structure must give Java's iteration order after
// random puts and remove(key).
func TestBinaryRowMapOrder(t *testing.T) {
	data, err := os.ReadFile("testdata/binaryrow-hashmap-order.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Ops   [][]any `json:"ops"`
		Order []int64 `json:"order"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	enc := engine.NewKeyEncoder([]int{0, 1, 2}, sideTypes)
	m := &recordMap{}
	for _, op := range v.Ops {
		var k any
		if op[1] != nil {
			k = int64(op[1].(float64))
		}
		b := enginetest.Batch(sideTypes, [][]any{{k, int64(op[2].(float64)), op[3]}}, []engine.RowKind{0}, enginetest.Options{})
		if err := enc.Encode(b); err != nil {
			t.Fatal(err)
		}
		key, h := enc.Key(0), enc.Hash(0)
		r := m.Get(key, h)
		switch {
		case op[0] == "p" && r == nil:
			m.Insert(&record{key: slices.Clone(key)}, h)
		case op[0] == "d":
			if r == nil {
				t.Fatalf("%v: not in the map", op)
			}
			m.RemoveKey(r)
		}
	}
	var got []int64
	for _, r := range m.AppendOrder(nil) {
		got = append(got, idOf(r.key))
	}
	if !slices.Equal(got, v.Order) {
		t.Fatalf("order\n got %v\nwant %v", got, v.Order)
	}
	if len(got) < 50 {
		t.Fatalf("%d rows: the vector is too small", len(got))
	}
}

// idOf reads the second field (BIGINT) of a three-field BinaryRowData: after the 8-byte header
// and the first field's slot.
func idOf(row []byte) int64 { return int64(binary.LittleEndian.Uint64(row[16:])) }
