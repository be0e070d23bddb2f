package main

import (
	"context"
	"flag"
	"fmt"
	"time"
)

// devicesConfig holds the liveness limit of push devices.
type devicesConfig struct {
	MaxSilence time.Duration
}

// defaultDeviceMaxSilence is ntfy's default: a device that neither opened
// the page nor reported a push for this long is taken for dead (iOS revokes
// subscriptions silently, and Apple still answers 2xx for them).
const defaultDeviceMaxSilence = 60 * 24 * time.Hour

func (c *devicesConfig) register(fs *flag.FlagSet) {
	fs.DurationVar(&c.MaxSilence, "device-max-silence", defaultDeviceMaxSilence,
		"a push device not seen for this long (page opened, push reported by its service worker, subscription registered) is removed")
}

func (c devicesConfig) validate() error {
	if c.MaxSilence < 24*time.Hour {
		return fmt.Errorf("%w: --device-max-silence must be at least 24h, got %s", errUsage, c.MaxSilence)
	}
	return nil
}

// expireSilentDevices removes the devices silent for longer than the limit.
func (s *server) expireSilentDevices(ctx context.Context) {
	n, err := s.store.ExpireSilentDevices(ctx, time.Now().Add(-s.cfg.Devices.MaxSilence))
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("expiring silent push devices failed", "err", err)
	case n > 0:
		s.log.Info("expired silent push devices", "devices", n, "max_silence", s.cfg.Devices.MaxSilence.String())
	}
}
