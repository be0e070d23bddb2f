package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"amsg/push/courier"
	"amsg/store"
)

// config is everything `amsg serve` can be told. Every flag has an
// environment twin AMSG_<NAME> (dashes become underscores); a flag given on
// the command line wins over its twin. Secrets are read from the environment
// only, so they never show in a process listing.
type config struct {
	Addr                  string
	DataDir               string
	DatabaseURL           string
	DatabaseDirectURL     string
	DatabasePooler        string
	Tick                  time.Duration
	AllowPrivateEndpoints bool
	CORSOrigin            string
	VAPIDSubject          string
	PushPolicy            courier.Policy
	LogLevel              slog.Level
	LogFormat             string
	ShutdownTimeout       time.Duration
	Scheduler             schedulerConfig // scheduler.go
	Instant               instantConfig   // instant.go
	Cluster               clusterConfig   // cluster.go
	Limits                limitsConfig    // limits.go
	Webhooks              webhooksConfig  // webhooks.go

	Notifications notificationsConfig // notifications.go

	// Environment only.
	MasterKey       string
	VAPIDPublicKey  string
	VAPIDPrivateKey string
	ClientToken     string
	TokenSigningKey string
	AdminToken      string
}

// secretEnv lists the settings that exist only as environment variables.
var secretEnv = []struct{ name, usage string }{
	{"AMSG_MASTER_KEY", "64-hex master key for per-user keys (generated and stored on first start); given, the database keeps only its check value"},
	{"AMSG_MASTER_KEY_FILE", "a file holding AMSG_MASTER_KEY, instead of the variable"},
	{"AMSG_VAPID_PUBLIC_KEY", "VAPID public key, base64url (generated and stored on first start)"},
	{"AMSG_VAPID_PRIVATE_KEY", "VAPID private key, base64url (generated and stored on first start)"},
	{"AMSG_CLIENT_TOKEN", "shared secret every API request must send as X-Client-Token (optional)"},
	{"AMSG_TOKEN_SIGNING_KEY", "HMAC key for Bearer tokens on /instant and /continue (optional)"},
	{"AMSG_ADMIN_TOKEN", "operator token: enables /api/v1/admin/ and /admin for requests that send it as a Bearer token (optional)"},
	{"AMSG_LLM_API_KEY", "API key of the operator's model (--llm-api-url)"},
	{"AMSG_WEBHOOK_SECRET", "signing secret of --webhook-url, whsec_<base64 of 24 to 64 bytes> (Standard Webhooks)"},
}

// minTokenLen bounds how short the operator token (it opens every user's
// data) and the client token (it opens every route) may be.
const minTokenLen = 16

// errUsage marks a configuration error: the process prints one line and
// exits with status 2.
var errUsage = errors.New("usage")

// defaultAddr is --addr's default; `amsg health` asks it when AMSG_ADDR is
// unset.
const defaultAddr = "localhost:8080"

// envName is the environment twin of a flag.
func envName(flagName string) string {
	return "AMSG_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseServeConfig parses `amsg serve` arguments and the environment.
func parseServeConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("amsg serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by the caller
	fs.StringVar(&c.Addr, "addr", defaultAddr, "address to listen on")
	fs.StringVar(&c.DataDir, "data-dir", "./amsg-data", "directory of the SQLite database")
	fs.StringVar(&c.DatabaseURL, "database-url", "",
		"PostgreSQL database (postgres://…) that several instances share; empty: SQLite in --data-dir")
	fs.StringVar(&c.DatabaseDirectURL, "database-direct-url", "",
		"when --database-url goes through a transaction pooler (PgBouncer): the same database directly, for leadership and LISTEN")
	fs.StringVar(&c.DatabasePooler, "database-pooler", "",
		`"transaction" when --database-url goes through a transaction pooler (PgBouncer's pool_mode=transaction); empty: detected. Without --database-direct-url it is poll-only`)
	fs.DurationVar(&c.Tick, "tick", time.Second, "scheduler tick: how often due tasks are looked for")
	fs.BoolVar(&c.AllowPrivateEndpoints, "allow-private-endpoints", false,
		"accept http:// and loopback/private push endpoints (development and tests only)")
	fs.StringVar(&c.CORSOrigin, "cors-origin", "", `CORS: "" (off), "*", an origin, or a comma-separated list`)
	fs.StringVar(&c.VAPIDSubject, "vapid-subject", "mailto:amsg@localhost",
		"VAPID contact push services may write to: mailto:you@yourdomain or an https URL (Apple rejects placeholders like the default)")
	fs.TextVar(&c.PushPolicy, "push-policy", courier.PolicyVisible,
		"which pushes go by Web Push: visible (reasoning stays on SSE and in the outbox) or upstream (all, as the standard's server)")
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log format: text or json")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 30*time.Second,
		"how long a graceful shutdown waits for open requests")
	c.Scheduler.register(fs)
	c.Instant.register(fs)
	c.Cluster.register(fs)
	c.Limits.register(fs)
	c.Notifications.register(fs)
	c.Webhooks.register(fs)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printServeUsage(fs, stderr)
			return c, flag.ErrHelp
		}
		return c, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		v := getenv(name)
		if set[f.Name] || v == "" || envErr != nil {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			envErr = fmt.Errorf("%w: invalid %s=%q: %v", errUsage, name, v, err)
		}
	})
	if envErr != nil {
		return c, envErr
	}

	var err error
	if c.MasterKey, err = secretFromEnv(getenv, "AMSG_MASTER_KEY"); err != nil {
		return c, err
	}
	c.VAPIDPublicKey = getenv("AMSG_VAPID_PUBLIC_KEY")
	c.VAPIDPrivateKey = getenv("AMSG_VAPID_PRIVATE_KEY")
	c.ClientToken = getenv("AMSG_CLIENT_TOKEN")
	c.TokenSigningKey = getenv("AMSG_TOKEN_SIGNING_KEY")
	c.AdminToken = getenv("AMSG_ADMIN_TOKEN")
	c.Limits.LLMAPIKey = getenv("AMSG_LLM_API_KEY")
	c.Webhooks.Secret = getenv("AMSG_WEBHOOK_SECRET")
	return c, c.validate()
}

