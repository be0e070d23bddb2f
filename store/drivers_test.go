package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Domain code reaches a database through driver.Driver only: of store's
// sources, drivers.go alone imports a concrete driver (a package under
// store/driver that has an Open), and calls its Open in openDriver alone;
// nothing asserts the driver's type. Whatever differs between the
// databases is a driver method, not a branch here.
func TestOnlyOpenDriverNamesAConcreteDriver(t *testing.T) {
	fset := token.NewFileSet()
	concrete := map[string]bool{}
	dirs, err := os.ReadDir("driver")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && declaresOpen(t, fset, filepath.Join("driver", d.Name())) {
			concrete["amsg/store/driver/"+d.Name()] = true
		}
	}
	if !concrete["amsg/store/driver/sqlite"] || !concrete["amsg/store/driver/postgres"] {
		t.Fatalf("concrete drivers found: %v, want sqlite and postgres among them", concrete)
	}
	for _, f := range parseSources(t, fset, ".") {
		name := filepath.Base(fset.Position(f.Pos()).Filename)
		local := map[string]bool{} // names the file gives concrete drivers
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if !concrete[path] {
				continue
			}
			if name != "drivers.go" {
				t.Errorf("%s imports %s: only drivers.go names a concrete driver", name, path)
			}
			local[filepath.Base(path)] = true
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name == "openDriver" {
				continue
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					if pkg, ok := n.X.(*ast.Ident); ok && local[pkg.Name] && n.Sel.Name == "Open" {
						t.Errorf("%s: %s opens %s.Open outside openDriver", name, fn.Name.Name, pkg.Name)
					}
				case *ast.TypeAssertExpr:
					// s.db.(interface{ … }): a capability of one driver
					// asked for aside, where a driver method belongs.
					if field, ok := n.X.(*ast.SelectorExpr); ok && field.Sel.Name == "db" {
						t.Errorf("%s: %s asserts the driver's type: make it a driver.Driver method", name, fn.Name.Name)
					}
				}
				return true
			})
		}
	}
}

// declaresOpen reports whether the package in dir has a function Open.
func declaresOpen(t *testing.T, fset *token.FileSet, dir string) bool {
	return slices.ContainsFunc(parseSources(t, fset, dir), func(f *ast.File) bool {
		return slices.ContainsFunc(f.Decls, func(d ast.Decl) bool {
			fn, ok := d.(*ast.FuncDecl)
			return ok && fn.Recv == nil && fn.Name.Name == "Open"
		})
	})
}

// parseSources parses the non-test Go files of dir.
func parseSources(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}
