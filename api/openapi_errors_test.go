package api

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"amsg/push/errcode"
)

// errorCodeSource is the api package type-checked from its source, read
// for the error codes each function can answer with: the code and status
// of every message of the error table (push/errcode) it names, and of
// everything it refers to in the package, transitively. A message said
// Under another code counts as that code; codes made elsewhere (the agent
// loop's, carried as strings) are not seen.
type errorCodeSource struct {
	fset  *token.FileSet
	files []*ast.File
	info  *types.Info
	pkg   *types.Package
	// direct are the codes ("400 INVALID_PARAMETERS") an object makes
	// itself; refs the package's functions and variables it refers to.
	direct map[types.Object]map[string]bool
	refs   map[types.Object][]types.Object
	// messages are push/errcode's messages by their Go names.
	messages map[string]*errcode.Message
}

func loadErrorCodeSource(t *testing.T) *errorCodeSource {
	t.Helper()
	// Export data of the package's imports, from the build cache.
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exports := map[string]string{}
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	names, _ := filepath.Glob("*.go")
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})}
	pkg, err := conf.Check("amsg/api", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	src := &errorCodeSource{fset: fset, files: files, info: info, pkg: pkg,
		direct: map[types.Object]map[string]bool{}, refs: map[types.Object][]types.Object{}, messages: errcodeMessages(t)}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				src.scan(info.Defs[d.Name], d)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok {
						for _, name := range vs.Names {
							src.scan(info.Defs[name], vs)
						}
					}
				}
			}
		}
	}
	return src
}

// scan records what node, the declaration of obj, makes and refers to.
func (src *errorCodeSource) scan(obj types.Object, node ast.Node) {
	if obj == nil {
		return
	}
	codes := map[string]bool{}
	recoded := map[ast.Expr]bool{}
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if used := src.info.Uses[n]; used != nil && used.Pkg() == src.pkg && used != obj {
				if _, isFunc := used.(*types.Func); isFunc || used.Parent() == src.pkg.Scope() {
					src.refs[obj] = append(src.refs[obj], used)
				}
			}
		case *ast.CallExpr:
			// m.Under(code) and invalidUpdate(m) answer with another
			// code than m's.
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Under" {
				recoded[messageOf(sel.X)] = true
			}
			if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "invalidUpdate" && len(n.Args) > 0 {
				recoded[messageOf(n.Args[0])] = true
			}
		case *ast.SelectorExpr:
			if recoded[n] || obj.Name() == "decodeStateEntry" { // its codes are rejections inside a 200 answer
				return false
			}
			if v, ok := src.info.Uses[n.Sel].(*types.Var); ok && v.Pkg() != nil && v.Pkg().Path() == "amsg/push/errcode" {
				if m := src.messages[v.Name()]; m != nil && m.Status() != 0 {
					codes[fmt.Sprintf("%d %s", m.Status(), m.Code())] = true
				}
			}
		}
		return true
	})
	src.direct[obj] = codes
}

// messageOf is the message a chain such as errcode.X.With(a) starts from.
func messageOf(e ast.Expr) ast.Expr {
	for {
		call, ok := e.(*ast.CallExpr)
		if !ok {
			return e
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return e
		}
		e = sel.X
	}
}

// errcodeMessages maps the Go names of push/errcode's messages to them:
// its table.go declares them in the order errcode.Table lists them.
func errcodeMessages(t *testing.T) map[string]*errcode.Message {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "push", "errcode", "table.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var specs []*ast.ValueSpec
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
			for _, spec := range gd.Specs {
				specs = append(specs, spec.(*ast.ValueSpec))
			}
		}
	}
	table := errcode.Table()
	if len(specs) != len(table) {
		t.Fatalf("push/errcode/table.go declares %d messages, errcode.Table has %d", len(specs), len(table))
	}
	out := make(map[string]*errcode.Message, len(specs))
	for i, spec := range specs {
		// A define names its code: the check that source and table align.
		call := spec.Values[0].(*ast.CallExpr)
		if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "define" {
			if code, _ := strconv.Unquote(call.Args[0].(*ast.BasicLit).Value); code != table[i].Code() {
				t.Fatalf("push/errcode/table.go's %s defines %s, errcode.Table has %s there", spec.Names[0].Name, code, table[i].Code())
			}
		}
		out[spec.Names[0].Name] = table[i]
	}
	return out
}

// codes are the codes the objects named by roots can answer with.
func (src *errorCodeSource) codes(roots ...types.Object) map[string]bool {
	out := map[string]bool{}
	seen := map[types.Object]bool{}
	var visit func(types.Object)
	visit = func(o types.Object) {
		if seen[o] {
			return
		}
		seen[o] = true
		maps.Copy(out, src.direct[o])
		for _, r := range src.refs[o] {
			visit(r)
		}
	}
	for _, r := range roots {
		visit(r)
	}
	return out
}

// exprRefs are the package's objects expr refers to.
func (src *errorCodeSource) exprRefs(expr ast.Expr) []types.Object {
	var out []types.Object
	ast.Inspect(expr, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if used := src.info.Uses[id]; used != nil && used.Pkg() == src.pkg {
				out = append(out, used)
			}
		}
		return true
	})
	return out
}

