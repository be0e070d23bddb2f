package main

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"time"

	"amsg/api"
	"amsg/llm"
	"amsg/push/webpush"
	"amsg/store"
)

// limitsConfig are the timeouts, limits and LLM policy that make the server
// safe to expose; docs/security.md says what each one answers. Most flags
// write straight into the API's limits.
type limitsConfig struct {
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	API               api.Limits
	RateLimit         string // "on" or "off"
	TrustedProxies    string
	MaxDevicesPerUser int
	Conns             api.ConnLimits // Total 0: from the descriptor limit
	Outbox            outboxRetention
	HealthAddr        string // "" for none
	DebugAddr         string // "" for none
	// PushHungAfter and PushHungTimeout are the push sender's hang
	// breaker (webpush.Config.HungAfter, HungTimeout).
	PushHungAfter   int
	PushHungTimeout time.Duration
	PushNetHTTP     bool // webpush.Config.NetHTTPOnly

	AllowPrivateLLM bool
	LLMAPIURL       string
	LLMModel        string
	LLMAPIKey       string // environment only
}

func (c *limitsConfig) register(fs *flag.FlagSet) {
	l := &c.API
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "bound on receiving a request's headers")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 2*time.Minute, "how long an idle kept-alive connection stays open")
	fs.DurationVar(&l.BodyReadTimeout, "body-read-timeout", api.DefaultBodyReadTimeout,
		"bound on receiving a request's body; a slower body gets 408 and the connection closes")
	fs.DurationVar(&l.BodyStartTimeout, "body-start-timeout", api.DefaultBodyStartTimeout,
		"bound on the first bytes of a request's body when the request carried no client or Bearer token")
	fs.IntVar(&c.Conns.PerAddress, "max-conns-per-address", api.DefaultMaxConnsPerAddress,
		"open connections per client address; more are closed when accepted")
	fs.IntVar(&c.Conns.Total, "max-conns", 0,
		"open connections in all; 0 means three quarters of the descriptor limit")
	fs.IntVar(&c.PushHungAfter, "push-hung-after", webpush.DefaultHungAfter,
		"requests in a row to one push service that time out before its requests get --push-hung-timeout")
	fs.DurationVar(&c.PushHungTimeout, "push-hung-timeout", webpush.DefaultHungTimeout,
		"request timeout for a push service that stopped answering, until one of its requests gets an answer")
	fs.BoolVar(&c.PushNetHTTP, "push-net-http", false,
		"send pushes through Go's net/http client instead of amsg's own HTTP/2 client, should a push service disagree with it")
	fs.StringVar(&c.HealthAddr, "health-addr", "",
		"a second address serving only GET /healthz, outside the connection caps, so health checks answer under a flood")
	fs.StringVar(&c.DebugAddr, "debug-addr", "",
		"an address serving Go's profiler under /debug/pprof/ (CPU and heap profiles, goroutines, execution traces) for the operator; keep it on loopback")
	fs.DurationVar(&l.WriteTimeout, "write-timeout", api.DefaultWriteTimeout,
		"bound on sending a response from its first byte; event streams renew it per frame")
	fs.IntVar(&l.MaxRounds, "max-rounds", api.DefaultMaxRounds, "LLM rounds (/instant, /continue) running at once")
	fs.IntVar(&l.MaxRoundsPerUser, "max-rounds-per-user", api.DefaultMaxRoundsPerUser,
		"LLM rounds running at once per user that proved its id (else per client address)")
	fs.IntVar(&l.MaxRoundsPerAddress, "max-rounds-per-address", api.DefaultMaxRoundsPerAddress,
		"LLM rounds running at once per client address, whatever user ids it names")
	fs.DurationVar(&l.OrphanRoundTimeout, "orphan-round-timeout", api.DefaultOrphanRoundTimeout,
		"how long an /instant or /continue round runs on after its client left")
	fs.IntVar(&l.MaxOrphanRounds, "max-orphan-rounds", api.DefaultMaxOrphanRounds,
		"rounds that may run on after their client left; beyond it a round stops when its client leaves")
	fs.StringVar(&c.RateLimit, "rate-limit", "on", "request rate limits: on, or off (load tests, a proxy that limits)")
	fs.Float64Var(&l.RequestsPerSecond, "rate", api.DefaultRequestsPerSecond, "requests per second per client address")
	fs.IntVar(&l.Burst, "rate-burst", api.DefaultBurst, "requests a client address may burst above --rate")
	fs.Float64Var(&l.UserRequestsPerSecond, "user-rate", api.DefaultUserRequestsPerSecond, "requests per second per user (X-User-Id)")
	fs.IntVar(&l.UserBurst, "user-rate-burst", api.DefaultUserBurst, "requests a user may burst above --user-rate")
	fs.Int64Var(&l.WriteBytesPerAddressPerHour, "write-bytes-per-address", api.DefaultWriteBytesPerAddressPerHour,
		"request body bytes one client address may send per hour")
	fs.IntVar(&l.NewUsersPerAddressPerHour, "new-users-per-address", api.DefaultNewUsersPerAddressPerHour,
		"distinct user ids one client address may write as per hour")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", "",
		"comma-separated proxy addresses or CIDRs whose X-Forwarded-For names the client")
	fs.IntVar(&l.MaxTasksPerUser, "max-tasks-per-user", api.DefaultMaxTasksPerUser,
		"pending tasks one user may have; more get 403 QUOTA_EXCEEDED")
	fs.Int64Var(&l.MaxStateBytesPerUser, "max-state-bytes-per-user", api.DefaultMaxStateBytesPerUser,
		"bytes one user's client state may take in the database")
	fs.Int64Var(&l.MaxStateBytesPerNamespace, "max-state-bytes-per-namespace", api.DefaultMaxStateBytesPerNamespace,
		"bytes one client-state namespace of a user may take in the database")
	fs.Int64Var(&l.ClientStateReadBudget, "client-state-read-budget", api.DefaultClientStateReadBudget,
		"bytes of memory all GET /client-state answers in flight may take together (2 MiB each); a read beyond it gets 429")
	fs.DurationVar(&c.Outbox.MaxAge, "outbox-max-age", store.DefaultOutboxMaxAge, "how long an outbox row is kept at most")
	fs.DurationVar(&c.Outbox.AckedMaxAge, "outbox-acked-max-age", store.DefaultOutboxAckedMaxAge,
		"how long an outbox row is kept once a device acknowledged it")
	fs.IntVar(&c.Outbox.MaxRowsPerUser, "outbox-max-rows-per-user", store.DefaultOutboxMaxRowsPerUser,
		"outbox rows kept per user; the housekeeping deletes the rest, delivered ones and the oldest first")
	fs.IntVar(&c.MaxDevicesPerUser, "max-devices-per-user", store.DefaultMaxDevicesPerUser,
		"push subscriptions one user keeps; registering another evicts the least recently updated")
	fs.IntVar(&l.MaxPushesPerRound, "max-pushes-per-round", api.DefaultMaxPushesPerRound,
		"pushes one LLM round may send (each to every device of the user); a round that would send more fails")
	fs.DurationVar(&l.TokenProofMaxAge, "client-token-proof-max-age", api.DefaultTokenProofMaxAge,
		"how long a user's last call with AMSG_CLIENT_TOKEN lets amsg-client's encrypted /instant in without it")
	fs.BoolVar(&c.AllowPrivateLLM, "allow-private-llm", false,
		"let requests name loopback/private LLM endpoints as apiUrl (a local model for every caller; tests)")
	fs.StringVar(&c.LLMAPIURL, "llm-api-url", "", "the operator's model endpoint, used when a request gives no apiUrl; trusted wherever it points")
	fs.StringVar(&c.LLMModel, "llm-model", "", "the operator's model name (with --llm-api-url)")
}

