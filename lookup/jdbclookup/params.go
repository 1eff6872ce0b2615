package jdbclookup

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/lookup/pg"
)

// Params are the kind's params (docs/abi.md, `jdbc_lookup`): what Flink's
// JdbcRowDataLookupFunction is built with, without the URL and credentials, which arrive
// through ferry_operator_connect.
type Params struct {
	// Table is the connector's 'table-name', written into the SQL verbatim.
	Table string `json:"table"`
	// Keys are the lookup keys in Flink's order: the dim columns' names and Flink types.
	// inputs[0].fields are the same columns as they cross the boundary (Wire).
	Keys []Column `json:"keys"`
	// Fields are the projected columns, in order, with their Flink types.
	Fields []Column `json:"fields"`
	// MaxRetries is lookup.max-retries; absent: Flink's default 3.
	MaxRetries *int `json:"max_retries,omitempty"`
	// Cache is lookup.cache with its partial-cache options; absent: NONE.
	Cache *CacheParams `json:"cache,omitempty"`
	// MaxConns bounds the connection pool; 0: 4.
	MaxConns int32 `json:"max_conns,omitempty"`
	// QueryTimeoutMs is the deadline of one attempt of the batched statement; 0: none (Flink's).
	QueryTimeoutMs int64 `json:"query_timeout_ms,omitempty"`
	// Zone is the TaskManager JVM's default zone: "UTC", a fixed offset ("+05:30") or an IANA
	// name; absent: UTC.
	Zone string `json:"zone,omitempty"`
}

// Column is a dim column: its name as Flink writes it into the SQL and its Flink SQL type.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// CacheParams are lookup.cache and the lookup.partial-cache.* options, durations in ms.
type CacheParams struct {
	// Mode is NONE or PARTIAL (FULL is ignored by the JDBC connector: the host sends NONE).
	Mode                string `json:"mode"`
	MaxRows             *int64 `json:"max_rows,omitempty"`
	ExpireAfterWriteMs  int64  `json:"expire_after_write_ms,omitempty"`
	ExpireAfterAccessMs int64  `json:"expire_after_access_ms,omitempty"`
	// CacheMissingKey defaults to true, as Flink's.
	CacheMissingKey *bool `json:"cache_missing_key,omitempty"`
}

// KeyWire is the type a key of Flink type t crosses the C ABI as (docs/abi.md, "Columns across
// the boundary"): CHAR as VARCHAR, BYTES as BINARY, TIME as INT (ms of the day), the rest as
// themselves; nullable. An ARRAY is not carried.
func KeyWire(t pg.Type) (engine.Type, error) {
	w, err := Wire(t)
	if t.Kind == pg.Timestamp {
		w.Precision = t.Precision
	}
	return w, err
}

// Wire is the type an output value of Flink type t crosses the C ABI as: KeyWire's, but
// TIMESTAMP(p) as TIMESTAMP(6) whatever p (Flink's converter keeps the driver's microseconds
// whatever the declared precision).
func Wire(t pg.Type) (engine.Type, error) {
	w := engine.Type{Nullable: true}
	switch t.Kind {
	case pg.Boolean:
		w.ID = engine.Boolean
	case pg.TinyInt:
		w.ID = engine.TinyInt
	case pg.SmallInt:
		w.ID = engine.SmallInt
	case pg.Int, pg.Time:
		w.ID = engine.Int
	case pg.BigInt:
		w.ID = engine.BigInt
	case pg.Float:
		w.ID = engine.Float
	case pg.Double:
		w.ID = engine.Double
	case pg.Decimal:
		w.ID, w.Precision, w.Scale = engine.Decimal, t.Precision, t.Scale
	case pg.Char, pg.Varchar:
		w.ID = engine.Varchar
	case pg.Bytes:
		w.ID = engine.Binary
	case pg.Date:
		w.ID = engine.Date
	case pg.Timestamp:
		w.ID, w.Precision = engine.Timestamp, 6
	default:
		return engine.Type{}, fmt.Errorf("Ferry does not carry the Flink type %s across the native boundary", t)
	}
	return w, nil
}

