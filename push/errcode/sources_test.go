package errcode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// textsElsewhere are the Chinese texts the module may write outside the
// table because they are no error: file and enclosing function.
// push/notifytext, the table of notification texts, is not read.
var textsElsewhere = map[[2]string]string{
	{"api/tasks.go", "handleCancelMessage"}: "the standard's success message",
	{"api/clouddata.go", "planImpacts"}:     "the standard's cleanup preview texts",
	{"api/instant.go", "readInstantCall"}:   "a log line",
}

// errorTypes match the names of the types whose Message is an error's:
// the api's Error, the scheduler's InstantError, the loop's Failure and
// RoundError, the builders' ErrorArgs, the store's OperationError and
// CloudGap, the client-state rejection.
var errorTypes = regexp.MustCompile(`(?i)error|failure|rejection|gap`)

// codeShape is a quoted string that looks like an error code.
var codeShape = regexp.MustCompile(`^"[A-Z][A-Z0-9]*(_[A-Z0-9]+)+"$`)

// TestNoErrorTextOutsideTheTable reads every non-test Go source of the
// module: outside this package no string literal spells out a code of the
// table, none is the Message or the code of an error type's composite
// literal, and no Chinese text is
// written except the few that are no error.
func TestNoErrorTextOutsideTheTable(t *testing.T) {
	codes := map[string]bool{}
	for _, m := range Table() {
		codes[m.Code()] = true
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "push/errcode" || rel == "push/notifytext" || rel != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, decl := range file.Decls {
			function := ""
			if fn, ok := decl.(*ast.FuncDecl); ok {
				function = fn.Name.Name
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if !errorTypes.MatchString(typeName(n.Type)) {
						return true
					}
					for _, el := range n.Elts {
						value := el
						if kv, ok := el.(*ast.KeyValueExpr); ok {
							value = kv.Value
							if key, ok := kv.Key.(*ast.Ident); ok && key.Name == "Message" && hasStringLiteral(kv.Value) {
								t.Errorf("%s: a Message written outside the error table", fset.Position(kv.Pos()))
							}
						}
						if l, ok := value.(*ast.BasicLit); ok && l.Kind == token.STRING && codeShape.MatchString(l.Value) {
							t.Errorf("%s: code %s of an error made outside the error table", fset.Position(l.Pos()), l.Value)
						}
					}
				case *ast.BasicLit:
					if n.Kind != token.STRING {
						return true
					}
					s, err := strconv.Unquote(n.Value)
					if err != nil {
						return true
					}
					if codes[s] {
						t.Errorf("%s: code %s spelled out; use its errcode value", fset.Position(n.Pos()), s)
					}
					if _, ok := textsElsewhere[[2]string{rel, function}]; hasHan(s) && !ok {
						t.Errorf("%s: Chinese text %q outside the error table", fset.Position(n.Pos()), s)
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 200 {
		t.Fatalf("read only %d files; the walk is broken", files)
	}
}

// typeName is the name a composite literal's type ends with.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}

func hasStringLiteral(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			found = true
		}
		return !found
	})
	return found
}
