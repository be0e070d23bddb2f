// Package web serves amsg's companion page: an installable PWA of plain ES
// modules (no build step) for onboarding a device, chatting through
// /instant, scheduling messages and settings. The files under app/ are
// embedded; Handler serves them with their content types, validators and
// security headers, plus /app-shell.json, the list of paths the service
// worker precaches for offline use.
//
// Mount Handler at / for GET and HEAD, and stamp the service worker with a
// version computed over FS, so a new build reaches installed pages:
//
//	version, err := sw.AssetVersion(web.FS())
//	api.Deps{Web: web.Handler(), ServiceWorker: sw.Handler(version)}
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

//go:embed app
var embedded embed.FS

// ShellListPath is where the service worker reads the paths to precache.
const ShellListPath = "/app-shell.json"

// contentSecurityPolicy allows only the page's own origin: it talks to its
// own server (the LLM is called server-side) and loads nothing from elsewhere.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; manifest-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// FS returns the page's files, rooted at the URL path / (index.html is /).
// Pass it to sw.AssetVersion.
func FS() fs.FS {
	sub, err := fs.Sub(embedded, "app")
	if err != nil {
		panic(err) // "app" is a valid path; Sub only fails on invalid ones
	}
	return sub
}

// asset is one response the handler serves, prepared at start-up.
type asset struct {
	body         []byte
	contentType  string
	cacheControl string
	etag         string
}

// ShellPaths returns the URL paths the service worker precaches: / and
// every embedded file except index.html (which / serves), sorted.
func ShellPaths() []string {
	paths := []string{"/"}
	_ = fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != "index.html" {
			paths = append(paths, "/"+p)
		}
		return err
	})
	slices.Sort(paths)
	return paths
}

// Handler serves the page. Unknown paths get 404, other methods than GET and
// HEAD 405.
func Handler() http.Handler {
	assets := map[string]asset{}
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		urlPath := "/" + p
		if p == "index.html" {
			urlPath = "/"
		}
		assets[urlPath] = newAsset(p, body)
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is readable by construction
	}
	shell, err := json.Marshal(ShellPaths())
	if err != nil {
		panic(err)
	}
	assets[ShellListPath] = newAsset("app-shell.json", shell)

	return serveAssets(assets)
}

// serveAssets serves prepared files by URL path, GET and HEAD only, with
// the security headers.
func serveAssets(assets map[string]asset) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		a, ok := assets[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Cache-Control", a.cacheControl)
		h.Set("ETag", a.etag)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		if strings.HasPrefix(a.contentType, "text/html") {
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			h.Set("X-Frame-Options", "DENY")
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}

func newAsset(name string, body []byte) asset {
	sum := sha256.Sum256(body)
	a := asset{
		body:        body,
		contentType: contentTypes[path.Ext(name)],
		etag:        `"` + hex.EncodeToString(sum[:16]) + `"`,
		// The names carry no version, so every file is revalidated (a cheap
		// 304); offline, the service worker's shell cache answers instead.
		cacheControl: "no-cache",
	}
	if a.contentType == "" {
		a.contentType = "application/octet-stream"
	}
	if path.Ext(name) == ".png" {
		// Icons change only with a new build, which renews the worker's cache.
		a.cacheControl = "public, max-age=86400"
	}
	return a
}

// contentTypes are set explicitly: the platform's MIME tables differ between
// machines and lack .webmanifest.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".json":        "application/json; charset=utf-8",
	".webmanifest": "application/manifest+json; charset=utf-8",
	".png":         "image/png",
	".svg":         "image/svg+xml",
}
