//go:build ferrytest

package main

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
)

// jdbcLookupSpec is a jdbc_lookup spec: one INT key, one STRING field.
const jdbcLookupSpec = `{"kind":"jdbc_lookup","name":"LookupJoin(table=[dim])","inputs":[{"fields":[{"name":"id","type":"INT"}],"keys":[]}],"max_parallelism":1,
	"params":{"table":"dim","keys":[{"name":"id","type":"INT"}],"fields":[{"name":"v","type":"STRING"}],"max_retries":0}}`

// lookupKeySchema is the Arrow schema of jdbcLookupSpec's input batches.
var lookupKeySchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "$row_kind", Type: arrow.PrimitiveTypes.Int8},
}, nil)

// openWithSecrets calls ferry_operator_open with secretsJSON (nil: NULL) and no schemas; it
// closes what it opened.
func openWithSecrets(t *testing.T, specJSON string, secretsJSON *string) result {
	t.Helper()
	cs := cString(specJSON)
	defer cFree(unsafe.Pointer(cs))
	var sec *cChar
	if secretsJSON != nil {
		sec = cString(*secretsJSON)
		defer cFree(unsafe.Pointer(sec))
	}
	var h cHandle
	var e cError
	r := finish(t, "ferry_operator_open", int32(ferry_operator_open(cs, sec, 0, nil, &h, &e)), &e)
	if r.code == codeOK {
		finish(t, "ferry_operator_close", int32(ferry_operator_close(h, &e)), &e)
	}
	return r
}

// TestSecrets: the secrets of ferry_operator_open through the C ABI (lookup/jdbclookup tests a
// real server): a server that is not there is FERRY_EEXTERNAL without the password in the
// message; malformed secrets are FERRY_EINVAL without it either; a function opened without
// secrets (a spec check) connects nothing and its process fails; a keyed kind takes no secrets.
func TestSecrets(t *testing.T) {
	pw := "pw-Zq81xx"
	secrets := `{"dsn":"host=127.0.0.1 port=1 dbname=x sslmode=disable connect_timeout=5","user":"ferry","password":"` + pw + `"}`
	r := openWithSecrets(t, jdbcLookupSpec, &secrets)
	if r.code != codeExternal || !strings.Contains(r.msg, "ferry_operator_open: LookupJoin(table=[dim]): external system failed: lookup pg: cannot connect to PostgreSQL") {
		t.Errorf("no server: %v", r)
	}
	for _, bad := range []string{`{"dsn":"x","password":"` + pw + `","role":1}`, `{"password":` + pw + `}`, `[]`} {
		r = openWithSecrets(t, jdbcLookupSpec, &bad)
		if r.code != codeInval || !strings.Contains(r.msg, "secrets: not a JSON object of the fields jdbc_lookup takes") {
			t.Errorf("secrets %s: %v", bad, r)
		}
		if strings.Contains(r.msg, pw) {
			t.Errorf("the password leaks: %v", r)
		}
	}

	h, r := open(t, jdbcLookupSpec, nil)
	if r.code != codeOK {
		t.Fatal(r)
	}
	defer func() {
		var e cError
		finish(t, "ferry_operator_close", int32(ferry_operator_close(h, &e)), &e)
	}()
	rec := buildRecord(lookupKeySchema, [][]any{{int32(1)}}, []int8{0})
	defer rec.Release()
	in := exportInput(rec)
	out := newCArray()
	defer cFree(unsafe.Pointer(out))
	var more cInt32
	var e cError
	r = finish(t, "ferry_operator_process", int32(processOn(h, 0, 1, in.arr, 0, out, &more, &e)), &e)
	in.consumed(t, "process")
	wantCode(t, "process without secrets", r, codeState, "opened without secrets (a spec check)")

	group := `{"kind":"group_aggregate","inputs":[{"fields":[{"name":"a","type":"BIGINT"}],"keys":[0]}],"max_parallelism":1,"params":{"aggs":[{"func":"COUNT","args":[]}]}}`
	if r = openWithSecrets(t, group, &secrets); r.code != codeInval || !strings.Contains(r.msg, "a keyed operator takes no secrets") || strings.Contains(r.msg, pw) {
		t.Errorf("a keyed kind with secrets: %v", r)
	}
}
