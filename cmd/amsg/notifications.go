package main

import (
	"flag"
	"fmt"
	"net/url"
	"time"
)

// notificationsConfig holds what makes notifications keep working on real
// phones: the page's public URL, which Declarative Web Push messages link
// to, and the liveness limit of push devices.
type notificationsConfig struct {
	PublicURL        string
	DeviceMaxSilence time.Duration
}

// defaultDeviceMaxSilence is ntfy's default: a device that neither opened
// the page nor reported a push for this long is taken for dead (iOS revokes
// subscriptions silently, and Apple still answers 2xx for them).
const defaultDeviceMaxSilence = 60 * 24 * time.Hour

func (c *notificationsConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.PublicURL, "public-url", "",
		"the https URL users open amsg's page at (https://amsg.example.com); content pushes then also are Declarative Web Push messages that open the conversation there, which Safari and iOS show even without a service worker")
	fs.DurationVar(&c.DeviceMaxSilence, "device-max-silence", defaultDeviceMaxSilence,
		"a push device not seen for this long (page opened, push reported by its service worker, subscription registered) is removed")
}

func (c notificationsConfig) validate() error {
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return fmt.Errorf("%w: --public-url must be an absolute http(s) URL such as https://amsg.example.com, got %q", errUsage, c.PublicURL)
		}
	}
	if c.DeviceMaxSilence < 24*time.Hour {
		return fmt.Errorf("%w: --device-max-silence must be at least 24h, got %s", errUsage, c.DeviceMaxSilence)
	}
	return nil
}
