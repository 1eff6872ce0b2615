//go:build ferrytest

package main

import (
	"strings"
	"testing"
	"unsafe"
)

// jdbcLookupSpec is a jdbc_lookup spec: one INT key, one STRING field.
const jdbcLookupSpec = `{"kind":"jdbc_lookup","name":"LookupJoin(table=[dim])","inputs":[{"fields":[{"name":"id","type":"INT"}],"keys":[]}],"max_parallelism":1,
	"params":{"table":"dim","keys":[{"name":"id","type":"INT"}],"fields":[{"name":"v","type":"STRING"}],"max_retries":0}}`

// connect calls ferry_operator_connect; nil strings are passed as NULL.
func connect(t *testing.T, h cHandle, dsn, user, password *string) result {
	t.Helper()
	arg := func(s *string) *cChar {
		if s == nil {
			return nil
		}
		return cString(*s)
	}
	d, u, p := arg(dsn), arg(user), arg(password)
	defer func() {
		for _, c := range []*cChar{d, u, p} {
			if c != nil {
				cFree(unsafe.Pointer(c))
			}
		}
	}()
	var e cError
	return finish(t, "ferry_operator_connect", int32(ferry_operator_connect(h, d, u, p, &e)), &e)
}

// TestConnect: ferry_operator_connect through the C ABI (lookup/jdbclookup tests it against a
// real server): a server that is not there is FERRY_EEXTERNAL without the password in the
// message, and the operator stays usable; a NULL dsn and a bad handle are FERRY_EINVAL; a kind
// without a connection is FERRY_EUNSUPPORTED.
func TestConnect(t *testing.T) {
	h, r := open(t, jdbcLookupSpec, nil)
	if r.code != codeOK {
		t.Fatal(r)
	}
	defer func() {
		var e cError
		finish(t, "ferry_operator_close", int32(ferry_operator_close(h, &e)), &e)
	}()
	dsn, user, pw := "host=127.0.0.1 port=1 dbname=x sslmode=disable connect_timeout=5", "ferry", "pw-Zq81xx"
	for i := 0; i < 2; i++ { // twice: a failed connect leaves the operator usable
		r = connect(t, h, &dsn, &user, &pw)
		if r.code != codeExternal || !strings.Contains(r.msg, "ferry_operator_connect: LookupJoin(table=[dim]): external system failed: lookup pg: cannot connect to PostgreSQL") {
			t.Errorf("no server: %v", r)
		}
		if strings.Contains(r.msg, pw) {
			t.Errorf("the password leaks: %v", r)
		}
	}
	if r = connect(t, h, nil, &user, &pw); r.code != codeInval {
		t.Errorf("NULL dsn: %v", r)
	}
	if r = connect(t, 0, &dsn, nil, nil); r.code != codeInval {
		t.Errorf("handle 0: %v", r)
	}
	g, r := open(t, `{"kind":"group_aggregate","inputs":[{"fields":[{"name":"a","type":"BIGINT"}],"keys":[0]}],"max_parallelism":1,"params":{"aggs":[{"func":"COUNT","args":[]}]}}`, nil)
	if r.code != codeOK {
		t.Fatal(r)
	}
	defer func() {
		var e cError
		finish(t, "ferry_operator_close", int32(ferry_operator_close(g, &e)), &e)
	}()
	if r = connect(t, g, &dsn, &user, &pw); r.code != codeUnsupported || !strings.Contains(r.msg, "takes no connection") {
		t.Errorf("a kind without a connection: %v", r)
	}
}
