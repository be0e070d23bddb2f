package web_test

import (
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"amsg/web"
)

func get(t *testing.T, h http.Handler, method, path string, header map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestHandlerServesEveryFileWithItsType(t *testing.T) {
	h := web.Handler()
	tests := []struct {
		path, contentType, cache string
	}{
		{"/", "text/html; charset=utf-8", "no-cache"},
		{"/app.css", "text/css; charset=utf-8", "no-cache"},
		{"/js/main.js", "text/javascript; charset=utf-8", "no-cache"},
		{"/manifest.webmanifest", "application/manifest+json; charset=utf-8", "no-cache"},
		{"/app-shell.json", "application/json; charset=utf-8", "no-cache"},
		{"/icon-192x192.png", "image/png", "public, max-age=86400"},
		{"/badge-72x72.png", "image/png", "public, max-age=86400"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			res := get(t, h, http.MethodGet, tt.path, nil)
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK || len(body) == 0 {
				t.Fatalf("status %d, %d bytes", res.StatusCode, len(body))
			}
			if got := res.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type %q, want %q", got, tt.contentType)
			}
			if got := res.Header.Get("Cache-Control"); got != tt.cache {
				t.Errorf("Cache-Control %q, want %q", got, tt.cache)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("ETag") == "" {
				t.Errorf("headers %v", res.Header)
			}
			isHTML := strings.HasPrefix(tt.contentType, "text/html")
			if csp := res.Header.Get("Content-Security-Policy"); isHTML != strings.Contains(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy %q on %s", csp, tt.path)
			}
			// A revalidation is a cheap 304.
			again := get(t, h, http.MethodGet, tt.path, map[string]string{"If-None-Match": res.Header.Get("ETag")})
			if again.StatusCode != http.StatusNotModified {
				t.Errorf("revalidation answered %d", again.StatusCode)
			}
		})
	}
}

func TestHandlerRefusesWhatItDoesNotServe(t *testing.T) {
	h := web.Handler()
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/index.html", http.StatusNotFound}, // served at / only
		{http.MethodGet, "/nope.js", http.StatusNotFound},
		{http.MethodGet, "/js/", http.StatusNotFound},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodHead, "/", http.StatusOK},
	} {
		if res := get(t, h, tt.method, tt.path, nil); res.StatusCode != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, res.StatusCode, tt.status)
		}
	}
}

// TestShellListsEveryFile: the worker precaches /app-shell.json; a file
// missing from it would be missing offline.
func TestShellListsEveryFile(t *testing.T) {
	var listed []string
	if err := json.NewDecoder(get(t, web.Handler(), http.MethodGet, web.ShellListPath, nil).Body).Decode(&listed); err != nil {
		t.Fatal(err)
	}
	var files []string
	fs.WalkDir(web.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if !d.IsDir() && p != "index.html" {
			files = append(files, "/"+p)
		}
		return err
	})
	want := append([]string{"/"}, files...)
	slices.Sort(want)
	if !slices.Equal(listed, want) || !slices.Equal(web.ShellPaths(), want) {
		t.Errorf("shell lists %q, want %q", listed, want)
	}
	for _, p := range []string{"/", "/js/main.js", "/app.css", "/manifest.webmanifest", "/icon-192x192.png"} {
		if !slices.Contains(listed, p) {
			t.Errorf("shell misses %s", p)
		}
	}
}

// TestManifestIsInstallable checks what browsers require to offer
// installation, and that every icon it names exists at its size.
func TestManifestIsInstallable(t *testing.T) {
	raw, err := fs.ReadFile(web.FS(), "manifest.webmanifest")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name            string `json:"name"`
		ShortName       string `json:"short_name"`
		StartURL        string `json:"start_url"`
		Scope           string `json:"scope"`
		Display         string `json:"display"`
		ThemeColor      string `json:"theme_color"`
		BackgroundColor string `json:"background_color"`
		Icons           []struct{ Src, Sizes, Purpose string }
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Name == "" || m.ShortName == "" || m.StartURL != "/" || m.Scope != "/" || m.Display != "standalone" || m.ThemeColor == "" || m.BackgroundColor == "" {
		t.Errorf("manifest %+v", m)
	}
	purposes := map[string]bool{}
	for _, ic := range m.Icons {
		f, err := web.FS().Open(strings.TrimPrefix(ic.Src, "/"))
		if err != nil {
			t.Errorf("icon %s: %v", ic.Src, err)
			continue
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil {
			t.Errorf("icon %s: %v", ic.Src, err)
			continue
		}
		if got := fmt.Sprintf("%dx%d", cfg.Width, cfg.Height); got != ic.Sizes {
			t.Errorf("icon %s is %s, manifest says %s", ic.Src, got, ic.Sizes)
		}
		purposes[ic.Purpose] = true
	}
	if !purposes["any"] || !purposes["maskable"] {
		t.Errorf("icon purposes %v, want any and maskable", purposes)
	}
}