func (c config) validate() error {
	switch {
	case c.Tick < 100*time.Millisecond:
		return fmt.Errorf("%w: --tick must be at least 100ms, got %s", errUsage, c.Tick)
	case c.LogFormat != "text" && c.LogFormat != "json":
		return fmt.Errorf("%w: --log-format must be text or json, got %q", errUsage, c.LogFormat)
	case c.DataDir == "" && c.DatabaseURL == "":
		return fmt.Errorf("%w: --data-dir must not be empty", errUsage)
	case c.DatabaseURL != "" && !store.IsPostgresURL(c.DatabaseURL):
		return fmt.Errorf("%w: --database-url must start postgres:// or postgresql://", errUsage)
	case c.DatabasePooler != "" && (c.DatabaseURL == "" || c.DatabasePooler != store.PoolerTransaction):
		return fmt.Errorf("%w: --database-pooler must be empty or %q, given with --database-url", errUsage, store.PoolerTransaction)
	case c.DatabaseDirectURL != "" && (c.DatabaseURL == "" || !store.IsPostgresURL(c.DatabaseDirectURL)):
		return fmt.Errorf("%w: --database-direct-url must be a postgres:// URL, given with --database-url", errUsage)
	case (c.VAPIDPublicKey == "") != (c.VAPIDPrivateKey == ""):
		return fmt.Errorf("%w: AMSG_VAPID_PUBLIC_KEY and AMSG_VAPID_PRIVATE_KEY must be given together", errUsage)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("%w: --shutdown-timeout must be positive", errUsage)
	case c.Cluster.Heartbeat < 100*time.Millisecond:
		return fmt.Errorf("%w: --instance-heartbeat must be at least 100ms, got %s", errUsage, c.Cluster.Heartbeat)
	case c.AdminToken != "" && len(c.AdminToken) < minTokenLen:
		return fmt.Errorf("%w: AMSG_ADMIN_TOKEN must be at least %d characters (openssl rand -hex 32 makes one)", errUsage, minTokenLen)
	case c.ClientToken != "" && len(c.ClientToken) < minTokenLen:
		return fmt.Errorf("%w: AMSG_CLIENT_TOKEN must be at least %d characters (openssl rand -hex 32 makes one)", errUsage, minTokenLen)
	}
	if err := c.Scheduler.validate(); err != nil {
		return err
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	if err := c.Instant.validate(); err != nil {
		return err
	}
	if err := c.Webhooks.validate(); err != nil {
		return err
	}
	return c.Notifications.validate()
}

func printServeUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: amsg serve [flags]\n\nFlags (each also read from the environment variable shown):\n")
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(w, "  --%s (%s, default %q)\n      %s\n", f.Name, envName(f.Name), f.DefValue, f.Usage)
	})
	fmt.Fprintf(w, "\nSecrets (environment only):\n")
	for _, s := range secretEnv {
		fmt.Fprintf(w, "  %s\n      %s\n", s.name, s.usage)
	}
}

// newLogger builds the process logger.
func newLogger(c config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "json" {
		opts.ReplaceAttr = durationsInMilliseconds
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// durationsInMilliseconds writes a time.Duration as a number of
// milliseconds under its key with "Ms" appended: slog's JSON handler
// would write nanoseconds, which log tools read as a bare, huge number. The
// text format keeps Go's "1.5s".
func durationsInMilliseconds(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	key := a.Key
	if !strings.HasSuffix(key, "Ms") {
		key += "Ms"
	}
	return slog.Float64(key, float64(a.Value.Duration().Microseconds())/1000)
}
