package main

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestServeConfigDefaults(t *testing.T) {
	c, err := parseServeConfig(nil, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "localhost:8080" || c.DataDir != "./amsg-data" || c.Tick != time.Second ||
		c.AllowPrivateEndpoints || c.CORSOrigin != "" || c.LogLevel != slog.LevelInfo ||
		c.Scheduler.DeliveryRetries != 3 || c.Scheduler.GenerationRetries != 3 || c.Scheduler.Lookahead != 250*time.Millisecond {
		t.Errorf("defaults = %+v", c)
	}
}

func TestServeConfigEnvTwins(t *testing.T) {
	c, err := parseServeConfig([]string{"--addr", ":9000"}, env(map[string]string{
		"AMSG_ADDR":                    ":1111", // the flag wins
		"AMSG_DATA_DIR":                "/data",
		"AMSG_TICK":                    "250ms",
		"AMSG_ALLOW_PRIVATE_ENDPOINTS": "true",
		"AMSG_CORS_ORIGIN":             "*",
		"AMSG_LOG_LEVEL":               "debug",
		"AMSG_MASTER_KEY":              strings.Repeat("a", 64),
		"AMSG_CLIENT_TOKEN":            "client-token-0123",
		"AMSG_MAX_DELIVERY_RETRIES":    "0",
		"AMSG_MAX_GENERATION_RETRIES":  "5",
		"AMSG_TASK_LOOKAHEAD":          "0s",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9000" || c.DataDir != "/data" || c.Tick != 250*time.Millisecond || !c.AllowPrivateEndpoints ||
		c.CORSOrigin != "*" || c.LogLevel != slog.LevelDebug || c.MasterKey != strings.Repeat("a", 64) || c.ClientToken != "client-token-0123" ||
		c.Scheduler.DeliveryRetries != 0 || c.Scheduler.GenerationRetries != 5 || c.Scheduler.Lookahead != 0 {
		t.Errorf("config = %+v", c)
	}
}

func TestServeConfigRejectsBadInput(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown flag", []string{"--nope"}, nil, "flag provided but not defined: -nope"},
		{"bad duration flag", []string{"--tick", "soon"}, nil, `invalid value "soon" for flag -tick`},
		{"bad env twin", nil, map[string]string{"AMSG_TICK": "soon"}, `invalid AMSG_TICK="soon"`},
		{"bad bool env", nil, map[string]string{"AMSG_ALLOW_PRIVATE_ENDPOINTS": "maybe"}, "AMSG_ALLOW_PRIVATE_ENDPOINTS"},
		{"tick too small", []string{"--tick", "1ms"}, nil, "--tick must be at least 100ms"},
		{"stray argument", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"half a VAPID pair", nil, map[string]string{"AMSG_VAPID_PUBLIC_KEY": "B"}, "must be given together"},
		{"short operator token", nil, map[string]string{"AMSG_ADMIN_TOKEN": "short"}, "AMSG_ADMIN_TOKEN must be at least 16"},
		{"short client token", nil, map[string]string{"AMSG_CLIENT_TOKEN": "x"}, "AMSG_CLIENT_TOKEN must be at least 16"},
		{"log format", []string{"--log-format", "xml"}, nil, "--log-format must be text or json"},
		{"database url", nil, map[string]string{"AMSG_DATABASE_URL": "mysql://db/amsg"}, "--database-url must start postgres:// or postgresql://"},
		{"unknown pooler", nil, map[string]string{"AMSG_DATABASE_URL": "postgres://db/amsg", "AMSG_DATABASE_POOLER": "session"}, `--database-pooler must be empty or "transaction"`},
		{"pooler without a database", nil, map[string]string{"AMSG_DATABASE_POOLER": "transaction"}, "given with --database-url"},
		{"instance heartbeat", []string{"--instance-heartbeat", "1ms"}, nil, "--instance-heartbeat must be at least 100ms"},
		{"lookahead past the heartbeat", []string{"--task-lookahead", "31s"}, nil, "--task-lookahead must be 0 or more and at most --task-heartbeat"},
		{"fire grid past its bound", []string{"--task-fire-grid", "101ms"}, nil, "--task-fire-grid must be 0 or more and at most 100ms"},
		{"negative retries", nil, map[string]string{"AMSG_MAX_GENERATION_RETRIES": "-1"}, "--max-generation-retries must be 0 or more"},
		{"webhook retry window", []string{"--webhook-retry-for", "1h"}, nil, "retry window 1h0m0s is outside [24h0m0s, 720h0m0s]"},
		{"webhook timeout", []string{"--webhook-timeout", "10m"}, nil, "timeout 10m0s is outside"},
		{"webhook concurrency", []string{"--webhook-concurrency", "0"}, nil, "--webhook-concurrency must be positive"},
		{"webhook without secret", nil, map[string]string{"AMSG_WEBHOOK_URL": "https://hooks.example.com/"}, "--webhook-url needs AMSG_WEBHOOK_SECRET"},
		{"webhook bad secret", nil, map[string]string{"AMSG_WEBHOOK_URL": "https://hooks.example.com/", "AMSG_WEBHOOK_SECRET": "hunter2"}, "whsec_ followed by the base64"},
		{"webhook unknown event", nil, map[string]string{"AMSG_WEBHOOK_URL": "https://hooks.example.com/", "AMSG_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
			"AMSG_WEBHOOK_EVENTS": "message.sent,message.exploded"}, `unknown webhook event type "message.exploded"`},
		{"webhook secret without url", nil, map[string]string{"AMSG_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "need --webhook-url"},
	} {
		_, err := parseServeConfig(c.args, env(c.env), io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a usage error containing %q", c.name, err, c.want)
		}
	}
}

func TestServeUsageNamesEveryEnvTwin(t *testing.T) {
	var out strings.Builder
	if _, err := parseServeConfig([]string{"-h"}, env(nil), &out); err == nil {
		t.Fatal("-h must not start the server")
	}
	for _, want := range []string{"AMSG_ADDR", "AMSG_DATA_DIR", "AMSG_TICK", "AMSG_ALLOW_PRIVATE_ENDPOINTS",
		"AMSG_CORS_ORIGIN", "AMSG_VAPID_SUBJECT", "AMSG_MASTER_KEY", "AMSG_CLIENT_TOKEN", "AMSG_TOKEN_SIGNING_KEY"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("usage does not mention %s:\n%s", want, out.String())
		}
	}
}