// parse validates p against the spec's input and returns the lookup's columns, the output
// fields (ordinal, then the projected fields as they cross) and the pg.Config without its pool
// settings' defaults.
func (p *Params) parse(spec *engine.Spec) (cfg pg.Config, out []engine.Field, err error) {
	if len(spec.Inputs) != 1 {
		return cfg, nil, engine.SpecError("inputs", "%s has one input (the key rows), got %d", Kind, len(spec.Inputs))
	}
	if strings.TrimSpace(p.Table) == "" {
		return cfg, nil, engine.ParamError("table", "missing")
	}
	if len(p.Keys) == 0 {
		return cfg, nil, engine.ParamError("keys", "missing: at least one lookup key")
	}
	if len(p.Fields) == 0 {
		return cfg, nil, engine.ParamError("fields", "missing: at least one projected field")
	}
	in := &spec.Inputs[0]
	if len(in.Types) != len(p.Keys) {
		return cfg, nil, engine.SpecError("inputs[0].fields", "%d fields, want one per key (%d)", len(in.Types), len(p.Keys))
	}
	cfg.Table = p.Table
	for i, k := range p.Keys {
		c, _, err := column(fmt.Sprintf("keys[%d]", i), k)
		if err != nil {
			return cfg, nil, err
		}
		w, _ := KeyWire(c.Type)
		if got := in.Types[i]; !got.SameAs(w) {
			return cfg, nil, engine.SpecError(fmt.Sprintf("inputs[0].fields[%d].type", i), "%s, but key %s of type %s crosses as %s", got, k.Name, k.Type, w)
		}
		cfg.Keys = append(cfg.Keys, c)
	}
	out = append(out, engine.Field{Name: "ordinal", Type: engine.Type{ID: engine.Int}})
	for i, f := range p.Fields {
		c, w, err := column(fmt.Sprintf("fields[%d]", i), f)
		if err != nil {
			return cfg, nil, err
		}
		cfg.Fields = append(cfg.Fields, c)
		out = append(out, engine.Field{Name: f.Name, Type: w})
	}
	cfg.MaxRetries = 3
	if p.MaxRetries != nil {
		if *p.MaxRetries < 0 {
			return cfg, nil, engine.ParamError("max_retries", "The value of 'lookup.max-retries' option shouldn't be negative, but is %d.", *p.MaxRetries)
		}
		cfg.MaxRetries = *p.MaxRetries
	}
	if p.MaxConns < 0 {
		return cfg, nil, engine.ParamError("max_conns", "%d, want 0 (default 4) or more", p.MaxConns)
	}
	cfg.MaxConns = p.MaxConns
	if p.QueryTimeoutMs < 0 {
		return cfg, nil, engine.ParamError("query_timeout_ms", "%d, want 0 (none) or more", p.QueryTimeoutMs)
	}
	cfg.QueryTimeout = time.Duration(p.QueryTimeoutMs) * time.Millisecond
	if cfg.Zone, err = zone(p.Zone); err != nil {
		return cfg, nil, engine.ParamError("zone", "%v", err)
	}
	if cfg.Cache, err = p.Cache.cache(); err != nil {
		return cfg, nil, err
	}
	return cfg, out, nil
}

// column parses one dim column: its Flink type must be one the PostgreSQL dialect supports and
// Ferry carries.
func column(field string, c Column) (pg.Column, engine.Type, error) {
	if strings.TrimSpace(c.Name) == "" {
		return pg.Column{}, engine.Type{}, engine.ParamError(field+".name", "missing")
	}
	t, err := pg.ParseType(c.Type)
	if err != nil {
		return pg.Column{}, engine.Type{}, engine.ParamError(field+".type", "column %s: %v", c.Name, err)
	}
	w, err := Wire(t)
	if err != nil {
		return pg.Column{}, engine.Type{}, fmt.Errorf("%w: spec: params.%s.type: column %s: %v", engine.ErrUnsupported, field, c.Name, err)
	}
	return pg.Column{Name: c.Name, Type: t}, w, nil
}

// cache builds the partial cache; nil for NONE.
func (c *CacheParams) cache() (*pg.Cache, error) {
	if c == nil || strings.EqualFold(c.Mode, "NONE") {
		return nil, nil
	}
	if !strings.EqualFold(c.Mode, "PARTIAL") {
		return nil, engine.ParamError("cache.mode", "%q, want NONE or PARTIAL", c.Mode)
	}
	if c.ExpireAfterWriteMs < 0 || c.ExpireAfterAccessMs < 0 {
		return nil, engine.ParamError("cache", "expire_after_write_ms and expire_after_access_ms must not be negative")
	}
	o := pg.CacheOptions{MaxRows: -1, ExpireAfterWrite: time.Duration(c.ExpireAfterWriteMs) * time.Millisecond,
		ExpireAfterAccess: time.Duration(c.ExpireAfterAccessMs) * time.Millisecond, CacheMissingKey: true}
	if c.MaxRows != nil {
		if *c.MaxRows < 0 {
			return nil, engine.ParamError("cache.max_rows", "%d, want 0 or more", *c.MaxRows)
		}
		o.MaxRows = *c.MaxRows
	}
	if c.CacheMissingKey != nil {
		o.CacheMissingKey = *c.CacheMissingKey
	}
	cache, err := pg.NewCache(o, nil)
	if err != nil {
		return nil, engine.ParamError("cache", "%v", err)
	}
	return cache, nil
}

// zone parses the JVM's zone ID: "" / "UTC" / "Z" / "GMT" (UTC), a java.time offset ID such as
// "+05:30" or "-08:00" (optionally after "UTC" or "GMT"), or an IANA name.
func zone(id string) (*time.Location, error) {
	s := strings.TrimSpace(id)
	for _, p := range []string{"UTC", "GMT", "UT"} {
		if strings.HasPrefix(s, p) && (len(s) == len(p) || s[len(p)] == '+' || s[len(p)] == '-') {
			s = s[len(p):]
			break
		}
	}
	if s == "" || s == "Z" {
		return time.UTC, nil
	}
	if s[0] == '+' || s[0] == '-' {
		parts := strings.Split(s[1:], ":")
		secs := 0
		for i, part := range parts {
			n, err := strconv.Atoi(part)
			if err != nil || i > 2 || n < 0 || n > 59 || (i == 0 && n > 18) {
				return nil, fmt.Errorf("zone %q: bad offset", id)
			}
			secs += n * []int{3600, 60, 1}[i]
		}
		if s[0] == '-' {
			secs = -secs
		}
		return time.FixedZone(id, secs), nil
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, fmt.Errorf("zone %q: %v", id, err)
	}
	return loc, nil
}
