package main

import (
	"flag"
	"fmt"
	"net"
	"net/netip"
	"time"

	"amsg/api"
	"amsg/loop"
	"amsg/store"
)

// limitsConfig are the timeouts, limits and LLM policy that make the server
// safe to expose; docs/security.md says what each one answers.
type limitsConfig struct {
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	BodyReadTimeout   time.Duration
	WriteTimeout      time.Duration

	MaxRounds          int
	MaxRoundsPerUser   int
	OrphanRoundTimeout time.Duration
	MaxOrphanRounds    int

	RateLimit      string // "on" or "off"
	Rate           float64
	RateBurst      int
	UserRate       float64
	UserRateBurst  int
	TrustedProxies string

	MaxTasksPerUser           int
	MaxStateBytesPerUser      int64
	MaxStateBytesPerNamespace int64
	MaxDevicesPerUser         int
	MaxPushesPerRound         int
	TokenProofMaxAge          time.Duration

	AllowPrivateLLM bool
	LLMAPIURL       string
	LLMModel        string
	LLMAPIKey       string // environment only
}

func (c *limitsConfig) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "bound on receiving a request's headers")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", 2*time.Minute, "how long an idle kept-alive connection stays open")
	fs.DurationVar(&c.BodyReadTimeout, "body-read-timeout", api.DefaultBodyReadTimeout,
		"bound on receiving a request's body; a slower body gets 408 and the connection closes")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", api.DefaultWriteTimeout,
		"bound on sending a response from its first byte; event streams renew it per frame")
	fs.IntVar(&c.MaxRounds, "max-rounds", api.DefaultMaxRounds, "LLM rounds (/instant, /continue) running at once")
	fs.IntVar(&c.MaxRoundsPerUser, "max-rounds-per-user", api.DefaultMaxRoundsPerUser,
		"LLM rounds running at once per user (per client address without X-User-Id)")
	fs.DurationVar(&c.OrphanRoundTimeout, "orphan-round-timeout", api.DefaultOrphanRoundTimeout,
		"how long an /instant or /continue round runs on after its client left")
	fs.IntVar(&c.MaxOrphanRounds, "max-orphan-rounds", api.DefaultMaxOrphanRounds,
		"rounds that may run on after their client left; beyond it a round stops when its client leaves")
	fs.StringVar(&c.RateLimit, "rate-limit", "on", "request rate limits: on, or off (load tests, a proxy that limits)")
	fs.Float64Var(&c.Rate, "rate", api.DefaultRequestsPerSecond, "requests per second per client address")
	fs.IntVar(&c.RateBurst, "rate-burst", api.DefaultBurst, "requests a client address may burst above --rate")
	fs.Float64Var(&c.UserRate, "user-rate", api.DefaultUserRequestsPerSecond, "requests per second per user (X-User-Id)")
	fs.IntVar(&c.UserRateBurst, "user-rate-burst", api.DefaultUserBurst, "requests a user may burst above --user-rate")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", "",
		"comma-separated proxy addresses or CIDRs whose X-Forwarded-For names the client")
	fs.IntVar(&c.MaxTasksPerUser, "max-tasks-per-user", api.DefaultMaxTasksPerUser,
		"pending tasks one user may have; more get 403 QUOTA_EXCEEDED")
	fs.Int64Var(&c.MaxStateBytesPerUser, "max-state-bytes-per-user", api.DefaultMaxStateBytesPerUser,
		"bytes one user's client state may take in the database")
	fs.Int64Var(&c.MaxStateBytesPerNamespace, "max-state-bytes-per-namespace", api.DefaultMaxStateBytesPerNamespace,
		"bytes one client-state namespace of a user may take in the database")
	fs.IntVar(&c.MaxDevicesPerUser, "max-devices-per-user", store.DefaultMaxDevicesPerUser,
		"push subscriptions one user keeps; registering another evicts the least recently updated")
	fs.IntVar(&c.MaxPushesPerRound, "max-pushes-per-round", api.DefaultMaxPushesPerRound,
		"pushes one LLM round may send (each to every device of the user); a round that would send more fails")
	fs.DurationVar(&c.TokenProofMaxAge, "client-token-proof-max-age", api.DefaultTokenProofMaxAge,
		"how long a user's last call with AMSG_CLIENT_TOKEN lets amsg-client's encrypted /instant in without it")
	fs.BoolVar(&c.AllowPrivateLLM, "allow-private-llm", false,
		"let requests name loopback/private LLM endpoints as apiUrl (a local model for every caller; tests)")
	fs.StringVar(&c.LLMAPIURL, "llm-api-url", "", "the operator's model endpoint, used when a request gives no apiUrl; trusted wherever it points")
	fs.StringVar(&c.LLMModel, "llm-model", "", "the operator's model name (with --llm-api-url)")
}

