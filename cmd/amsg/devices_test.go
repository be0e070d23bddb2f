package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestDeviceMaxSilenceConfig(t *testing.T) {
	c, err := parseServeConfig(nil, env(nil), io.Discard)
	if err != nil || c.Devices.MaxSilence != 60*24*time.Hour {
		t.Fatalf("default %s, %v", c.Devices.MaxSilence, err)
	}
	c, err = parseServeConfig(nil, env(map[string]string{"AMSG_DEVICE_MAX_SILENCE": "720h"}), io.Discard)
	if err != nil || c.Devices.MaxSilence != 720*time.Hour {
		t.Fatalf("env twin: %s, %v", c.Devices.MaxSilence, err)
	}
	_, err = parseServeConfig([]string{"--device-max-silence", "1h"}, env(nil), io.Discard)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--device-max-silence must be at least 24h") {
		t.Fatalf("too short: %v", err)
	}
}
