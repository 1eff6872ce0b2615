// Package pg does the I/O of Flink's JDBC lookup (flink-connector-jdbc-postgres 4.0.0-2.0) for a
// whole batch of probe keys at once: the distinct keys of a batch that the cache does not hold
// are fetched with ONE statement, and every key gets the rows Flink's per-key statement
// `SELECT <fields> FROM <table> WHERE k1 = ? AND k2 = ?` would return, converted to Flink values
// as the connector's PostgreSQL converter converts them. docs/operators/lookup-join.md has the
// contract, the type table and what row order is guaranteed.
package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Column is a column of the dimension table: its name as Flink writes it into the SQL
// (verbatim, unquoted: PostgreSQL folds it to lower case) and its declared Flink type.
type Column struct {
	Name string
	Type Type
}

// Row is one dimension row: the Flink values of Config.Fields, in order (types.go lists the Go
// type of each Flink type; NULL is nil).
type Row []any

// Config describes one lookup: what Flink's JdbcRowDataLookupFunction is built with.
type Config struct {
	// Table is the connector's 'table-name', written into the SQL verbatim (schema.table works).
	Table string
	// Keys are the lookup keys in Flink's order, with the dim columns' Flink types.
	Keys []Column
	// Fields are the projected columns Flink selects, in order.
	Fields []Column
	// MaxRetries is lookup.max-retries (Flink's default 3): a failed statement is tried again
	// up to MaxRetries times, after sleeping 0 s, 1 s, 2 s, … (1 s × the retry's index).
	MaxRetries int
	// QueryTimeout is the deadline of one attempt of the batched statement; 0: none (Flink's
	// JDBC lookup sets none).
	QueryTimeout time.Duration
	// MaxConns bounds the connection pool; 0: 4.
	MaxConns int32
	// Zone is the TaskManager JVM's default zone (nil: UTC): timestamptz values are its wall
	// clock, TIMESTAMP keys on timestamptz columns are read in it.
	Zone *time.Location
	// Cache is the partial cache (lookup.cache = PARTIAL); nil: none.
	Cache *Cache
	// Tracer observes the pool's statements (tests count round trips with it); nil: none.
	Tracer pgx.QueryTracer
	// Sleep waits between retries (nil: a timer that the context cancels); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// User and Password, when not empty, replace the connection string's; pgx leaves the
	// password out of its error messages.
	User, Password string
}

// Lookuper runs the batched lookups of one Config over a bounded pool. Safe for concurrent use.
type Lookuper struct {
	cfg    Config
	pool   *pgxpool.Pool
	sql    string // the batched statement
	perKey string // Flink's per-key statement, as described at Open
	params []keyParam
	oids   []uint32 // the result columns' PostgreSQL types, by Fields index
}

// Error is a lookup that failed after its retries, as Flink's "Execution of JDBC statement
// failed." (a RuntimeException whose cause is the PSQLException); Cause is the last attempt's
// error.
type Error struct {
	Attempts int
	Cause    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("Execution of JDBC statement failed. (after %d attempts): %v", e.Attempts, e.Cause)
}

func (e *Error) Unwrap() error { return e.Cause }

// Open connects a pool to dsn (a libpq/pgx connection string), describes Flink's per-key
// statement on the server and checks every column: a missing table or column, a key whose `=`
// PostgreSQL cannot resolve for pgjdbc's parameter type, and a column type that does not map to
// its declared Flink type are errors here (Flink reports the first two at the first lookup,
// after its retries, and the last as a ClassCastException while running).
func Open(ctx context.Context, dsn string, cfg Config) (*Lookuper, error) {
	if cfg.Table == "" || len(cfg.Keys) == 0 || len(cfg.Fields) == 0 {
		return nil, errors.New("lookup pg: a table, at least one key and at least one field are required")
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("The value of 'lookup.max-retries' option shouldn't be negative, but is %d.", cfg.MaxRetries)
	}
	if cfg.Zone == nil {
		cfg.Zone = time.UTC
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 4
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("lookup pg: bad connection string: %w", err)
	}
	if cfg.User != "" {
		pc.ConnConfig.User = cfg.User
	}
	if cfg.Password != "" {
		pc.ConnConfig.Password = cfg.Password
	}
	pc.MaxConns = cfg.MaxConns
	pc.MinConns = 0
	pc.ConnConfig.Tracer = cfg.Tracer
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("lookup pg: %w", err)
	}
	l := &Lookuper{cfg: cfg, pool: pool}
	if err := l.describe(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

// Close closes the pool.
func (l *Lookuper) Close() { l.pool.Close() }

// SQL is the batched statement.
func (l *Lookuper) SQL() string { return l.sql }

// PerKeySQL is Flink's per-key statement with PostgreSQL placeholders, typed as pgjdbc binds
// the keys (DATE/TIME/TIMESTAMP untyped).
func (l *Lookuper) PerKeySQL() string { return l.perKey }

// perKeySQL is AbstractDialect.getSelectFromStatement with `?` as $n: SELECT f1, f2 FROM t
// WHERE k1 = $1::T1 AND k2 = $2 (no cast where types[i] is "").
func perKeySQL(cfg Config, types []string) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	selectFrom(&b, cfg)
	for i, k := range cfg.Keys {
		if i > 0 {
			b.WriteString(" AND ")
		}
		fmt.Fprintf(&b, "%s = $%d", k.Name, i+1)
		if types[i] != "" {
			b.WriteString("::" + types[i])
		}
	}
	return b.String()
}

