package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return resp.StatusCode
}

// TestServeKeepsItsKeysAcrossRestarts is issue 2's "done when": the server
// answers /healthz, its VAPID public key is a 65-byte uncompressed point,
// and a restart serves the same key.
func TestServeKeepsItsKeysAcrossRestarts(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data") // created by amsg
	vapidKey := func(p *amsgProcess) string {
		var health map[string]string
		if code := getJSON(t, p.URL+"/healthz", &health); code != http.StatusOK || health["status"] != "ok" {
			t.Fatalf("healthz = %d %v", code, health)
		}
		var key struct {
			Success   bool   `json:"success"`
			PublicKey string `json:"publicKey"`
		}
		getJSON(t, p.URL+"/api/v1/vapid-public-key", &key)
		raw, err := base64.RawURLEncoding.DecodeString(key.PublicKey)
		if !key.Success || err != nil || len(raw) != 65 || raw[0] != 0x04 {
			t.Fatalf("VAPID public key %q: %d bytes, %v", key.PublicKey, len(raw), err)
		}
		return key.PublicKey
	}

	first := startAmsg(t, dataDir)
	key := vapidKey(first)
	if err := first.Stop(t); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	if len(first.Logs("shutting down")) != 1 {
		t.Error("no shutdown log line")
	}
	if info, err := os.Stat(filepath.Join(dataDir, "amsg.db")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("database file: %v %v", info, err)
	}

	second := startAmsg(t, dataDir)
	if got := vapidKey(second); got != key {
		t.Errorf("after a restart the VAPID key changed: %s, was %s", got, key)
	}
	if len(second.Logs("generated")) != 0 {
		t.Errorf("the restart generated new secrets: %v", second.Logs("generated"))
	}
}

func TestServeRefusesBadConfigurationInOneLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"unknown flag", []string{"serve", "--nope"}, nil, "flag provided but not defined: -nope"},
		{"bad env twin", []string{"serve"}, []string{"AMSG_TICK=soon"}, `invalid AMSG_TICK="soon"`},
		{"data dir is a file", []string{"serve", "--data-dir", file}, nil, "data directory " + file},
		{"bad master key", []string{"serve", "--data-dir", t.TempDir()}, []string{"AMSG_MASTER_KEY=xyz"}, "master key"},
		{"unknown command", []string{"sevre"}, nil, `unknown command "sevre"`},
	} {
		cmd := exec.Command(amsgBinary(t), c.args...)
		cmd.Env = append(os.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		exit, _ := err.(*exec.ExitError)
		if exit == nil || exit.ExitCode() != 2 {
			t.Errorf("%s: exit %v, want status 2\n%s", c.name, err, out)
			continue
		}
		first := strings.SplitN(string(out), "\n", 2)[0]
		if !strings.Contains(first, c.want) {
			t.Errorf("%s: first line %q does not say %q", c.name, first, c.want)
		}
		if c.name != "unknown command" && strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
			t.Errorf("%s: more than one line:\n%s", c.name, out)
		}
	}
}

// A second amsg on a data directory in use refuses to start; once the
// first has stopped, the directory is free again.
func TestServeRefusesADataDirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	first := startAmsg(t, dir)
	cmd := exec.Command(amsgBinary(t), "serve")
	cmd.Env = append(os.Environ(), "AMSG_ADDR=127.0.0.1:0", "AMSG_DATA_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if exit, _ := err.(*exec.ExitError); exit == nil || exit.ExitCode() != 2 ||
		strings.TrimSpace(string(out)) != "amsg serve: data directory "+dir+" is in use by another amsg process" {
		t.Errorf("second amsg: %v\n%s", err, out)
	}
	if err := first.Stop(t); err != nil {
		t.Fatal(err)
	}
	startAmsg(t, dir)
}

func TestVapidCommandPrintsEnvLines(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"vapid"}, &out, &errOut, func(string) string { return "" }); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "AMSG_VAPID_PUBLIC_KEY=") || !strings.HasPrefix(lines[1], "AMSG_VAPID_PRIVATE_KEY=") {
		t.Fatalf("output:\n%s", out.String())
	}
	public, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(lines[0], "AMSG_VAPID_PUBLIC_KEY="))
	private, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(lines[1], "AMSG_VAPID_PRIVATE_KEY="))
	if len(public) != 65 || public[0] != 4 || len(private) != 32 {
		t.Errorf("key sizes %d and %d", len(public), len(private))
	}
	// The printed pair is accepted as configuration.
	p := startAmsg(t, t.TempDir(), lines...)
	var key struct{ PublicKey string }
	getJSON(t, p.URL+"/api/v1/vapid-public-key", &key)
	if key.PublicKey != strings.TrimPrefix(lines[0], "AMSG_VAPID_PUBLIC_KEY=") {
		t.Errorf("served %s", key.PublicKey)
	}
}

func TestHealthCommand(t *testing.T) {
	p := startAmsg(t, t.TempDir())
	addr := strings.TrimPrefix(p.URL, "http://")
	env := func(k string) string {
		if k == "AMSG_ADDR" {
			return addr
		}
		return ""
	}
	var errOut strings.Builder
	if code := run(context.Background(), []string{"health"}, io.Discard, &errOut, env); code != 0 {
		t.Errorf("health of a running server: exit %d %s", code, errOut.String())
	}
	if err := p.Stop(t); err != nil {
		t.Fatal(err)
	}
	if code := run(context.Background(), []string{"health"}, io.Discard, io.Discard, env); code != 1 {
		t.Errorf("health of a stopped server: exit %d", code)
	}
}

func TestVersionCommand(t *testing.T) {
	var out strings.Builder
	if code := run(context.Background(), []string{"version"}, &out, io.Discard, os.Getenv); code != 0 || !strings.HasPrefix(out.String(), "amsg ") {
		t.Errorf("version: %d %q", code, out.String())
	}
}

func TestTokenCommand(t *testing.T) {
	key := func(k string) string {
		if k == "AMSG_TOKEN_SIGNING_KEY" {
			return "signing-key"
		}
		return ""
	}
	var out, errOut strings.Builder
	if code := run(context.Background(), []string{"token", "--ttl", "1h", "--subject", "phone"}, &out, &errOut, key); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	parts := strings.Split(strings.TrimSpace(out.String()), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", out.String())
	}
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Tid      string
		Iat, Exp int64
		V        int
	}
	if err := json.Unmarshal(claims, &c); err != nil || c.V != 1 || c.Tid != "phone" || c.Exp-c.Iat != 3600 {
		t.Errorf("claims %s (%v)", claims, err)
	}
	if code := run(context.Background(), []string{"token"}, io.Discard, io.Discard, func(string) string { return "" }); code != 2 {
		t.Errorf("without a signing key: exit %d, want 2", code)
	}
}
