// Package jdbclookup is the operator kind `jdbc_lookup`: Flink's JDBC lookup against
// PostgreSQL (JdbcRowDataLookupFunction) for a whole batch of key rows at once, over the C ABI.
// Input 0 is a batch of key rows (one per probe row to look up, never NULL); the output is, for
// each key row in order, its dimension rows as PostgreSQL returned them, each prefixed with the
// key row's index in the batch (`ordinal`). The I/O, conversions, retries and partial cache are
// lookup/pg's; this package moves Arrow columns in and out. It is a function (engine.ShapeFunction):
// the connection string and credentials arrive with open as its secrets (Secrets), never in the
// spec.
package jdbclookup

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/lookup/pg"
)

// Kind is the operator kind's name in specs.
const Kind = "jdbc_lookup"

func init() { engine.RegisterFunction(Kind, Open) }

// Secrets are what a jdbc_lookup function takes beside its spec: they never reach a spec, a log
// or an error message.
type Secrets struct {
	// DSN is a libpq/pgx connection string without credentials, e.g. "host=h port=5432 dbname=d".
	DSN string `json:"dsn"`
	// User and Password: empty keeps the DSN's (or the driver's default).
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
}

// Operator is one jdbc_lookup function. It keeps no state; the rows of one Call stay until its
// last chunk went out.
type Operator struct {
	cfg    pg.Config
	out    []engine.Field
	types  []engine.Type // out's types
	chunk  int
	l      *pg.Lookuper // nil when opened without secrets (a spec check)
	secret string       // the password, cut out of every error

	// the output of the last Call: for key row pending[i].ord, its rows
	pending []hit
	next    int
	varB    []int
}

// hit is one output row: the key row's index and one of its dim rows.
type hit struct {
	ord int32
	row pg.Row
}

// Open opens a jdbc_lookup function: it validates the spec and, given secrets, opens the pool
// and has PostgreSQL describe Flink's per-key statement (pg.Open), so a server that is down,
// refused credentials, a missing table or column and an unmapped column type fail here. Without
// secrets (the host checks the spec) it connects nothing and every Call fails.
func Open(spec *engine.Spec, p *Params, secrets *Secrets) (engine.Function, error) {
	cfg, out, err := p.parse(spec)
	if err != nil {
		return nil, err
	}
	o := &Operator{cfg: cfg, out: out, chunk: spec.ChunkRows, varB: make([]int, len(out))}
	for _, f := range out {
		o.types = append(o.types, f.Type)
	}
	if secrets == nil {
		return o, nil
	}
	cfg.User, cfg.Password = secrets.User, secrets.Password
	o.secret = secrets.Password
	l, err := pg.Open(context.Background(), secrets.DSN, cfg)
	if err != nil {
		code := engine.ErrExternal
		if strings.Contains(err.Error(), "bad connection string") {
			code = engine.ErrInvalid
		}
		return nil, fmt.Errorf("%w: %s", code, o.redact(err))
	}
	o.l = l
	return o, nil
}

// redact is err's message without the password.
func (o *Operator) redact(err error) string {
	if o.secret == "" {
		return err.Error()
	}
	return strings.ReplaceAll(err.Error(), o.secret, "*****")
}

// Output implements engine.Function: ordinal INT NOT NULL, then the projected fields.
func (o *Operator) Output() []engine.Field { return o.out }

// Call implements engine.Function: it looks every key row of in up (one statement for the keys
// the cache does not hold) and writes the first chunk of the rows found.
func (o *Operator) Call(in *engine.Batch, out *engine.OutBatch) (bool, error) {
	if o.l == nil {
		return false, fmt.Errorf("%w: not connected: the function was opened without secrets (a spec check)", engine.ErrState)
	}
	keys := make([][]any, in.Len)
	for i := range keys {
		k := make([]any, len(in.Cols))
		for c := range in.Cols {
			col := &in.Cols[c]
			if col.IsNull(i) {
				return false, fmt.Errorf("%w: key row %d: key %s is NULL (Flink never looks up a NULL key)", engine.ErrData, i, o.cfg.Keys[c].Name)
			}
			k[c] = value(col, o.cfg.Keys[c].Type, i)
		}
		keys[i] = k
	}
	o.pending, o.next = o.pending[:0], 0
	if len(keys) > 0 {
		res, err := o.l.Lookup(context.Background(), keys)
		if err != nil {
			code := engine.ErrExternal
			var ce *pg.ConversionError
			if errors.As(err, &ce) {
				code = engine.ErrData // a value Flink's converter rejects (no retry)
			}
			return false, fmt.Errorf("%w: %s", code, o.redact(err))
		}
		for i, rows := range res {
			for _, r := range rows {
				o.pending = append(o.pending, hit{ord: int32(i), row: r})
			}
		}
	}
	return o.emit(out)
}

