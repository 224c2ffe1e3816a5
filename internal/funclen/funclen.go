// Package funclen measures the production functions of a Go module, for
// the test that holds them to a length rule (none over 100 lines, at most 5
// over 80). A function's length runs from its func keyword to its
// closing brace; its doc comment does not count.
package funclen

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Func is one function or method declaration.
type Func struct {
	Pos   string // file:line of its func keyword, the file relative to the root scanned
	Name  string // the function's name, or Type.Name for a method
	Lines int
}

func (f Func) String() string { return fmt.Sprintf("%s %s (%d lines)", f.Pos, f.Name, f.Lines) }

// Scan returns the functions with a body declared in the non-test .go files
// under root, longest first. It skips what the go tool leaves out of the
// module's packages (directories named testdata or starting with "." or "_",
// vendor) and nested modules.
func Scan(root string) ([]Func, error) {
	fset := token.NewFileSet()
	var funcs []Func
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		funcs = append(funcs, declared(fset, file, filepath.ToSlash(rel))...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(funcs, func(a, b Func) int { return cmp.Compare(b.Lines, a.Lines) })
	return funcs, nil
}

// skipDir reports whether the directory at path holds no package of the
// module being scanned.
func skipDir(path, name string) bool {
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// declared lists the functions with a body declared in file, named rel.
func declared(fset *token.FileSet, file *ast.File, rel string) []Func {
	var funcs []Func
	for _, decl := range file.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		funcs = append(funcs, Func{
			Pos:   fmt.Sprintf("%s:%d", rel, start.Line),
			Name:  funcName(fd),
			Lines: end.Line - start.Line + 1,
		})
	}
	return funcs
}

// funcName is fd's name, after its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // a generic type: List[E]
		t = x.X
	case *ast.IndexListExpr: // Map[K, V]
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// Rule bounds the length of functions: at most MaxOverHard of them may be
// longer than Hard lines, and at most MaxOverSoft longer than Soft.
type Rule struct {
	Hard, MaxOverHard int
	Soft, MaxOverSoft int
}

// Check returns an error naming the functions that break r, nil when none
// does.
func (r Rule) Check(funcs []Func) error {
	var problems []string
	if over := Over(funcs, r.Hard); len(over) > r.MaxOverHard {
		problems = append(problems, fmt.Sprintf("%d functions over %d lines (at most %d allowed):\n\t%s",
			len(over), r.Hard, r.MaxOverHard, joinFuncs(over)))
	}
	if over := Over(funcs, r.Soft); len(over) > r.MaxOverSoft {
		problems = append(problems, fmt.Sprintf("%d functions over %d lines (at most %d allowed):\n\t%s",
			len(over), r.Soft, r.MaxOverSoft, joinFuncs(over)))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("funclen: %s", strings.Join(problems, "\n"))
}

// Over returns the functions of funcs longer than lines.
func Over(funcs []Func, lines int) []Func {
	var over []Func
	for _, f := range funcs {
		if f.Lines > lines {
			over = append(over, f)
		}
	}
	return over
}

func joinFuncs(funcs []Func) string {
	s := make([]string, len(funcs))
	for i, f := range funcs {
		s[i] = f.String()
	}
	return strings.Join(s, "\n\t")
}
