package webhook

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"amsg/store"
)

// Defaults and bounds of Config. A receiver is held to them whatever it
// does: it cannot keep more than Concurrency requests of its endpoint in
// flight, a request longer than Timeout, more than MaxResponseBytes of its
// answer in memory, or amsg following a redirect anywhere.
const (
	DefaultTimeout          = 10 * time.Second
	MaxTimeout              = time.Minute
	DefaultMaxResponseBytes = 64 << 10
	MaxMaxResponseBytes     = 1 << 20
	DefaultConcurrency      = 4
	MaxConcurrency          = 64
	DefaultMaxBatch         = 100
	// DefaultRetryFor is how long a delivery is retried before it is
	// given up: a day, the least the bounds allow, so a receiver down over
	// a night loses nothing.
	DefaultRetryFor    = 24 * time.Hour
	MinRetryFor        = 24 * time.Hour
	MaxRetryFor        = 30 * 24 * time.Hour
	DefaultBaseBackoff = 5 * time.Second
	DefaultMaxBackoff  = time.Hour
	// DefaultPollInterval is how often Run looks for new events and due
	// retries.
	DefaultPollInterval = time.Second
	// fanOutPage bounds the events one fan-out read takes.
	fanOutPage = store.MaxMessageEventsPage
	// reread is how far behind its cursor the fan-out reads again: on
	// PostgreSQL an event may commit after one with a higher Seq
	// (store.MessageEventsAfter), and so be behind the cursor when it
	// appears. Re-read events add nothing twice (one delivery per event and
	// endpoint). 256 rows: on PostgreSQL every row of message_events takes
	// three Seqs (a delivery's events share one row, and a lone event leaves
	// two unused), so the window in Seqs is three times the rows it covers.
	reread = 3 * 256
	// rereadAge bounds the re-read to recent events: a commit is late by
	// seconds, and the deliveries of older events may be pruned already.
	rereadAge = 5 * time.Minute
	// sendPage bounds the due deliveries of one endpoint read at a time.
	sendPage = 100
)

// ErrInvalidConfig reports a setting out of its bounds.
var ErrInvalidConfig = errors.New("webhook: invalid setting")

// Validate reports a setting of c out of its bounds, as New would.
func (c Config) Validate() error { return c.check() }

// check fills the defaults of c's zero fields and refuses absurd settings
// with the bound they break.
func (c *Config) check() error {
	fill := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	fill(&c.Timeout, DefaultTimeout)
	fill(&c.RetryFor, DefaultRetryFor)
	fill(&c.BaseBackoff, DefaultBaseBackoff)
	fill(&c.MaxBackoff, DefaultMaxBackoff)
	fill(&c.PollInterval, DefaultPollInterval)
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	switch {
	case c.Timeout < 0 || c.Timeout > MaxTimeout:
		return fmt.Errorf("%w: timeout %v is outside (0, %v]", ErrInvalidConfig, c.Timeout, MaxTimeout)
	case c.MaxResponseBytes < 0 || c.MaxResponseBytes > MaxMaxResponseBytes:
		return fmt.Errorf("%w: response read cap %d bytes is outside [0, %d]", ErrInvalidConfig, c.MaxResponseBytes, MaxMaxResponseBytes)
	case c.Concurrency < 0 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("%w: concurrency %d is outside [1, %d]", ErrInvalidConfig, c.Concurrency, MaxConcurrency)
	case c.MaxBatch < 0 || c.MaxBatch > store.MaxWebhookDeliveriesPage:
		return fmt.Errorf("%w: batch size %d is outside [1, %d]", ErrInvalidConfig, c.MaxBatch, store.MaxWebhookDeliveriesPage)
	case c.RetryFor < MinRetryFor || c.RetryFor > MaxRetryFor:
		return fmt.Errorf("%w: retry window %v is outside [%v, %v]: a delivery is retried at least a day", ErrInvalidConfig, c.RetryFor, MinRetryFor, MaxRetryFor)
	case c.BaseBackoff < 0 || c.MaxBackoff < c.BaseBackoff || c.MaxBackoff > c.RetryFor:
		return fmt.Errorf("%w: backoff %v to %v must grow and stay within the retry window %v", ErrInvalidConfig, c.BaseBackoff, c.MaxBackoff, c.RetryFor)
	case c.PollInterval < 0 || c.PollInterval > time.Minute:
		return fmt.Errorf("%w: poll interval %v is outside (0, 1m]", ErrInvalidConfig, c.PollInterval)
	}
	return nil
}

// backoff is the wait before try attempts+1: BaseBackoff doubled per try
// made, at most MaxBackoff, jittered so receivers that came back are not
// all called in the same second.
func (c *Config) backoff(attempts int) time.Duration {
	d := c.BaseBackoff
	for i := 0; i < attempts && d < c.MaxBackoff; i++ {
		d *= 2
	}
	return c.Jitter(min(d, c.MaxBackoff))
}

// halfJitter is the default Jitter: uniform in [d/2, d].
func halfJitter(d time.Duration) time.Duration {
	if d < 2 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}