func (c limitsConfig) validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"read-header-timeout", c.ReadHeaderTimeout}, {"idle-timeout", c.IdleTimeout}, {"body-read-timeout", c.BodyReadTimeout},
		{"write-timeout", c.WriteTimeout}, {"orphan-round-timeout", c.OrphanRoundTimeout},
		{"client-token-proof-max-age", c.TokenProofMaxAge}} {
		if d.v <= 0 {
			return fmt.Errorf("%w: --%s must be positive", errUsage, d.name)
		}
	}
	for _, n := range []struct {
		name string
		v    float64
	}{{"max-rounds", float64(c.MaxRounds)}, {"max-rounds-per-user", float64(c.MaxRoundsPerUser)},
		{"max-orphan-rounds", float64(c.MaxOrphanRounds)}, {"rate", c.Rate}, {"rate-burst", float64(c.RateBurst)},
		{"user-rate", c.UserRate}, {"user-rate-burst", float64(c.UserRateBurst)},
		{"max-tasks-per-user", float64(c.MaxTasksPerUser)}, {"max-state-bytes-per-user", float64(c.MaxStateBytesPerUser)},
		{"max-state-bytes-per-namespace", float64(c.MaxStateBytesPerNamespace)}, {"max-devices-per-user", float64(c.MaxDevicesPerUser)},
		{"max-pushes-per-round", float64(c.MaxPushesPerRound)}} {
		if n.v <= 0 {
			return fmt.Errorf("%w: --%s must be positive", errUsage, n.name)
		}
	}
	if c.RateLimit != "on" && c.RateLimit != "off" {
		return fmt.Errorf("%w: --rate-limit must be on or off, got %q", errUsage, c.RateLimit)
	}
	if _, err := api.ParseTrustedProxies(c.TrustedProxies); err != nil {
		return fmt.Errorf("%w: --trusted-proxies: %v", errUsage, err)
	}
	if c.LLMAPIURL != "" {
		if _, err := loop.NormalizeAPIURL(c.LLMAPIURL); err != nil {
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
	proxies, _ := api.ParseTrustedProxies(c.TrustedProxies) // validated
	return api.Limits{
		BodyReadTimeout: c.BodyReadTimeout, WriteTimeout: c.WriteTimeout,
		MaxRounds: c.MaxRounds, MaxRoundsPerUser: c.MaxRoundsPerUser,
		OrphanRoundTimeout: c.OrphanRoundTimeout, MaxOrphanRounds: c.MaxOrphanRounds,
		RateLimitOff: c.RateLimit == "off", RequestsPerSecond: c.Rate, Burst: c.RateBurst,
		UserRequestsPerSecond: c.UserRate, UserBurst: c.UserRateBurst, TrustedProxies: proxies,
		MaxTasksPerUser: c.MaxTasksPerUser, MaxStateBytesPerUser: c.MaxStateBytesPerUser,
		MaxStateBytesPerNamespace: c.MaxStateBytesPerNamespace, MaxPushesPerRound: c.MaxPushesPerRound,
		TokenProofMaxAge: c.TokenProofMaxAge,
	}
}

// defaultModel is the operator's model, if one is configured.
func (c limitsConfig) defaultModel() loop.Model {
	return loop.Model{APIURL: c.LLMAPIURL, APIKey: c.LLMAPIKey, Name: c.LLMModel}
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
