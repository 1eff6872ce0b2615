// Package pgtest gives a test binary one real PostgreSQL server, started and removed by
// scripts/postgres.sh (Debian's postgresql server in a temporary data directory, on a free
// loopback port, user ferry with a password). Nothing is skipped: when the server cannot start,
// every test of the binary fails with the script's reason. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and get the server in a test with pgtest.Server(t).
package pgtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Instance is a running server. Its fields are the connection script's env lines.
type Instance struct {
	Host, Port, User, Password, Database string
	// Dir holds the cluster (data/, the socket, server.log); removed by Main at the end.
	Dir    string
	script string
}

var (
	server   *Instance
	startErr error
)

// Main starts the server, runs m and stops the server; it returns m's exit code (1 when the
// server could not start: the reason is printed and the tests do not run).
func Main(m *testing.M) int {
	server, startErr = Start()
	if startErr != nil {
		fmt.Fprintf(os.Stderr, "pgtest: PostgreSQL did not start (scripts/setup.sh test installs it): %v\n", startErr)
		fmt.Println("FAIL")
		return 1
	}
	code := m.Run()
	if err := server.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Server returns the binary's server; it fails t when Main was not used or the server did not
// start.
func Server(t testing.TB) *Instance {
	t.Helper()
	if server == nil {
		t.Fatalf("pgtest: no server (TestMain must call pgtest.Main): %v", startErr)
	}
	return server
}

// Start starts a fresh server with scripts/postgres.sh start.
func Start() (*Instance, error) {
	script, err := findScript()
	if err != nil {
		return nil, err
	}
	// the script's watchdog removes the server if this process dies before Stop
	out, err := run(script, "start")
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	in := &Instance{Host: env["PGHOST"], Port: env["PGPORT"], User: env["PGUSER"],
		Password: env["PGPASSWORD"], Database: env["PGDATABASE"], Dir: env["FERRY_PG_DIR"], script: script}
	if in.Port == "" || in.Dir == "" {
		return nil, fmt.Errorf("scripts/postgres.sh start printed no connection: %q", out)
	}
	return in, nil
}

// DSN is a pgx connection string for the server (password authentication over TCP).
func (in *Instance) DSN() string { return in.DSNWith(in.User, in.Password) }

// DSNWith is DSN with other credentials.
func (in *Instance) DSNWith(user, password string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(user, password),
		Host: in.Host + ":" + in.Port, Path: "/" + in.Database, RawQuery: "sslmode=disable"}
	return u.String()
}

// Halt stops the server at once (open connections break); Resume starts it again on the same port.
func (in *Instance) Halt() error {
	_, err := run(in.script, "halt", in.Dir)
	return err
}

// Resume starts a halted server again.
func (in *Instance) Resume() error {
	_, err := run(in.script, "resume", in.Dir)
	return err
}

// Stop stops the server and removes its directory.
func (in *Instance) Stop() error {
	_, err := run(in.script, "stop", in.Dir)
	return err
}

func run(script string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, args...)
	cmd.Env = append(os.Environ(), "FERRY_PG_OWNER="+strconv.Itoa(os.Getpid()))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/postgres.sh %s: %v: %s", strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// findScript walks up from the working directory (a package directory under go test) to the
// repository's scripts/postgres.sh.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "postgres.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("scripts/postgres.sh not found above the working directory")
		}
		dir = parent
	}
}

// Exec runs statements on the test binary's server as the test user; a failing one fails t.
func Exec(t testing.TB, sql ...string) {
	t.Helper()
	ctx, c := connect(t)
	defer c.Close(ctx)
	for _, s := range sql {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// BatchedStatements is how often the server ran lookup/pg's batched statement over table
// (pg_stat_statements).
func BatchedStatements(t testing.TB, table string) int64 {
	t.Helper()
	ctx, c := connect(t)
	defer c.Close(ctx)
	var n int64
	err := c.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::int8 FROM pg_stat_statements
		WHERE query LIKE 'SELECT __ferry_k.__ord%' AND query LIKE '% FROM ' || $1 || ' WHERE %'`, table).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// connect opens a connection to the test binary's server as the test user; the caller closes
// it. A failure fails t.
func connect(t testing.TB) (context.Context, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, Server(t).DSN())
	if err != nil {
		t.Fatal(err)
	}
	return ctx, c
}
