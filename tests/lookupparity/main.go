// Command lookupparity compares lookup/pg with Flink's own JDBC lookup: it reads the cases that
// jni's JdbcLookupParityTest wrote (a PostgreSQL server, tables, probe keys and the rows Flink's
// JdbcRowDataLookupFunction returned for each key, in canonical text), looks the same keys up
// with lookup/pg in one batch per case, and exits 1 when any key's rows differ. Canonical text
// of a value (both sides): BOOLEAN true/false; integers, DATE (epoch days) and TIME (ms of day) in
// decimal; FLOAT/DOUBLE their raw IEEE bits as a signed decimal; DECIMAL the unscaled integer;
// strings as is; BYTES lower-case hex; TIMESTAMP "millis,nanoOfMilli"; ARRAY a JSON array; NULL
// JSON null.
//
//	go run ./tests/lookupparity FILE
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ferrystream/ferry/lookup/pg"
)

type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type parityCase struct {
	Name string `json:"name"`
	// Zone is the JVM's default zone while Flink looked the keys up.
	Zone   string     `json:"zone"`
	Table  string     `json:"table"`
	Keys   []column   `json:"keys"`
	Fields []column   `json:"fields"`
	Probes [][]string `json:"probes"`
	// Flink[i] is the rows Flink returned for Probes[i], each a list of canonical values.
	Flink [][][]any `json:"flink"`
}

type input struct {
	DSN   string       `json:"dsn"`
	Cases []parityCase `json:"cases"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: lookupparity FILE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "lookupparity:", err)
		os.Exit(1)
	}
}

func run(file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		return err
	}
	failed := 0
	for _, c := range in.Cases {
		n, err := check(in.DSN, c)
		if err != nil {
			fmt.Printf("case %s: %v\n", c.Name, err)
			failed++
			continue
		}
		fmt.Printf("case %s: %d probe keys, %d rows identical to Flink's (values and order)\n", c.Name, len(c.Probes), n)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d cases differ from Flink's JDBC lookup", failed, len(in.Cases))
	}
	return nil
}

func columns(cs []column) ([]pg.Column, error) {
	out := make([]pg.Column, len(cs))
	for i, c := range cs {
		t, err := pg.ParseType(c.Type)
		if err != nil {
			return nil, err
		}
		out[i] = pg.Column{Name: c.Name, Type: t}
	}
	return out, nil
}

func check(dsn string, c parityCase) (int, error) {
	zone, err := time.LoadLocation(c.Zone)
	if err != nil {
		return 0, err
	}
	keys, err := columns(c.Keys)
	if err != nil {
		return 0, err
	}
	fields, err := columns(c.Fields)
	if err != nil {
		return 0, err
	}
	ctx := context.Background()
	l, err := pg.Open(ctx, dsn, pg.Config{Table: c.Table, Keys: keys, Fields: fields, Zone: zone})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	probes := make([][]any, len(c.Probes))
	for i, p := range c.Probes {
		probes[i] = make([]any, len(p))
		for j, s := range p {
			if probes[i][j], err = parseKey(s, keys[j].Type); err != nil {
				return 0, fmt.Errorf("probe %d: %w", i, err)
			}
		}
	}
	got, err := l.Lookup(ctx, probes)
	if err != nil {
		return 0, err
	}
	rows, bad := 0, 0
	for i, rs := range got {
		var mine [][]any
		for _, r := range rs {
			row := make([]any, len(r))
			for j, v := range r {
				row[j] = canonical(v)
			}
			mine = append(mine, row)
		}
		flink := c.Flink[i]
		// JSON round trip: the same shapes on both sides
		a, _ := json.Marshal(mine)
		b, _ := json.Marshal(flink)
		if string(a) == string(b) || (len(mine) == 0 && len(flink) == 0) {
			rows += len(mine)
			continue
		}
		bad++
		order := ""
		if sameMultiset(a, b) {
			order = " (same rows, other order)"
		}
		fmt.Printf("case %s probe %v%s:\n  ferry %s\n  flink %s\n", c.Name, c.Probes[i], order, a, b)
	}
	if bad > 0 {
		return rows, fmt.Errorf("%d of %d probe keys differ", bad, len(c.Probes))
	}
	return rows, nil
}

func sameMultiset(a, b []byte) bool {
	var x, y []json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	sortRaw := func(r []json.RawMessage) []string {
		s := make([]string, len(r))
		for i, m := range r {
			s[i] = string(m)
		}
		sort.Strings(s)
		return s
	}
	return reflect.DeepEqual(sortRaw(x), sortRaw(y))
}

// parseKey reads a key's canonical text as the Go value of its Flink type.
func parseKey(s string, t pg.Type) (any, error) {
	switch t.Kind {
	case pg.Boolean:
		return s == "true", nil
	case pg.TinyInt:
		v, err := strconv.ParseInt(s, 10, 8)
		return int8(v), err
	case pg.SmallInt:
		v, err := strconv.ParseInt(s, 10, 16)
		return int16(v), err
	case pg.Int, pg.Date, pg.Time:
		v, err := strconv.ParseInt(s, 10, 32)
		return int32(v), err
	case pg.BigInt:
		return strconv.ParseInt(s, 10, 64)
	case pg.Float:
		v, err := strconv.ParseInt(s, 10, 32)
		return math.Float32frombits(uint32(v)), err
	case pg.Double:
		v, err := strconv.ParseInt(s, 10, 64)
		return math.Float64frombits(uint64(v)), err
	case pg.Decimal:
		u, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("bad DECIMAL %q", s)
		}
		d, _ := pg.DecimalOf(u)
		return d, nil
	case pg.Char, pg.Varchar:
		return s, nil
	case pg.Bytes:
		return hex.DecodeString(s)
	case pg.Timestamp:
		ms, ns, _ := strings.Cut(s, ",")
		m, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(ns, 10, 32)
		return pg.TimestampValue{Millis: m, NanoOfMilli: int32(n)}, err
	}
	return nil, fmt.Errorf("no key parser for %s", t)
}

// canonical is a value's canonical text (see the package comment).
func canonical(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64:
		return fmt.Sprint(x)
	case float32:
		return strconv.FormatInt(int64(int32(math.Float32bits(x))), 10)
	case float64:
		return strconv.FormatInt(int64(math.Float64bits(x)), 10)
	case pg.DecimalValue:
		return x.Big().String()
	case string:
		return x
	case []byte:
		return hex.EncodeToString(x)
	case pg.TimestampValue:
		return fmt.Sprintf("%d,%d", x.Millis, x.NanoOfMilli)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonical(e)
		}
		return out
	}
	return fmt.Sprintf("unknown %T", v)
}
