package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"amsg/api"
	"amsg/scheduler"
	"amsg/scheduler/webhook"
	"amsg/store"
)

// webhooksLeader names the leadership of webhook sending: with several
// instances on one database only its holder fans events out and sends.
const webhooksLeader = "webhooks"

// webhooksConfig holds the webhook settings: the simple case's one endpoint
// (AMSG_WEBHOOK_URL, its secret from AMSG_WEBHOOK_SECRET) and the bounds
// every endpoint is held to. Endpoints the operator registers through
// /api/v1/admin/webhooks take the same bounds.
type webhooksConfig struct {
	URL          string
	Events       string // comma-separated; empty: every type
	Batch        bool
	AllowPrivate bool
	RetryFor     time.Duration
	Timeout      time.Duration
	Concurrency  int

	Secret string // environment only: AMSG_WEBHOOK_SECRET
}

func (c *webhooksConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.URL, "webhook-url", "", "a webhook endpoint for amsg's events, signed with AMSG_WEBHOOK_SECRET (Standard Webhooks); more with /api/v1/admin/webhooks")
	fs.StringVar(&c.Events, "webhook-events", "", "comma-separated event types --webhook-url gets (docs/webhooks.md); empty: all")
	fs.BoolVar(&c.Batch, "webhook-batch", false, "send --webhook-url several events per request, as a JSON array")
	fs.BoolVar(&c.AllowPrivate, "webhook-allow-private", false, "let webhook endpoints be http:// and loopback/private hosts (receivers on your own network; tests)")
	fs.DurationVar(&c.RetryFor, "webhook-retry-for", webhook.DefaultRetryFor, "how long a webhook delivery is retried before it is given up (24h to 720h)")
	fs.DurationVar(&c.Timeout, "webhook-timeout", webhook.DefaultTimeout, "how long one webhook request may take (at most 1m)")
	fs.IntVar(&c.Concurrency, "webhook-concurrency", webhook.DefaultConcurrency, "webhook requests in flight per endpoint (1 to 64)")
}

// events is --webhook-events as a list: every type when empty.
func (c webhooksConfig) events() []string {
	if strings.TrimSpace(c.Events) == "" {
		return webhook.EventTypes
	}
	var out []string
	for t := range strings.SplitSeq(c.Events, ",") {
		out = append(out, strings.TrimSpace(t))
	}
	return out
}

func (c webhooksConfig) dispatch() webhook.Config {
	return webhook.Config{AllowPrivate: c.AllowPrivate, RetryFor: c.RetryFor, Timeout: c.Timeout, Concurrency: c.Concurrency}
}

func (c webhooksConfig) validate() error {
	if c.Timeout <= 0 || c.Concurrency <= 0 {
		return fmt.Errorf("%w: --webhook-timeout and --webhook-concurrency must be positive", errUsage)
	}
	if err := c.dispatch().Validate(); err != nil {
		return fmt.Errorf("%w: --webhook-*: %v", errUsage, err)
	}
	if c.URL == "" {
		if c.Secret != "" || c.Events != "" || c.Batch {
			return fmt.Errorf("%w: AMSG_WEBHOOK_SECRET, --webhook-events and --webhook-batch need --webhook-url", errUsage)
		}
		return nil
	}
	if _, err := webhook.ParseSecret(c.Secret); err != nil {
		return fmt.Errorf("%w: --webhook-url needs AMSG_WEBHOOK_SECRET: %v (whsec_ and the output of openssl rand -base64 32 make one)", errUsage, err)
	}
	if err := webhook.CheckEventTypes(c.events()); err != nil {
		return fmt.Errorf("%w: --webhook-events: %v", errUsage, err)
	}
	return nil
}

// newWebhooks builds the webhook sender and makes the AMSG_WEBHOOK_URL
// endpoint what the configuration says: registered, replaced, or removed
// when the variable is gone.
func (s *server) newWebhooks(ctx context.Context) error {
	c := s.cfg.Webhooks
	if c.URL == "" {
		if err := s.store.DeleteWebhookEndpoint(ctx, api.EnvWebhookID); err != nil && !errors.Is(err, store.ErrWebhookNotFound) {
			return err
		}
	} else {
		if err := (webhook.URLPolicy{AllowPrivate: c.AllowPrivate}).Check(ctx, c.URL); err != nil {
			return &configError{fmt.Errorf("--webhook-url: %w", err)}
		}
		if _, err := s.store.PutWebhookEndpoint(ctx, store.WebhookEndpoint{ID: api.EnvWebhookID, URL: c.URL, Events: c.events(),
			Secret: c.Secret, Batch: c.Batch}); err != nil {
			return err
		}
	}
	cfg := c.dispatch()
	// The heartbeat campaigns for it every beat (cluster.go), so this
	// instance keeps it as long as it runs; a dead one's passes to another
	// within the ttl. The sender reads the decision every poll.
	leader := s.store.Leader(webhooksLeader, max(missedHeartbeats*s.cfg.Cluster.Heartbeat, missedHeartbeats*webhook.DefaultPollInterval))
	s.webhooksLeadership = scheduler.NewLeadership(leader, leadershipHold*s.cfg.Cluster.Heartbeat, s.now)
	cfg.Leader, cfg.Now, cfg.Logger = s.webhooksLeadership, s.now, s.log
	var err error
	s.webhooks, err = webhook.New(s.store, cfg)
	return err
}

// runWebhooks sends webhooks until ctx ends, then gives up the leadership.
func (s *server) runWebhooks(ctx context.Context) {
	s.webhooks.Run(ctx)
	if err := s.webhooksLeadership.Release(); err != nil {
		s.log.Warn("releasing the webhook leadership failed", "err", err)
	}
}