// selectFrom writes the body of the SELECT of cfg's fields from its table, up to the keys'
// conditions: "f1, f2 FROM t WHERE ".
func selectFrom(b *strings.Builder, cfg Config) {
	for i, f := range cfg.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name)
	}
	b.WriteString(" FROM " + cfg.Table + " WHERE ")
}

func (l *Lookuper) describe(ctx context.Context) error {
	cfg := l.cfg
	types := make([]string, len(cfg.Keys))
	for i, k := range cfg.Keys {
		t, err := pgjdbcType(k.Type)
		if err != nil {
			return fmt.Errorf("lookup pg: key %s: %w", k.Name, err)
		}
		types[i] = t
	}
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("lookup pg: cannot connect to PostgreSQL: %w", err)
	}
	defer conn.Release()
	q := perKeySQL(cfg, types)
	sd, err := conn.Conn().PgConn().Prepare(ctx, "", q, nil)
	if err != nil {
		return fmt.Errorf("lookup pg: table %s: %s: %w", cfg.Table, q, err)
	}
	if len(sd.Fields) != len(cfg.Fields) {
		return fmt.Errorf("lookup pg: %s returns %d columns, want %d", q, len(sd.Fields), len(cfg.Fields))
	}
	l.params = make([]keyParam, len(cfg.Keys))
	for i, k := range cfg.Keys {
		p := keyParam{name: k.Name, t: k.Type, sqlType: types[i], colOID: sd.ParamOIDs[i], zone: cfg.Zone}
		if p.sqlType == "" {
			if p.sqlType, err = temporalType(k.Name, k.Type, sd.ParamOIDs[i]); err != nil {
				return fmt.Errorf("lookup pg: %w", err)
			}
		}
		l.params[i] = p
	}
	l.oids = make([]uint32, len(cfg.Fields))
	for i, f := range cfg.Fields {
		l.oids[i] = sd.Fields[i].DataTypeOID
		if _, err := newColumn(f.Name, l.oids[i], f.Type, cfg.Zone); err != nil {
			return fmt.Errorf("lookup pg: %w", err)
		}
	}
	l.sql, l.perKey = batchSQL(cfg, l.params), q
	return nil
}

// batchSQL is the one statement per batch: Flink's per-key SELECT as a LATERAL subquery over the
// unnested key arrays, fenced by OFFSET 0 so that PostgreSQL runs it as a parameterised scan per
// key (each key's rows contiguous, in that scan's order); __ord re-associates the rows with the
// keys by position, never by value.
func batchSQL(cfg Config, params []keyParam) string {
	var b strings.Builder
	b.WriteString("SELECT __ferry_k.__ord, __ferry_t.* FROM unnest(")
	for i, p := range params {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d::%s[]", i+1, p.sqlType)
	}
	b.WriteString(") WITH ORDINALITY AS __ferry_k(")
	for i := range params {
		fmt.Fprintf(&b, "__k%d, ", i)
	}
	b.WriteString("__ord) CROSS JOIN LATERAL (SELECT ")
	selectFrom(&b, cfg)
	for i, k := range cfg.Keys {
		if i > 0 {
			b.WriteString(" AND ")
		}
		fmt.Fprintf(&b, "%s = __ferry_k.__k%d", k.Name, i)
	}
	b.WriteString(" OFFSET 0) AS __ferry_t")
	return b.String()
}

