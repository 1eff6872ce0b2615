package agg

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The generic kernels (minMaxAcc, minMaxRetractAcc, sumAcc) are templates over a value type V
// and its value-ops O. Calling O's methods from generic code is an indirect call through the
// instantiation's dictionary, never inlined; the same code with O a concrete type inlines
// them. kernels_gen.go therefore holds, per kernel and value family, a type embedding the
// template instantiated with concrete ops and a copy of each per-row method marked
// //agg:specialize, with V and O replaced. This test regenerates it and fails when the file is
// stale; `go test ./agg -run TestGeneratedKernels -update` rewrites it.

var updateGenerated = flag.Bool("update", false, "rewrite kernels_gen.go from the kernel templates")

// specialization is one generated kernel: template tmpl with value type value and ops ops.
type specialization struct {
	tmpl, name string
	generic    bool   // over T number
	value, ops string // replacements for V and O
	family     string // for comments
}

var specializations = []specialization{
	{"minMaxAcc", "numMinMaxAcc", true, "T", "*numOps[T]", "numbers"},
	{"minMaxAcc", "decMinMaxAcc", false, "dec128", "*decOps", "DECIMAL"},
	{"minMaxAcc", "strMinMaxAcc", false, "strRef", "*strOps", "VARCHAR"},
	{"minMaxRetractAcc", "numMinMaxRetractAcc", true, "T", "*numOps[T]", "numbers"},
	{"minMaxRetractAcc", "decMinMaxRetractAcc", false, "dec128", "*decOps", "DECIMAL"},
	{"minMaxRetractAcc", "strMinMaxRetractAcc", false, "strRef", "*strOps", "VARCHAR"},
	{"sumAcc", "numSumAcc", true, "T", "*numOps[T]", "numbers"},
	{"sumAcc", "decSumAcc", false, "dec128", "*decOps", "DECIMAL"},
}

// typeExpr is the generated type as it is written in code.
func (s specialization) typeExpr() string {
	if s.generic {
		return s.name + "[T]"
	}
	return s.name
}

// templateMethod is one method marked //agg:specialize.
type templateMethod struct {
	tmpl, name, src string
}

// templateMethods returns the methods marked //agg:specialize, and the methods written by
// hand on specialized types (type.method), which are not generated.
func templateMethods() ([]templateMethod, map[string]bool, error) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(files)
	var out []templateMethod
	hand := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "kernels_gen.go" {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		file, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if ok {
				switch x := star.X.(type) {
				case *ast.Ident: // a non-generic specialization
					hand[x.Name+"."+fd.Name.Name] = true
				case *ast.IndexExpr: // a specialization over T number
					hand[x.X.(*ast.Ident).Name+"."+fd.Name.Name] = true
				}
			}
			if fd.Doc == nil || !slices.ContainsFunc(fd.Doc.List, func(c *ast.Comment) bool { return c.Text == "//agg:specialize" }) {
				continue
			}
			if !ok {
				return nil, nil, fmt.Errorf("%s: %s: receiver is not a pointer", f, fd.Name.Name)
			}
			idx, ok := star.X.(*ast.IndexListExpr)
			if !ok {
				return nil, nil, fmt.Errorf("%s: %s: receiver is not a generic type", f, fd.Name.Name)
			}
			out = append(out, templateMethod{
				tmpl: idx.X.(*ast.Ident).Name,
				name: fd.Name.Name,
				src:  string(src[fset.Position(fd.Pos()).Offset:fset.Position(fd.End()).Offset]),
			})
		}
	}
	return out, hand, nil
}

// specialize rewrites a template method for s: every TEMPLATE[V, O] of the family becomes its
// generated type, then V and O become s.value and s.ops. Comments and layout are kept.
func specialize(src string, s specialization) (string, error) {
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

func generateKernels() ([]byte, error) {
	methods, hand, err := templateMethods()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by TestGeneratedKernels (kernels_gen_test.go); DO NOT EDIT.\n\n")
	b.WriteString("package agg\n\nimport \"github.com/ferrystream/ferry/engine\"\n")
	for _, s := range specializations {
		tparams, n := "", 0
		if s.generic {
			tparams = "[T number]"
		}
		fmt.Fprintf(&b, "\n// %s is %s over %s with its per-row methods specialized.\n", s.name, s.tmpl, s.family)
		fmt.Fprintf(&b, "type %s%s struct {\n\t%s[%s, %s]\n}\n", s.name, tparams, s.tmpl, s.value, s.ops)
		for _, m := range methods {
			if m.tmpl != s.tmpl || hand[s.name+"."+m.name] {
				continue
			}
			code, err := specialize(m.src, s)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", m.tmpl, m.name, err)
			}
			fmt.Fprintf(&b, "\n// %s is %s.%s for %s.\n%s\n", m.name, s.tmpl, m.name, s.family, code)
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: no method marked //agg:specialize", s.tmpl)
		}
	}
	return format.Source(b.Bytes())
}

func TestGeneratedKernels(t *testing.T) {
	want, err := generateKernels()
	if err != nil {
		t.Fatal(err)
	}
	if *updateGenerated {
		if err := os.WriteFile("kernels_gen.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("kernels_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("kernels_gen.go is stale: go test ./agg -run TestGeneratedKernels -update")
	}
}
