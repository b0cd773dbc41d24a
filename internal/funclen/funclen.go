// Package funclen finds functions longer than a limit in a Go source tree.
//
// It backs a test (funclen_test.go) that keeps loch's functions short: a
// function over [Limit] lines fails the test unless it is on the allow-list
// (allow.txt), and the allow-list may only shrink. A function is measured
// from its `func` keyword to its closing brace, doc comment excluded, so the
// figure matches what an editor shows.
package funclen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Limit is the longest a function may be, in lines.
const Limit = 80

// Func is one function over the limit.
type Func struct {
	File  string // slash-separated, relative to the root
	Name  string // Recv.Name for methods, Name for functions
	Lines int
}

// Key names the function on the allow-list: "file Name".
func (f Func) Key() string { return f.File + " " + f.Name }

// Long returns every function in the non-test Go files under root that is
// longer than limit lines, sorted by file and name. Hidden folders,
// testdata and node_modules are skipped.
func Long(root string, limit int) ([]Func, error) {
	var out []Func
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		found, err := longIn(p, filepath.ToSlash(rel), limit)
		out = append(out, found...)
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, err
}

func longIn(path, rel string, limit int) ([]Func, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("funclen: %w", err)
	}
	var out []Func
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Type.Func).Line + 1
		if n > limit {
			out = append(out, Func{File: rel, Name: funcName(fd), Lines: n})
		}
	}
	return out, nil
}

// funcName is Name, or Recv.Name for a method (generic receivers without
// their type parameters).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
