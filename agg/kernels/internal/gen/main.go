// Gen writes kernels_gen.go: the kernel templates specialized per value family.
//
// The generic kernels (minMaxAcc, minMaxRetractAcc, sumAcc) are templates over a value type V
// and its value-ops O. Calling O's methods from generic code is an indirect call through the
// instantiation's dictionary, never inlined; the same code with O a concrete type inlines them
// (docs/group-aggregate.md#kernels). kernels_gen.go therefore holds, per kernel and value
// family, a type embedding the template instantiated with concrete ops and a copy of each
// method marked //kernels:specialize, with V and O replaced. The marked methods of the parts a
// template embeds as Part[V, O] (groupValues, opsValues), and of theirs, are copied too, unless
// a type on the way defines a method of that name. A hand-written type marked
// //kernels:specialize that embeds a part with concrete value-ops (listAggAcc:
// opsValues[values.StrRef, *values.StrOps]) gets the part's marked methods the same way. A
// specialization that defines a method by hand (kernels_hand.go) keeps it, and that method is
// not generated.
//
// Run from the kernels package (go generate), or with the package directory as its argument:
//
//	go run ./internal/gen [-check] [DIR]
//
// -check compares DIR/kernels_gen.go with what the templates give now and fails when it is
// stale; gen_test.go does the same under go test.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// output is the generated file, in the kernels package's directory.
const output = "kernels_gen.go"

// marker marks a template method to specialize.
const marker = "//kernels:specialize"

// specialization is one generated kernel: template tmpl with value type value and ops ops.
type specialization struct {
	tmpl, name string
	generic    bool   // over T values.Number
	value, ops string // replacements for V and O
	family     string // for comments
}

var specializations = []specialization{
	{"minMaxAcc", "numMinMaxAcc", true, "T", "*values.NumOps[T]", "numbers"},
	{"minMaxAcc", "decMinMaxAcc", false, "values.Dec128", "*values.DecOps", "DECIMAL"},
	{"minMaxAcc", "strMinMaxAcc", false, "values.StrRef", "*values.StrOps", "VARCHAR"},
	{"minMaxRetractAcc", "numMinMaxRetractAcc", true, "T", "*values.NumOps[T]", "numbers"},
	{"minMaxRetractAcc", "decMinMaxRetractAcc", false, "values.Dec128", "*values.DecOps", "DECIMAL"},
	{"minMaxRetractAcc", "strMinMaxRetractAcc", false, "values.StrRef", "*values.StrOps", "VARCHAR"},
	{"sumAcc", "numSumAcc", true, "T", "*values.NumOps[T]", "numbers"},
	{"sumAcc", "decSumAcc", false, "values.Dec128", "*values.DecOps", "DECIMAL"},
}

// typeExpr is the generated type as it is written in code.
func (s specialization) typeExpr() string {
	if s.generic {
		return s.name + "[T]"
	}
	return s.name
}

// templateMethod is one method marked for specialization.
type templateMethod struct {
	tmpl, name, src string
}

// pkg is what the generator reads of the kernels package.
type pkg struct {
	methods  []templateMethod    // the methods marked for specialization, in source order
	hand     map[string]bool     // type.method of every method on a non-generic or T-generic type
	defined  map[string]bool     // type.method of every method on a type over [V, O]
	parts    map[string][]string // the types a type over [V, O] embeds as Part[V, O], in order
	declared []specialization    // the parts hand-written marked types embed with concrete ops
	imports  map[string]string   // the package's imports by name
}

