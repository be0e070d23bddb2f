package main

import (
	"flag"
	"fmt"
	"time"

	"amsg/api"
	"amsg/llm"
	"amsg/loop"
	"amsg/scheduler"
)

// instantConfig are the settings of /instant, /continue and the session
// transcripts.
type instantConfig struct {
	MaxLoopIterations  int
	SessionTokenBudget int64
	LLMTimeout         time.Duration
	TranscriptMaxAge   time.Duration
	InterruptTimeout   time.Duration
}

func (c *instantConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.MaxLoopIterations, "max-loop-iterations", loop.DefaultMaxIterations,
		"LLM rounds one agent loop may run: /instant and each /continue count one")
	fs.Int64Var(&c.SessionTokenBudget, "session-token-budget", 0,
		"tokens (input plus output) one session may spend over all its rounds; 0 is no cap, a request's tokenBudget may ask for less")
	fs.DurationVar(&c.LLMTimeout, "llm-timeout", llm.DefaultLLMTimeout, "bound on one LLM call, a streamed answer included")
	fs.DurationVar(&c.TranscriptMaxAge, "transcript-max-age", 30*24*time.Hour, "how long session transcripts are kept")
	fs.DurationVar(&c.InterruptTimeout, "interrupt-timeout", loop.DefaultInterruptTimeout,
		"how long a tool call of approvalTools waits for the person's decision when the request does not say (approvalTimeoutSeconds)")
}

func (c instantConfig) validate() error {
	switch {
	case c.MaxLoopIterations < 1:
		return fmt.Errorf("%w: --max-loop-iterations must be at least 1, got %d", errUsage, c.MaxLoopIterations)
	case c.SessionTokenBudget < 0:
		return fmt.Errorf("%w: --session-token-budget must not be negative", errUsage)
	case c.LLMTimeout <= 0:
		return fmt.Errorf("%w: --llm-timeout must be positive", errUsage)
	case c.TranscriptMaxAge < time.Hour:
		return fmt.Errorf("%w: --transcript-max-age must be at least 1h, got %s", errUsage, c.TranscriptMaxAge)
	case c.InterruptTimeout < loop.MinInterruptTimeout || c.InterruptTimeout > loop.MaxInterruptTimeout:
		return fmt.Errorf("%w: --interrupt-timeout must be within %s..%s, got %s", errUsage, loop.MinInterruptTimeout, loop.MaxInterruptTimeout, c.InterruptTimeout)
	}
	return nil
}

// instant builds the agent loop behind the instant path.
func (s *server) instant() *api.Instant {
	c := s.cfg.Instant
	agent := loop.NewAgent(loop.AgentConfig{
		Client:        s.llm,
		Transcripts:   s.transcripts,
		MaxIterations: c.MaxLoopIterations,
		TokenBudget:   c.SessionTokenBudget,
		Instance:      s.instance,
		Liveness:      liveness{store: s.store, heartbeat: s.cfg.Cluster.Heartbeat, now: s.now},
		Logger:        s.log,
		PageURL:       s.cfg.Notifications.PublicURL,
		Now:           s.now,

		InterruptTimeout: c.InterruptTimeout,
	})
	// Expired approvals are looked for on the scheduler's tick.
	s.interrupts = scheduler.NewInterrupts(agent, s.courier, scheduler.InterruptsConfig{Interval: s.cfg.Tick,
		MaxPushes: s.cfg.Limits.API.MaxPushesPerRound, Logger: s.log})
	return &api.Instant{DefaultModel: s.cfg.Limits.LLMAPIURL != "", Agent: agent, Interrupts: s.interrupts}
}