// Continue implements engine.Function.
func (o *Operator) Continue(out *engine.OutBatch) (bool, error) { return o.emit(out) }

// Close implements engine.Function: it closes the pool.
func (o *Operator) Close() {
	if o.l != nil {
		o.l.Close()
		o.l = nil
	}
	o.pending = nil
}

// emit writes the next chunk of pending rows (at most chunk rows) to out.
func (o *Operator) emit(out *engine.OutBatch) (bool, error) {
	rows := o.pending[o.next:]
	if len(rows) > o.chunk {
		rows = rows[:o.chunk]
	}
	for c := range o.varB {
		o.varB[c] = 0
	}
	for _, h := range rows {
		for c, v := range h.row {
			switch x := v.(type) {
			case string:
				o.varB[c+1] += len(x)
			case []byte:
				o.varB[c+1] += len(x)
			}
		}
	}
	if err := out.Init(o.types, len(rows), o.varB); err != nil {
		return false, err
	}
	ords := engine.OutValues[int32](&out.Cols[0])
	pos := make([]int32, len(o.types))
	for j, h := range rows {
		ords[j] = h.ord
		for c, v := range h.row {
			put(&out.Cols[c+1], j, v, &pos[c+1])
		}
	}
	for c := range o.types {
		if col := &out.Cols[c]; col.Offs != nil {
			col.Offs[len(rows)] = pos[c]
		}
	}
	// every row is +I: the kinds buffer is zeroed
	out.Finish()
	o.next += len(rows)
	if o.next >= len(o.pending) {
		o.pending, o.next = o.pending[:0], 0
		return false, nil
	}
	return true, nil
}

// value reads key row i of c (KeyWire's layout) as lookup/pg's Go value of Flink type t
// (types.go of lookup/pg).
func value(c *engine.Column, t pg.Type, i int) any {
	switch t.Kind {
	case pg.Boolean:
		return c.Bool(i)
	case pg.Char, pg.Varchar:
		return string(c.Bytes(i))
	case pg.Bytes:
		return append([]byte{}, c.Bytes(i)...)
	}
	b := c.Fixed(i)
	switch t.Kind {
	case pg.TinyInt:
		return int8(b[0])
	case pg.SmallInt:
		return int16(binary.LittleEndian.Uint16(b))
	case pg.Int, pg.Date, pg.Time:
		return int32(binary.LittleEndian.Uint32(b))
	case pg.BigInt:
		return int64(binary.LittleEndian.Uint64(b))
	case pg.Float:
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	case pg.Double:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case pg.Decimal:
		return pg.DecimalValue{Lo: binary.LittleEndian.Uint64(b), Hi: int64(binary.LittleEndian.Uint64(b[8:]))}
	case pg.Timestamp:
		v := pg.TimestampValue{Millis: int64(binary.LittleEndian.Uint64(b))}
		if len(b) == 12 { // TIMESTAMP(p > 3)
			v.NanoOfMilli = int32(binary.LittleEndian.Uint32(b[8:]))
		}
		return v
	}
	panic(fmt.Sprintf("jdbclookup: key type %s passed Wire", t)) // Wire admits only the types above
}

// put writes value v (lookup/pg's Go value, nil for NULL) into row j of c; *pos is the byte
// position of a VARCHAR/BINARY column.
func put(c *engine.OutColumn, j int, v any, pos *int32) {
	if c.Offs != nil {
		c.Offs[j] = *pos
	}
	if v == nil {
		c.SetNull(j)
		return
	}
	switch x := v.(type) {
	case bool:
		if x {
			c.Data[j>>3] |= 1 << (j & 7)
		}
	case string:
		*pos += int32(copy(c.Data[*pos:], x))
	case []byte:
		*pos += int32(copy(c.Data[*pos:], x))
	case int8:
		c.Data[j] = byte(x)
	case int16:
		binary.LittleEndian.PutUint16(c.Data[2*j:], uint16(x))
	case int32:
		binary.LittleEndian.PutUint32(c.Data[4*j:], uint32(x))
	case int64:
		binary.LittleEndian.PutUint64(c.Data[8*j:], uint64(x))
	case float32:
		binary.LittleEndian.PutUint32(c.Data[4*j:], math.Float32bits(x))
	case float64:
		binary.LittleEndian.PutUint64(c.Data[8*j:], math.Float64bits(x))
	case pg.DecimalValue:
		binary.LittleEndian.PutUint64(c.Data[16*j:], x.Lo)
		binary.LittleEndian.PutUint64(c.Data[16*j+8:], uint64(x.Hi))
	case pg.TimestampValue:
		binary.LittleEndian.PutUint64(c.Data[12*j:], uint64(x.Millis))
		binary.LittleEndian.PutUint32(c.Data[12*j+8:], uint32(x.NanoOfMilli))
	default:
		panic(fmt.Sprintf("jdbclookup: unexpected value %T", v)) // lookup/pg returns only the types above
	}
}
