package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// Every command answers -h with its usage and exit 0; vapid -h prints no
// key.
func TestEveryCommandTakesHelp(t *testing.T) {
	none := func(string) string { return "" }
	for _, cmd := range []string{"serve", "vapid", "token", "send", "admin", "backup", "health", "version"} {
		var out, errOut strings.Builder
		code := run(context.Background(), []string{cmd, "-h"}, &out, &errOut, none)
		help := out.String() + errOut.String()
		if code != 0 || !strings.Contains(strings.ToLower(help), "usage") || strings.Contains(help, "AMSG_VAPID_PRIVATE_KEY=") {
			t.Errorf("amsg %s -h: exit %d, output %q", cmd, code, help)
		}
	}
	if code := run(context.Background(), []string{"vapid", "extra"}, io.Discard, io.Discard, none); code != 2 {
		t.Errorf("amsg vapid extra: exit %d, want 2", code)
	}
}

// health --addr asks that address, not AMSG_ADDR's, and fails when nothing
// answers there.
func TestHealthHonoursAddr(t *testing.T) {
	p := startAmsg(t, t.TempDir())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	envAddr := func(addr string) func(string) string {
		return func(k string) string {
			if k == "AMSG_ADDR" {
				return addr
			}
			return ""
		}
	}
	running := strings.TrimPrefix(p.URL, "http://")
	if code := run(context.Background(), []string{"health", "--addr", running}, io.Discard, io.Discard, envAddr(closed)); code != 0 {
		t.Errorf("health --addr <running> with AMSG_ADDR elsewhere: exit %d, want 0", code)
	}
	var errOut strings.Builder
	if code := run(context.Background(), []string{"health", "--addr", closed}, io.Discard, &errOut, envAddr(running)); code != 1 {
		t.Errorf("health --addr <nothing listening>: exit %d %s, want 1", code, errOut.String())
	}
	if code := run(context.Background(), []string{"health", "--addr", "nonsense"}, io.Discard, io.Discard, envAddr("")); code != 2 {
		t.Errorf("health --addr nonsense: exit %d, want 2", code)
	}
}

// JSON logs carry durations as milliseconds, under a key ending in Ms.
func TestJSONLogDurationsInMilliseconds(t *testing.T) {
	var buf strings.Builder
	log := newLogger(config{LogFormat: "json", LogLevel: slog.LevelInfo}, &buf)
	log.Info("x", "wait", 1500*time.Millisecond, "latencyMs", 2*time.Millisecond, "n", 3)
	var line map[string]any
	if err := json.Unmarshal([]byte(buf.String()), &line); err != nil {
		t.Fatal(err)
	}
	if line["waitMs"] != 1500.0 || line["latencyMs"] != 2.0 || line["n"] != 3.0 || line["wait"] != nil {
		t.Fatalf("log line %v", line)
	}
}
