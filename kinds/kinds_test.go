package kinds

import (
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/examples/kind/firstrow"
)

func init() { firstrow.Register() }

// TestABIDocumentsEveryParam holds docs/abi.md to the params structs, the contract of each kind's
// spec: every kind registered (the library's and the walkthrough's example) has a params table,
// the table's rows name exactly the struct's JSON fields, and every field of a nested struct
// (an AggCall, the exchange's options, a condition's node) is named in its row or its own row.
func TestABIDocumentsEveryParam(t *testing.T) {
	doc, err := os.ReadFile("../docs/abi.md")
	if err != nil {
		t.Fatal(err)
	}
	tables := paramTables(string(doc))
	var kinds []string
	for _, k := range engine.Kinds() {
		kinds = append(kinds, k.Name)
		if _, ok := tables[k.Name]; !ok {
			t.Errorf("docs/abi.md has no params table of kind %s", k.Name)
			continue
		}
		fields := jsonFields(k.Params)
		documented := topLevel(tables[k.Name])
		for _, f := range fields {
			if _, ok := documented[f.name]; !ok {
				t.Errorf("%s: params.%s is not in its table in docs/abi.md", k.Name, f.name)
				continue
			}
			for _, n := range f.nested {
				if !namedIn(tables, k.Name, f.name, n) {
					t.Errorf("%s: params.%s's field %s is not named in docs/abi.md", k.Name, f.name, n)
				}
			}
			delete(documented, f.name)
		}
		for name := range documented {
			t.Errorf("%s: docs/abi.md names params.%s, which %s does not have", k.Name, name, k.Params)
		}
	}
	for k := range tables {
		if !slices.Contains(kinds, k) {
			t.Errorf("docs/abi.md has a params table of %s, which is no registered kind", k)
		}
	}
}

// topLevel maps the top-level fields a table's rows name to the text of those rows.
func topLevel(rows []row) map[string]string {
	documented := map[string]string{}
	for _, r := range rows {
		for _, name := range r.names {
			top := strings.FieldsFunc(name, func(c rune) bool { return c == '[' || c == '.' })[0]
			documented[top] += " " + r.text
		}
	}
	return documented
}

// namedIn reports whether kind's table names field n of top-level field top: in a row of its
// own (top.n), in the text of top's rows, or, for a row that reads "as for `other`", in other's.
func namedIn(tables map[string][]row, kind, top, n string) bool {
	for _, r := range tables[kind] {
		for _, name := range r.names {
			if name == top+"."+n {
				return true
			}
		}
	}
	text := topLevel(tables[kind])[top]
	if mentions(text, n) {
		return true
	}
	for _, m := range asFor.FindAllStringSubmatch(text, -1) {
		if m[1] != kind && namedIn(tables, m[1], top, n) {
			return true
		}
	}
	return false
}

// asFor is a row's reference to another kind's table.
var asFor = regexp.MustCompile("as for `([a-z_]+)`")

// row is one row of a params table: the backticked names of its first column, and its text.
type row struct {
	names []string
	text  string
}

// paramTables reads the tables of the sections "### `kind` params" of docs/abi.md.
func paramTables(doc string) map[string][]row {
	tables := map[string][]row{}
	heading := regexp.MustCompile("^### `([a-z_]+)` params")
	name := regexp.MustCompile("`([a-z_0-9]+(?:\\[i\\])?(?:\\.[a-z_0-9]+)*)`")
	kind := ""
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") {
			kind = ""
			if m := heading.FindStringSubmatch(line); m != nil {
				kind = m[1]
				tables[kind] = nil
			}
			continue
		}
		cells := strings.Split(line, " | ")
		if kind == "" || !strings.HasPrefix(line, "| `") || len(cells) < 2 {
			continue
		}
		r := row{text: line}
		for _, m := range name.FindAllStringSubmatch(cells[0], -1) {
			r.names = append(r.names, strings.ReplaceAll(m[1], "[i]", ""))
		}
		tables[kind] = append(tables[kind], r)
	}
	return tables
}

// field is a JSON field of a params struct and the JSON fields of the struct it holds, if any;
// path is its name as include/spec-params.json lists it, sep what joins a nested field to it.
type field struct {
	name, path, sep string
	nested          []string
}

func jsonFields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" {
			continue
		}
		fd := field{name: name, path: name, sep: "."}
		inner := f.Type
		for inner.Kind() == reflect.Pointer || inner.Kind() == reflect.Slice {
			if inner.Kind() == reflect.Slice {
				fd.sep = "[]."
			}
			inner = inner.Elem()
		}
		if inner.Kind() == reflect.Struct {
			for j := range inner.NumField() {
				if n := jsonName(inner.Field(j)); n != "" {
					fd.nested = append(fd.nested, n)
				}
			}
		}
		out = append(out, fd)
	}
	return out
}

// jsonName is f's JSON name, "" when it has none (unexported, or tagged "-").
func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch tag {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return tag
}

// mentions reports whether text names field n, in quotes or backticks.
func mentions(text, n string) bool {
	return strings.Contains(text, `"`+n+`"`) || strings.Contains(text, "`"+n+"`") || strings.Contains(text, "."+n+"`")
}

// TestSpecParamsFile holds include/spec-params.json, the params fields of every kind as the JVM
// side's conformance test reads them, to the params structs; `go test ./kinds -update` writes it.
func TestSpecParamsFile(t *testing.T) {
	want := specParamsJSON()
	got, err := os.ReadFile("../include/spec-params.json")
	if *update {
		if err := os.WriteFile("../include/spec-params.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil || string(got) != string(want) {
		t.Fatalf("include/spec-params.json is not the params structs' fields (%v): run go test ./kinds -update", err)
	}
}

var update = flag.Bool("update", false, "write include/spec-params.json")

// specParamsJSON lists, per kind (sorted), the JSON paths of its params fields: "name" for a
// field, "name.inner" for a field of a struct it holds ("name[].inner" in a list), sorted.
func specParamsJSON() []byte {
	out := map[string][]string{}
	for _, k := range engine.Kinds() {
		var paths []string
		for _, f := range jsonFields(k.Params) {
			paths = append(paths, f.path)
			for _, n := range f.nested {
				paths = append(paths, f.path+f.sep+n)
			}
		}
		slices.Sort(paths)
		out[k.Name] = paths
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
