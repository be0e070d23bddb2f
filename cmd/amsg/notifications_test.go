package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestNotificationsConfig(t *testing.T) {
	c, err := parseServeConfig(nil, env(nil), io.Discard)
	if err != nil || c.Notifications.DeviceMaxSilence != 60*24*time.Hour || c.Notifications.PublicURL != "" {
		t.Fatalf("defaults %+v, %v", c.Notifications, err)
	}
	c, err = parseServeConfig(nil, env(map[string]string{
		"AMSG_DEVICE_MAX_SILENCE": "720h", "AMSG_PUBLIC_URL": "https://amsg.example.com",
	}), io.Discard)
	if err != nil || c.Notifications.DeviceMaxSilence != 720*time.Hour || c.Notifications.PublicURL != "https://amsg.example.com" {
		t.Fatalf("env twins: %+v, %v", c.Notifications, err)
	}
	for _, bad := range []struct{ args []string }{
		{[]string{"--device-max-silence", "1h"}},
		{[]string{"--public-url", "amsg.example.com"}},
		{[]string{"--public-url", "ftp://amsg.example.com"}},
	} {
		_, err = parseServeConfig(bad.args, env(nil), io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), bad.args[0]) {
			t.Errorf("%q: %v", bad.args, err)
		}
	}
}
