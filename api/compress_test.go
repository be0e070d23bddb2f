package api

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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

// A server-sent event leaves at once through the compressor and the
// deadline writer, for a client that accepts gzip too.
func TestEventsAreFlushedThroughTheCompressor(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	release := make(chan struct{})
	events := s.deadlines(compressAnswers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		_ = http.NewResponseController(w).Flush()
		<-release // the answer stays open until the client has the event
	})))
	srv := httptest.NewServer(events)
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a hang fails instead
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("first line %q, %v, Content-Encoding %q", line, err, resp.Header.Get("Content-Encoding"))
	}
}