// Lookup returns, for each probe key (a tuple of Flink values in Keys order), the rows Flink's
// per-key statement returns for it. NULL keys are never looked up by Flink: a key with a nil
// value is an error, the caller drops such probe rows first. Keys are deduplicated by exact
// Flink value; the cache (if any) answers the keys it holds; the others are fetched with one
// statement, retried as Flink retries. Probe keys with equal values share their result rows,
// which callers must not modify.
func (l *Lookuper) Lookup(ctx context.Context, keys [][]any) ([][]Row, error) {
	out := make([][]Row, len(keys))
	index := make(map[string]int, len(keys)) // encoded key → distinct index
	var distinct [][]any
	var enc []string
	which := make([]int, len(keys))
	var buf []byte
	for i, k := range keys {
		if len(k) != len(l.params) {
			return nil, fmt.Errorf("lookup pg: probe key %d has %d values, want %d", i, len(k), len(l.params))
		}
		buf = buf[:0]
		for j, v := range k {
			if v == nil {
				return nil, fmt.Errorf("lookup pg: probe key %d: key %s is NULL (Flink never looks up a NULL key)", i, l.params[j].name)
			}
			if err := l.params[j].checkKey(v); err != nil {
				return nil, fmt.Errorf("lookup pg: probe key %d: %w", i, err)
			}
			buf = appendKey(buf, v)
		}
		d, ok := index[string(buf)]
		if !ok {
			d = len(distinct)
			index[string(buf)] = d
			distinct = append(distinct, k)
			enc = append(enc, string(buf))
		}
		which[i] = d
	}
	results := make([][]Row, len(distinct))
	var missKeys [][]any
	var missIdx []int
	for d := range distinct {
		if l.cfg.Cache != nil {
			if rows, ok := l.cfg.Cache.Get(enc[d]); ok {
				results[d] = rows
				continue
			}
		}
		missKeys = append(missKeys, distinct[d])
		missIdx = append(missIdx, d)
	}
	if len(missKeys) > 0 {
		fetched, err := l.fetch(ctx, missKeys)
		if err != nil {
			return nil, err
		}
		for m, d := range missIdx {
			results[d] = fetched[m]
			if l.cfg.Cache != nil {
				l.cfg.Cache.Put(enc[d], fetched[m])
			}
		}
	}
	for i, d := range which {
		out[i] = results[d]
	}
	return out, nil
}

// fetch runs the batched statement for distinct keys with Flink's retry rule: up to MaxRetries
// more attempts after a database error, sleeping 1 s × the retry's index before each; a value
// Flink's converter rejects fails at once unless pgjdbc would have raised it as SQLException.
func (l *Lookuper) fetch(ctx context.Context, keys [][]any) ([][]Row, error) {
	args := make([]any, len(l.params))
	for i := range l.params {
		a, err := l.params[i].values(keys, i)
		if err != nil {
			return nil, err
		}
		args[i] = a
	}
	for attempt := 0; ; attempt++ {
		rows, err := l.query(ctx, args, len(keys))
		if err == nil {
			return rows, nil
		}
		var ce *ConversionError
		if errors.As(err, &ce) && !ce.Retry {
			return nil, fmt.Errorf("lookup pg: %w", err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("lookup pg: %w", err)
		}
		if attempt >= l.cfg.MaxRetries {
			return nil, &Error{Attempts: attempt + 1, Cause: err}
		}
		if err := l.cfg.Sleep(ctx, time.Duration(attempt)*time.Second); err != nil {
			return nil, fmt.Errorf("lookup pg: %w", err)
		}
	}
}

// query runs one attempt: n keys, results bucketed by ordinal in arrival order.
func (l *Lookuper) query(ctx context.Context, args []any, n int) ([][]Row, error) {
	if l.cfg.QueryTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.cfg.QueryTimeout)
		defer cancel()
	}
	// fresh decoders per attempt: their scan targets are per query, and queries may overlap
	cols := make([]*column, len(l.cfg.Fields))
	dst := make([]any, len(cols)+1)
	var ord int64
	dst[0] = &ord
	for i, f := range l.cfg.Fields {
		c, err := newColumn(f.Name, l.oids[i], f.Type, l.cfg.Zone)
		if err != nil {
			return nil, &ConversionError{Column: f.Name, Msg: err.Error()}
		}
		cols[i], dst[i+1] = c, c.dst
	}
	rows, err := l.pool.Query(ctx, l.sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	if len(fds) != len(cols)+1 {
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("the batched statement returned %d columns, want %d", len(fds), len(cols)+1)
	}
	for i := range cols {
		if got := fds[i+1].DataTypeOID; got != l.oids[i] {
			// the table changed since Open
			return nil, fmt.Errorf("column %s is now of type %s (was %s)", l.cfg.Fields[i].Name, oidName(got), oidName(l.oids[i]))
		}
	}
	out := make([][]Row, n)
	for rows.Next() {
		if err := rows.Scan(dst...); err != nil {
			return nil, err
		}
		if ord < 1 || ord > int64(n) {
			return nil, fmt.Errorf("ordinal %d outside 1..%d", ord, n)
		}
		r := make(Row, len(cols))
		for i, c := range cols {
			v, err := c.get()
			if err != nil {
				return nil, err
			}
			r[i] = v
		}
		out[ord-1] = append(out[ord-1], r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
