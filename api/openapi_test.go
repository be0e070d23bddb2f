package api

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// fullServer has every feature: tasks, instant, metrics, the operator API
// and page, the service worker.
func fullServer(t *testing.T) *Server {
	t.Helper()
	return newOpenAPIServer(t, Config{}).s
}

// TestOpenAPIDocumentsEveryRoute holds openapi.json to the router: every
// API route is documented and nothing else is. HEAD twins of GET routes,
// the methods /instant and /continue answer only with 405, and the static
// files (/sw.js, /admin) are not API routes.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	s := fullServer(t)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	resp := do(t, s, http.MethodGet, "/api/v1/openapi.json", nil)
	if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("GET /api/v1/openapi.json = %d %s", resp.status, resp.header.Get("Content-Type"))
	}
	if err := json.Unmarshal([]byte(resp.body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method, op := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			var o struct {
				OperationID string                     `json:"operationId"`
				Responses   map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || o.OperationID == "" || len(o.Responses) == 0 {
				t.Errorf("%s %s: want an operationId and responses (%v)", method, path, err)
			}
		}
	}

	onlyPostRoutes := map[string]bool{}
	for _, rt := range s.routes {
		if reflect.ValueOf(rt.handle).Pointer() == reflect.ValueOf(onlyPost).Pointer() {
			onlyPostRoutes[rt.method+" /api/v1/"+rt.name] = true
		}
	}
	var served []string
	err := chi.Walk(s.mux().(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		key := method + " " + route
		if method == http.MethodHead || onlyPostRoutes[key] || route == "/sw.js" || route == "/admin" || route == "/admin/*" {
			return nil
		}
		served = append(served, key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(documented)
	slices.Sort(served)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is served but not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(served, d) {
			t.Errorf("%s is in openapi.json but not served", d)
		}
	}
	if len(served) < 30 {
		t.Fatalf("only %d routes walked: %v", len(served), served)
	}
}

// TestOpenAPIGeneratesAGoClient runs oapi-codegen (the binary
// AMSG_OAPI_CODEGEN names; skipped without it) on the served document and
// vets the typed client it writes, as docs/api.md tells client developers
// to. The generator is no dependency of amsg: the client lives in a
// module of its own in a temporary directory.
func TestOpenAPIGeneratesAGoClient(t *testing.T) {
	generator := os.Getenv("AMSG_OAPI_CODEGEN")
	if generator == "" {
		t.Skip("AMSG_OAPI_CODEGEN is not set (go install github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2)")
	}
	dir := t.TempDir()
	files := map[string]string{
		"openapi.json": do(t, fullServer(t), http.MethodGet, "/api/v1/openapi.json", nil).body,
		"config.yaml":  "package: amsgclient\ngenerate:\n  models: true\n  client: true\noutput-options:\n  skip-prune: true\noutput: client.gen.go\n",
		"go.mod":       "module amsgclient\n\ngo 1.26\n\nrequire github.com/oapi-codegen/runtime v1.9.0\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{generator, "-config", "config.yaml", "openapi.json"},
		{"go", "mod", "tidy"},
		{"go", "vet", "./..."},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	generated, err := os.ReadFile(filepath.Join(dir, "client.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"func (t Push) AsToolRequestPush() (ToolRequestPush, error)", "type Transcript struct",
		"func (c *ClientWithResponses) InstantWithResponse(", "type CleanupOperation struct"} {
		if !strings.Contains(string(generated), want) {
			t.Errorf("the generated client lacks %q", want)
		}
	}
}
