package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/api"
	"amsg/push/webpush"
)

func TestLimitsConfig(t *testing.T) {
	c, err := parseServeConfig(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Limits.api()
	if l.MaxTasksPerUser != 1000 || l.RateLimitOff || l.BodyReadTimeout != api.DefaultBodyReadTimeout || c.Limits.MaxDevicesPerUser != 10 {
		t.Errorf("defaults = %+v", l)
	}
	if c.Limits.PushHungAfter != webpush.DefaultHungAfter || c.Limits.PushHungTimeout != webpush.DefaultHungTimeout {
		t.Errorf("hang breaker defaults: %d, %s", c.Limits.PushHungAfter, c.Limits.PushHungTimeout)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = parseServeConfig(nil, env(map[string]string{
		"AMSG_RATE_LIMIT": "off", "AMSG_MAX_TASKS_PER_USER": "5", "AMSG_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1",
		"AMSG_WRITE_TIMEOUT": "5s", "AMSG_LLM_API_URL": "http://127.0.0.1:11434", "AMSG_LLM_MODEL": "llama",
		"AMSG_LLM_API_KEY": "sk-op", "AMSG_MASTER_KEY_FILE": keyFile,
		"AMSG_PUSH_HUNG_AFTER": "7", "AMSG_PUSH_HUNG_TIMEOUT": "2s",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	l = c.Limits.api()
	if !l.RateLimitOff || l.MaxTasksPerUser != 5 || l.WriteTimeout != 5*time.Second || len(l.TrustedProxies) != 2 ||
		l.TrustedProxies[1] != netip.MustParsePrefix("192.0.2.1/32") {
		t.Errorf("from the environment: %+v", l)
	}
	if c.Limits.PushHungAfter != 7 || c.Limits.PushHungTimeout != 2*time.Second {
		t.Errorf("hang breaker from the environment: %d, %s", c.Limits.PushHungAfter, c.Limits.PushHungTimeout)
	}
	if m := c.Limits.defaultModel(); m.APIURL != "http://127.0.0.1:11434" || m.APIKey != "sk-op" || m.Name != "llama" {
		t.Errorf("default model %+v", m)
	}
	if c.MasterKey != strings.Repeat("ab", 32) {
		t.Errorf("master key from the file: %q", c.MasterKey)
	}
	for _, bad := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AMSG_RATE_LIMIT": "maybe"}, "--rate-limit must be on or off"},
		{map[string]string{"AMSG_MAX_TASKS_PER_USER": "0"}, "--max-tasks-per-user must be positive"},
		{map[string]string{"AMSG_PUSH_HUNG_AFTER": "0"}, "--push-hung-after must be positive"},
		{map[string]string{"AMSG_PUSH_HUNG_TIMEOUT": "0s"}, "--push-hung-timeout must be positive"},
		{map[string]string{"AMSG_TRUSTED_PROXIES": "10.0.0.0/40"}, "--trusted-proxies"},
		{map[string]string{"AMSG_LLM_API_URL": "http://x"}, "--llm-api-url needs --llm-model"},
		{map[string]string{"AMSG_MASTER_KEY": "x", "AMSG_MASTER_KEY_FILE": keyFile}, "not both"},
		{map[string]string{"AMSG_MASTER_KEY_FILE": "/nonexistent/key"}, "AMSG_MASTER_KEY_FILE"},
	} {
		_, err := parseServeConfig(nil, env(bad.env), io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.env, err, bad.want)
		}
	}
}

// Finding 6 against the binary: 10 000 made-up methods add no series.
func TestMadeUpMethodsAddNoSeries(t *testing.T) {
	p := startAmsg(t, filepath.Join(t.TempDir(), "data"), "AMSG_RATE_LIMIT=off")
	series := func() int {
		resp, err := http.Get(p.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Count(string(body), "amsg_http_requests_total{")
	}
	before := series()
	for i := range 10_000 {
		req, _ := http.NewRequest(fmt.Sprintf("X%dM%d", i, rand.Uint32()), p.URL+"/api/v1/anything", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if grown := series() - before; grown > 3 {
		t.Fatalf("10 000 made-up methods added %d series", grown)
	}
}
