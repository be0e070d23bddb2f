package api

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"amsg/web"
)

// Issue 23, point 9: the page's files and JSON answers are gzipped for a
// client that accepts it, and left alone for one that does not.
func TestAnswersAreCompressedWhenAccepted(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{Web: web.Handler()})
	for _, path := range []string{"/", "/app.css", "/manifest.webmanifest", "/api/v1/capabilities"} {
		plain := serve(s, newRequest(http.MethodGet, path, "", nil))
		if plain.status != http.StatusOK || plain.header.Get("Content-Encoding") != "" {
			t.Fatalf("%s without Accept-Encoding: %d %v", path, plain.status, plain.header)
		}
		zipped := serve(s, newRequest(http.MethodGet, path, "", map[string]string{"Accept-Encoding": "gzip"}))
		if zipped.header.Get("Content-Encoding") != "gzip" || !strings.Contains(zipped.header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("%s with Accept-Encoding gzip: %v", path, zipped.header)
			continue
		}
		r, err := gzip.NewReader(strings.NewReader(zipped.body))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		if err != nil || string(body) != plain.body {
			t.Errorf("%s gunzipped differs from the plain answer (%v)", path, err)
		}
		if len(zipped.body) >= len(plain.body) {
			t.Errorf("%s: %d bytes gzipped, %d plain", path, len(zipped.body), len(plain.body))
		}
	}
}
