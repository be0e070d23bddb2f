package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestDebugAddrServesGoProfiles: --debug-addr serves Go's profiler on a
// listener of its own (a heap profile, a CPU profile, an execution trace),
// not the command line, which may carry secrets, and nothing of it on
// --addr; a profile longer than its bound is refused.
func TestDebugAddrServesGoProfiles(t *testing.T) {
	p := startAmsg(t, filepath.Join(t.TempDir(), "data"), "AMSG_DEBUG_ADDR=127.0.0.1:0")
	debugURL := "http://" + p.WaitLog(t, "debug listening", 20*time.Second)["addr"].(string)
	c := http.Client{Timeout: time.Minute}
	get := func(url string) (int, []byte) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}

	for _, path := range []string{"/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		status, body := get(debugURL + path)
		if status != http.StatusOK {
			t.Fatalf("%s = %d: %s", path, status, body)
		}
		// A pprof profile is a gzipped protocol buffer.
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("%s is not a gzipped profile: %v", path, err)
		}
		if n, err := io.Copy(io.Discard, zr); err != nil || n == 0 {
			t.Fatalf("%s: %d bytes, %v", path, n, err)
		}
	}
	status, body := get(debugURL + "/debug/pprof/trace?seconds=1")
	if status != http.StatusOK || !bytes.HasPrefix(body, []byte("go 1.")) {
		t.Fatalf("trace = %d, %q…", status, body[:min(len(body), 16)])
	}
	if status, _ := get(debugURL + "/debug/pprof/cmdline"); status != http.StatusNotFound {
		t.Errorf("/debug/pprof/cmdline = %d on --debug-addr, want 404", status)
	}
	for _, path := range []string{"/debug/pprof/profile?seconds=300", "/debug/pprof/trace?seconds=300"} {
		if status, _ := get(debugURL + path); status != http.StatusBadRequest {
			t.Errorf("%s = %d, want 400: past the %v bound", path, status, maxProfileDuration)
		}
	}
	if status, _ := get(p.URL + "/debug/pprof/heap"); status == http.StatusOK {
		t.Errorf("/debug/pprof/heap answered 200 on --addr")
	}
}
