package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// The request log names the route pattern, the status, the duration in
// milliseconds and a digest of the user, never the user id itself.
func TestRequestLog(t *testing.T) {
	var buf bytes.Buffer
	s := newTestServer(t, Config{AdminToken: "t", Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}, Deps{})
	serve(s, newRequest(http.MethodGet, "/api/v1/push-subscription", "", map[string]string{"X-User-Id": testUserID}))
	serve(s, newRequest(http.MethodGet, "/api/v1/admin/users/u1/devices", "", nil))
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("request lines %v, want 2", lines)
	}
	first := lines[0]
	if first["method"] != "GET" || first["route"] != "/api/v1/push-subscription" || first["status"] != 200.0 ||
		first["user"] != userDigest(testUserID) {
		t.Errorf("request line %v", first)
	}
	if _, ok := first["durationMs"].(float64); !ok {
		t.Errorf("durationMs = %v, want a number of milliseconds", first["durationMs"])
	}
	if lines[1]["route"] != "/api/v1/admin/users/{userId}/devices" || lines[1]["status"] != 401.0 {
		t.Errorf("second line %v, want the pattern, not the path", lines[1])
	}
	if strings.Contains(buf.String(), testUserID) {
		t.Error("the log carries the user id")
	}
}

// Issue 23, problem 4: the request log names the client address the rate
// limits count, the forwarded one behind a trusted proxy; behind a proxy
// amsg does not trust, a warning says once how to fix it.
func TestRequestLogNamesTheClientAddress(t *testing.T) {
	forwarded := map[string]string{"X-Forwarded-For": "198.51.100.7"}
	for _, c := range []struct {
		name, proxies, wantClient string
		wantWarnings              int
	}{
		{"trusted proxy", "192.0.2.0/24", "198.51.100.7", 0},
		{"no trusted proxy", "", "192.0.2.1", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			proxies, err := ParseTrustedProxies(c.proxies)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			s := newTestServer(t, Config{Limits: Limits{TrustedProxies: proxies},
				Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}, Deps{})
			for range 2 {
				serve(s, newRequest(http.MethodGet, "/healthz", "", forwarded)) // from httptest's 192.0.2.1
			}
			var clients []any
			warnings := 0
			for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				switch {
				case m["msg"] == "request":
					clients = append(clients, m["client"])
				case strings.Contains(m["msg"].(string), "AMSG_TRUSTED_PROXIES is not set"):
					warnings++
				}
			}
			if len(clients) != 2 || clients[0] != c.wantClient || clients[1] != c.wantClient {
				t.Errorf("logged clients %v, want %s twice", clients, c.wantClient)
			}
			if warnings != c.wantWarnings {
				t.Errorf("%d warnings about the untrusted proxy, want %d\n%s", warnings, c.wantWarnings, buf.String())
			}
		})
	}
}