// templates reads the package in dir.
func templates(dir string) (*pkg, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	p := &pkg{hand: map[string]bool{}, defined: map[string]bool{}, parts: map[string][]string{}, imports: map[string]string{}}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == output {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, im := range file.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			p.imports[filepath.Base(path)] = path
		}
		for _, d := range file.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
				for _, sp := range gd.Specs {
					ts := sp.(*ast.TypeSpec)
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					p.parts[ts.Name.Name] = embeddedParts(st)
					if marked(gd.Doc) || marked(ts.Doc) {
						d := declaredParts(ts.Name.Name, st)
						if ts.TypeParams != nil || len(d) == 0 {
							return nil, fmt.Errorf("%s: type %s: marked, but not a non-generic type embedding Part[V, O] with concrete types", f, ts.Name.Name)
						}
						p.declared = append(p.declared, d...)
					}
				}
				continue
			}
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if ok {
				switch x := star.X.(type) {
				case *ast.Ident: // a non-generic specialization
					p.hand[x.Name+"."+fd.Name.Name] = true
				case *ast.IndexExpr: // a specialization over T values.Number
					p.hand[x.X.(*ast.Ident).Name+"."+fd.Name.Name] = true
				case *ast.IndexListExpr: // a template or a part
					p.defined[x.X.(*ast.Ident).Name+"."+fd.Name.Name] = true
				}
			}
			if !marked(fd.Doc) {
				continue
			}
			if !ok {
				return nil, fmt.Errorf("%s: %s: receiver is not a pointer", f, fd.Name.Name)
			}
			idx, ok := star.X.(*ast.IndexListExpr)
			if !ok {
				return nil, fmt.Errorf("%s: %s: receiver is not a generic type", f, fd.Name.Name)
			}
			p.methods = append(p.methods, templateMethod{
				tmpl: idx.X.(*ast.Ident).Name,
				name: fd.Name.Name,
				src:  string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]),
			})
		}
	}
	return p, nil
}

// marked reports whether doc holds the marker.
func marked(doc *ast.CommentGroup) bool {
	return doc != nil && slices.ContainsFunc(doc.List, func(c *ast.Comment) bool { return c.Text == marker })
}

// declaredParts returns a specialization of each part the type name embeds as Part[X, Y].
func declaredParts(name string, st *ast.StructType) []specialization {
	var out []specialization
	for _, f := range st.Fields.List {
		if idx, ok := f.Type.(*ast.IndexListExpr); ok && len(f.Names) == 0 && len(idx.Indices) == 2 {
			if part, ok := idx.X.(*ast.Ident); ok {
				out = append(out, specialization{tmpl: part.Name, name: name, value: types.ExprString(idx.Indices[0]),
					ops: types.ExprString(idx.Indices[1]), family: name})
			}
		}
	}
	return out
}

// embeddedParts returns the types st embeds as Part[V, O], in order.
func embeddedParts(st *ast.StructType) []string {
	var out []string
	for _, f := range st.Fields.List {
		if len(f.Names) > 0 {
			continue
		}
		idx, ok := f.Type.(*ast.IndexListExpr)
		if !ok || len(idx.Indices) != 2 {
			continue
		}
		name, ok := idx.X.(*ast.Ident)
		v, okV := idx.Indices[0].(*ast.Ident)
		o, okO := idx.Indices[1].(*ast.Ident)
		if ok && okV && okO && v.Name == "V" && o.Name == "O" {
			out = append(out, name.Name)
		}
	}
	return out
}

// sources returns the types whose marked methods a specialization of tmpl gets, each with the
// methods it defines shadowing those of the types after it: tmpl, then the parts it embeds,
// depth first.
func (p *pkg) sources(tmpl string) []string {
	out := []string{tmpl}
	for _, part := range p.parts[tmpl] {
		out = append(out, p.sources(part)...)
	}
	return out
}

