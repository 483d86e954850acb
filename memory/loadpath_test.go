package memory

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// loadStep is one row of ARCHITECTURE.md's load-path table.
type loadStep struct {
	n         int
	typ, name string // "engine", "assemble"; typ is the package for a function
	file      string // from the repository's root
	from      int    // the step that calls it, 0 for the first
	when      bool   // only when the first read fell short
	decl      *ast.FuncDecl
	iface     bool // a method of an interface (the store contract)
}

// TestLoadPathDoc checks ARCHITECTURE.md's load path against the code:
// every step is declared in the file named, is called by the step named
// as its caller, the path has at most 20 steps, its usual steps enter each
// file once, and no step in package memory calls a function handed the
// session id or the session's record (or the store) that the table does
// not list.
func TestLoadPathDoc(t *testing.T) {
	doc, err := os.ReadFile("../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i, j := strings.Index(text, "<!-- load-path -->"), strings.Index(text, "<!-- /load-path -->")
	if i < 0 || j < i {
		t.Fatal("ARCHITECTURE.md: no load-path table")
	}
	row := regexp.MustCompile("^\\| (\\d+) \\| `(\\w+)\\.(\\w+)`( \\*when\\*[^|]*)? \\| ([\\w/.]+) \\| ?(\\d*) ?\\|$")
	var steps []*loadStep
	for _, line := range strings.Split(text[i:j], "\n") {
		m := row.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		s := &loadStep{typ: m[2], name: m[3], when: m[4] != "", file: m[5]}
		s.n = atoi(t, m[1])
		if m[6] != "" {
			s.from = atoi(t, m[6])
		}
		if s.n != len(steps)+1 || s.from >= s.n {
			t.Fatalf("step %d: numbered out of order or called by a later step", s.n)
		}
		steps = append(steps, s)
	}
	if len(steps) == 0 || len(steps) > 20 {
		t.Fatalf("load path: %d steps, want 1..20", len(steps))
	}

	// Every step is declared where the table says.
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	parse := func(path string) *ast.File {
		if f, ok := parsed[path]; ok {
			return f
		}
		f, err := parser.ParseFile(fset, filepath.Join("..", path), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed[path] = f
		return f
	}
	for _, s := range steps {
		f := parse(s.file)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.Name != s.name {
					continue
				}
				if (d.Recv != nil && recvType(d) == s.typ) || (d.Recv == nil && f.Name.Name == s.typ) {
					s.decl = d
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || ts.Name.Name != s.typ {
						continue
					}
					if it, ok := ts.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							for _, n := range m.Names {
								s.iface = s.iface || n.Name == s.name
							}
						}
					}
				}
			}
		}
		if s.decl == nil && !s.iface {
			t.Errorf("step %d: %s.%s is not declared in %s", s.n, s.typ, s.name, s.file)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Each step is called by the step named as its caller.
	for _, s := range steps[1:] {
		caller := steps[s.from-1]
		if caller.decl == nil || !calls(caller.decl, s.name) {
			t.Errorf("step %d: %s.%s does not call %s", s.n, caller.typ, caller.name, s.name)
		}
	}

	// The usual steps enter each file once.
	entered := map[string]int{}
	for _, s := range steps[1:] {
		if !s.when && s.file != steps[s.from-1].file {
			entered[s.file]++
		}
	}
	for file, n := range entered {
		if n > 1 {
			t.Errorf("the load path enters %s %d times", file, n)
		}
	}

	// No unlisted step: in package memory, a call from a step to a
	// function handed the session id or the session's record, or to the
	// store, is a row of the table called from that step.
	follows := sessionFunctions(t)
	for _, s := range steps {
		if s.decl == nil || !strings.HasPrefix(s.file, "memory/") || strings.Count(s.file, "/") != 1 {
			continue
		}
		listed := map[string]bool{}
		for _, c := range steps {
			if c.from == s.n {
				listed[c.name] = true
			}
		}
		ast.Inspect(s.decl.Body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false // runs elsewhere (the fold's goroutine) or later
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name, onStore := callee(call)
			if (follows[name][len(call.Args)] || onStore) && !listed[name] && !chunkedOnly[name] {
				t.Errorf("step %d (%s.%s) calls %s, which the load-path table does not list", s.n, s.typ, s.name, name)
			}
			return true
		})
	}
}

// chunkedOnly are the record's steps of a chunked load, named in the text
// beside the table rather than in it (the table follows a parity load),
// and those of a fold asked for without waiting.
var chunkedOnly = map[string]bool{"knowsLocked": true, "trackLocked": true, "coolingLocked": true}

// sessionFunctions names package memory's functions that are handed a
// session id or a session's record (slot, foldRun), with their numbers of
// parameters (calls are matched by name and arity).
func sessionFunctions(t *testing.T) map[string]map[int]bool {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, de := range entries {
		if name := de.Name(); strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	out := map[string]map[int]bool{}
	add := func(fd *ast.FuncDecl) {
		n := 0
		for _, p := range fd.Type.Params.List {
			n += max(len(p.Names), 1)
		}
		if out[fd.Name.Name] == nil {
			out[fd.Name.Name] = map[int]bool{}
		}
		out[fd.Name.Name][n] = true
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if r := recvType(fd); r == "slot" || r == "foldRun" {
				add(fd)
			}
			for _, p := range fd.Type.Params.List {
				for _, n := range p.Names {
					if n.Name == "sessionID" {
						add(fd)
					}
				}
				if st, ok := p.Type.(*ast.StarExpr); ok {
					if id, ok := st.X.(*ast.Ident); ok && (id.Name == "slot" || id.Name == "foldRun") {
						add(fd)
					}
				}
			}
		}
	}
	return out
}

func recvType(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return ""
	}
	typ := d.Recv.List[0].Type
	if st, ok := typ.(*ast.StarExpr); ok {
		typ = st.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// callee is the name a call calls, and whether it calls the store
// (x.store.Name).
func callee(call *ast.CallExpr) (name string, onStore bool) {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name, false
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.SelectorExpr); ok && x.Sel.Name == "store" {
			onStore = true
		}
		return fn.Sel.Name, onStore
	}
	return "", false
}

func calls(d *ast.FuncDecl, name string) bool {
	found := false
	ast.Inspect(d.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if got, _ := callee(call); got == name {
				found = true
			}
		}
		return !found
	})
	return found
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