func (c limitsConfig) validate() error {
	l := c.API
	for _, v := range []struct {
		name     string
		positive bool
	}{
		{"read-header-timeout", c.ReadHeaderTimeout > 0}, {"idle-timeout", c.IdleTimeout > 0},
		{"body-read-timeout", l.BodyReadTimeout > 0}, {"write-timeout", l.WriteTimeout > 0},
		{"body-start-timeout", l.BodyStartTimeout > 0}, {"max-conns-per-address", c.Conns.PerAddress > 0},
		{"max-conns", c.Conns.Total >= 0}, {"push-hung-after", c.PushHungAfter > 0}, {"push-hung-timeout", c.PushHungTimeout > 0},
		{"orphan-round-timeout", l.OrphanRoundTimeout > 0}, {"client-token-proof-max-age", l.TokenProofMaxAge > 0},
		{"max-rounds", l.MaxRounds > 0}, {"max-rounds-per-user", l.MaxRoundsPerUser > 0},
		{"max-rounds-per-address", l.MaxRoundsPerAddress > 0}, {"write-bytes-per-address", l.WriteBytesPerAddressPerHour > 0},
		{"new-users-per-address", l.NewUsersPerAddressPerHour > 0}, {"outbox-max-age", c.Outbox.MaxAge > 0},
		{"outbox-acked-max-age", c.Outbox.AckedMaxAge > 0}, {"outbox-max-rows-per-user", c.Outbox.MaxRowsPerUser > 0}, {"client-state-read-budget", l.ClientStateReadBudget > 0},
		{"max-orphan-rounds", l.MaxOrphanRounds > 0}, {"rate", l.RequestsPerSecond > 0}, {"rate-burst", l.Burst > 0},
		{"user-rate", l.UserRequestsPerSecond > 0}, {"user-rate-burst", l.UserBurst > 0},
		{"max-tasks-per-user", l.MaxTasksPerUser > 0}, {"max-state-bytes-per-user", l.MaxStateBytesPerUser > 0},
		{"max-state-bytes-per-namespace", l.MaxStateBytesPerNamespace > 0},
		{"max-devices-per-user", c.MaxDevicesPerUser > 0}, {"max-pushes-per-round", l.MaxPushesPerRound > 0},
	} {
		if !v.positive {
			return fmt.Errorf("%w: --%s must be positive", errUsage, v.name)
		}
	}
	if c.RateLimit != "on" && c.RateLimit != "off" {
		return fmt.Errorf("%w: --rate-limit must be on or off, got %q", errUsage, c.RateLimit)
	}
	if _, err := api.ParseTrustedProxies(c.TrustedProxies); err != nil {
		return fmt.Errorf("%w: --trusted-proxies: %v", errUsage, err)
	}
	if c.LLMAPIURL != "" {
		if _, err := llm.NormalizeAPIURL(c.LLMAPIURL); err != nil {
			return fmt.Errorf("%w: --llm-api-url: %v", errUsage, err)
		}
		if c.LLMModel == "" {
			return fmt.Errorf("%w: --llm-api-url needs --llm-model", errUsage)
		}
	}
	return nil
}

// api is the API's share of the settings.
func (c limitsConfig) api() api.Limits {
	l := c.API
	l.RateLimitOff = c.RateLimit == "off"
	l.TrustedProxies, _ = api.ParseTrustedProxies(c.TrustedProxies) // validated
	return l
}

// outboxRetention is how much of the outbox the housekeeping keeps.
type outboxRetention struct {
	MaxAge, AckedMaxAge time.Duration
	MaxRowsPerUser      int
}

// conns is the listener's share: Total from the descriptor limit unless
// given.
func (c limitsConfig) conns() api.ConnLimits {
	l := c.Conns
	l.TrustedProxies, _ = api.ParseTrustedProxies(c.TrustedProxies) // validated
	if l.Total == 0 {
		l.Total = api.DefaultMaxConns(descriptorLimit())
	}
	return l
}

// defaultModel is the operator's model, if one is configured.
func (c limitsConfig) defaultModel() llm.Model {
	return llm.Model{APIURL: c.LLMAPIURL, APIKey: c.LLMAPIKey, Name: c.LLMModel}
}

// isLoopback reports whether a listen address reaches this machine only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