// specialize rewrites a method of the template or part self for s: self[V, O] and every
// TEMPLATE[V, O] of the family become their generated types, then V and O become s.value and
// s.ops. Comments and layout are kept.
func specialize(src string, s specialization, self string) (string, error) {
	type tok struct {
		off int
		tok token.Token
		lit string
	}
	var toks []tok
	var sc scanner.Scanner
	fset := token.NewFileSet()
	file := fset.AddFile("", -1, len(src))
	var errs scanner.ErrorList
	sc.Init(file, []byte(src), func(pos token.Position, msg string) { errs.Add(pos, msg) }, scanner.ScanComments)
	for {
		pos, t, lit := sc.Scan()
		if t == token.EOF {
			break
		}
		toks = append(toks, tok{file.Offset(pos), t, lit})
	}
	if errs.Len() > 0 {
		return "", errs.Err()
	}
	var b strings.Builder
	last := 0
	emit := func(from, to int, text string) {
		b.WriteString(src[last:from])
		b.WriteString(text)
		last = to
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.tok != token.IDENT {
			continue
		}
		if i+5 < len(toks) && toks[i+1].tok == token.LBRACK && toks[i+2].lit == "V" && toks[i+3].tok == token.COMMA &&
			toks[i+4].lit == "O" && toks[i+5].tok == token.RBRACK {
			if t.lit == self {
				emit(t.off, toks[i+5].off+1, s.typeExpr())
				i += 5
				continue
			}
			j := slices.IndexFunc(specializations, func(x specialization) bool {
				return x.tmpl == t.lit && x.value == s.value && x.ops == s.ops
			})
			if j < 0 {
				return "", fmt.Errorf("%s[V, O] has no %s specialization", t.lit, s.family)
			}
			emit(t.off, toks[i+5].off+1, specializations[j].typeExpr())
			i += 5
			continue
		}
		switch t.lit {
		case "V":
			emit(t.off, t.off+1, s.value)
		case "O":
			emit(t.off, t.off+1, s.ops)
		}
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

// writeMethods writes the marked methods of s.tmpl and of the parts it embeds, specialized for
// s: all but those a type before on the way defines and those s defines by hand.
func (p *pkg) writeMethods(body *bytes.Buffer, s specialization) error {
	n := 0
	sources := p.sources(s.tmpl)
	for k, src := range sources {
		for _, m := range p.methods {
			shadowed := slices.ContainsFunc(sources[:k], func(t string) bool { return p.defined[t+"."+m.name] })
			if m.tmpl != src || shadowed || p.hand[s.name+"."+m.name] {
				continue
			}
			code, err := specialize(m.src, s, src)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", m.tmpl, m.name, err)
			}
			fmt.Fprintf(body, "\n// %s is %s.%s for %s.\n%s\n", m.name, m.tmpl, m.name, s.family, code)
			n++
		}
	}
	if n == 0 {
		return fmt.Errorf("%s for %s: no method marked %s", s.tmpl, s.name, marker)
	}
	return nil
}

// generate returns kernels_gen.go for the kernels package in dir.
func generate(dir string) ([]byte, error) {
	p, err := templates(dir)
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	for _, s := range specializations {
		tparams := ""
		if s.generic {
			tparams = "[T values.Number]"
		}
		fmt.Fprintf(&body, "\n// %s is %s over %s with its per-row methods specialized.\n", s.name, s.tmpl, s.family)
		fmt.Fprintf(&body, "type %s%s struct {\n\t%s[%s, %s]\n}\n", s.name, tparams, s.tmpl, s.value, s.ops)
		if err := p.writeMethods(&body, s); err != nil {
			return nil, err
		}
	}
	for _, s := range p.declared { // the type is hand-written
		if err := p.writeMethods(&body, s); err != nil {
			return nil, err
		}
	}
	// The imports the specializations use: the package's own, where one qualifies a name.
	var used []string
	for name, path := range p.imports {
		if bytes.Contains(body.Bytes(), []byte(name+".")) {
			used = append(used, strconv.Quote(path))
		}
	}
	slices.Sort(used)
	var b bytes.Buffer
	b.WriteString("// Code generated by go run ./internal/gen; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "package kernels\n\nimport (\n\t%s\n)\n", strings.Join(used, "\n\t"))
	b.Write(body.Bytes())
	return format.Source(b.Bytes())
}

func main() {
	check := flag.Bool("check", false, "fail when "+output+" is stale instead of writing it")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	want, err := generate(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	path := filepath.Join(dir, output)
	if *check {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			fmt.Fprintf(os.Stderr, "gen: %s is stale: go generate %s\n", path, dir)
			os.Exit(1)
		}
		return
	}
	if err := os.WriteFile(path, want, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
