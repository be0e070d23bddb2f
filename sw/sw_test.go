package sw

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

func TestScriptStampsVersion(t *testing.T) {
	if n := bytes.Count(source, []byte(versionPlaceholder)); n != 1 {
		t.Fatalf("sw.js holds the version placeholder %d times, want 1", n)
	}
	tests := []struct {
		version, want string
	}{
		{"3f2a9c", `const SW_VERSION = "3f2a9c";`},
		{"", `const SW_VERSION = "dev";`},
		// Hostile versions stay one string literal.
		{`a"b</script>`, `const SW_VERSION = "a\"b\u003c/script\u003e";`},
		{"x\u2028y", `const SW_VERSION = "x\u2028y";`},
	}
	for _, tt := range tests {
		got := string(Script(tt.version))
		if !strings.Contains(got, tt.want) {
			t.Errorf("Script(%q) lacks %s", tt.version, tt.want)
		}
		if strings.Contains(got, versionPlaceholder) {
			t.Errorf("Script(%q) still holds the placeholder", tt.version)
		}
	}
	if bytes.Equal(Script("v1"), Script("v2")) {
		t.Error("different versions yield the same bytes; browsers would not update")
	}
}

func TestHandler(t *testing.T) {
	h := Handler("v1")
	want := Script("v1")

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/sw.js", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET status %d", rec.Code)
	}
	for name, value := range map[string]string{
		"Content-Type":           "application/javascript; charset=utf-8",
		"Cache-Control":          "no-cache",
		"X-Content-Type-Options": "nosniff",
	} {
		if got := rec.Header().Get(name); got != value {
			t.Errorf("%s = %q, want %q", name, got, value)
		}
	}
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Error("GET body is not Script(version)")
	}
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}

	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/sw.js", nil)
	req.Header.Set("If-None-Match", etag)
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotModified {
		t.Errorf("revalidation status %d, want 304", rec.Code)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, "/sw.js", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != strconv.Itoa(len(want)) {
		t.Errorf("HEAD: status %d, body %d bytes, Content-Length %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/sw.js", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: status %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}

	other := httptest.NewRecorder()
	Handler("v2").ServeHTTP(other, httptest.NewRequest(http.MethodGet, "/sw.js", nil))
	if other.Header().Get("ETag") == etag {
		t.Error("a new version keeps the old ETag")
	}
}

func TestAssetVersion(t *testing.T) {
	base := fstest.MapFS{
		"index.html":   {Data: []byte("<h1>amsg</h1>")},
		"js/app.js":    {Data: []byte("export {}")},
		"icon-192.png": {Data: []byte{0x89, 'P', 'N', 'G'}},
	}
	v1, err := AssetVersion(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(v1) != 16 {
		t.Errorf("version %q, want 16 hex digits", v1)
	}
	if again, _ := AssetVersion(base); again != v1 {
		t.Errorf("not deterministic: %s then %s", v1, again)
	}
	changes := map[string]fstest.MapFS{
		"content": {"index.html": {Data: []byte("<h1>amsg!</h1>")}, "js/app.js": base["js/app.js"], "icon-192.png": base["icon-192.png"]},
		"rename":  {"index.htm": base["index.html"], "js/app.js": base["js/app.js"], "icon-192.png": base["icon-192.png"]},
		"added":   {"index.html": base["index.html"], "js/app.js": base["js/app.js"], "icon-192.png": base["icon-192.png"], "new.css": {}},
		// Moving bytes between a name and its content must not collide.
		"boundary": {"index.html": {Data: []byte("<h1>amsg</h1>")}, "js/app.jsexport {}": {}, "icon-192.png": base["icon-192.png"]},
	}
	for name, fsys := range changes {
		if v, err := AssetVersion(fsys); err != nil || v == v1 {
			t.Errorf("%s: version %q (err %v), want a new one", name, v, err)
		}
	}
}

func TestScriptStampsNotificationTexts(t *testing.T) {
	if n := bytes.Count(source, []byte(textsPlaceholder)); n != 1 {
		t.Fatalf("sw.js holds the texts placeholder %d times, want 1", n)
	}
	got := string(Script("v"))
	for _, want := range []string{`const NOTIFY_TEXTS = {`, `"fromContact":"来自 %s"`, `"fromContact":"From %s"`} {
		if !strings.Contains(got, want) {
			t.Errorf("Script lacks %s", want)
		}
	}
	if strings.Contains(got, textsPlaceholder) {
		t.Error("Script still holds the texts placeholder")
	}
}