// method is the Server method name.
func (src *errorCodeSource) method(name string) types.Object {
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(src.pkg.Scope().Lookup("Server").Type()), true, src.pkg, name)
	return obj
}

func (src *errorCodeSource) constString(e ast.Expr) string {
	if v := src.info.Types[e].Value; v != nil && v.Kind() == constant.String {
		return constant.StringVal(v)
	}
	return ""
}

// operationCodes are the codes each route of the route tables can answer
// with ("GET /api/v1/devices" → {"400 USER_ID_REQUIRED", …}): its
// handler's, its authorization's (the case of Server.authorize for its
// mode, or the operator token's), and those of the adapter around it.
func (src *errorCodeSource) operationCodes() map[string]map[string]bool {
	authCodes := src.authorizationCodes()
	admin := src.codes(src.method("serveAdmin"))
	ops := map[string]map[string]bool{}
	for _, f := range src.files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || len(lit.Elts) < 3 {
				return true
			}
			named, _ := src.info.Types[lit].Type.(*types.Named)
			if named == nil {
				return true
			}
			switch named.Obj().Name() {
			case "route":
				if src.constString(lit.Elts[1]) == "" {
					return true // a route built in a loop: the 405s of /instant and /continue
				}
				key := src.constString(lit.Elts[0]) + " /api/v1/" + src.constString(lit.Elts[1])
				codes := src.codes(src.exprRefs(lit.Elts[3])...)
				mode := src.info.Types[lit.Elts[2]].Value
				maps.Copy(codes, authCodes[mode.ExactString()])
				ops[key] = codes
			case "adminRoute":
				key := src.constString(lit.Elts[0]) + " " + src.constString(lit.Elts[1])
				codes := src.codes(src.exprRefs(lit.Elts[2])...)
				maps.Copy(codes, admin)
				ops[key] = codes
			}
			return true
		})
	}
	return ops
}

// authorizationCodes are the codes of each case of Server.authorize, by
// the authMode value the case names.
func (src *errorCodeSource) authorizationCodes() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, f := range src.files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "authorize" {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				clause, ok := n.(*ast.CaseClause)
				if !ok {
					return true
				}
				scratch := types.NewFunc(token.NoPos, src.pkg, "case", nil)
				src.scan(scratch, &ast.BlockStmt{List: clause.Body})
				for _, e := range clause.List {
					out[src.info.Types[e].Value.ExactString()] = src.codes(scratch)
				}
				return false
			})
		}
	}
	return out
}

// documentedCodes are an x-error-codes map as a set of "status CODE".
func documentedCodes(v any) map[string]bool {
	out := map[string]bool{}
	byStatus, _ := v.(map[string]any)
	for status, codes := range byStatus {
		for _, c := range codes.([]any) {
			out[status+" "+c.(string)] = true
		}
	}
	return out
}

// TestOpenAPIErrorCodesOfEachOperation holds each operation's
// x-error-codes to the codes its handler can answer with, as far as they
// can be read from the source (constant codes in this package), and the
// document's x-amsg-common-error-codes to the middleware's. Every status
// listed has a response, and every code of the error table is listed
// somewhere.
func TestOpenAPIErrorCodesOfEachOperation(t *testing.T) {
	src := loadErrorCodeSource(t)
	doc := servedDocument(t, fullServer(t)).doc
	paths := doc["paths"].(map[string]any)
	listed := documentedCodes(doc["x-amsg-common-error-codes"])
	common := src.codes(src.method("rateLimit"), src.method("deadlines"), src.method("recoverPanics"),
		src.method("decodeRequestBody"), src.method("writeError"))
	for _, c := range slices.Sorted(maps.Keys(common)) {
		if !listed[c] {
			t.Errorf("x-amsg-common-error-codes lacks %s, which the middleware answers", c)
		}
	}

	derived := src.operationCodes()
	derived["GET /metrics"] = src.codes(src.method("handleMetrics"))
	allListed := maps.Clone(listed)
	for path, ops := range paths {
		for method, op := range ops.(map[string]any) {
			op := op.(map[string]any)
			name := strings.ToUpper(method) + " " + path
			documented := documentedCodes(op["x-error-codes"])
			maps.Copy(allListed, documented)
			var missing []string
			for c := range derived[name] {
				if !documented[c] && !listed[c] {
					missing = append(missing, c)
				}
			}
			if len(missing) > 0 {
				slices.Sort(missing)
				t.Errorf("%s: x-error-codes lacks %s", name, strings.Join(missing, ", "))
			}
			byStatus, ok := op["x-error-codes"].(map[string]any)
			if !ok {
				t.Errorf("%s: no x-error-codes (the codes it can answer, by status: {\"400\": [\"USER_ID_REQUIRED\"]})", name)
			}
			for status := range byStatus {
				if _, ok := op["responses"].(map[string]any)[status]; !ok {
					t.Errorf("%s: x-error-codes lists %s, which has no response", name, status)
				}
			}
		}
	}
	if len(derived) < 50 {
		t.Fatalf("only %d routes found in the source", len(derived))
	}
	for _, code := range errorCodes() {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(allListed)), func(c string) bool { return strings.HasSuffix(c, " "+code) }) {
			t.Errorf("%s is in the error table but in no operation's x-error-codes", code)
		}
	}
}
