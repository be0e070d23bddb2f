package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"amsg/push"
)

// webPushVersion is the node library the issue measures against.
const webPushVersion = "3.6.7"

//go:embed send.js
var sendScript []byte

// errNoNode reports that node or npm is missing.
var errNoNode = errors.New("node and npm are needed for the node web-push side (install Node.js 18 or newer with npm, or pass --skip-node)")

// webPushDir returns the directory web-push is installed in, outside the
// repository: ${XDG_CACHE_HOME:-~/.cache}/amsg-deliverybench/web-push-<version>.
func webPushDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding a cache directory for web-push: %w", err)
	}
	return filepath.Join(cache, "amsg-deliverybench", "web-push-"+webPushVersion), nil
}

// installWebPush installs web-push@3.6.7 with npm unless it is there
// already, and returns its node_modules directory.
func installWebPush(ctx context.Context, log func(string, ...any)) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", errNoNode
	}
	dir, err := webPushDir()
	if err != nil {
		return "", err
	}
	modules := filepath.Join(dir, "node_modules")
	if installedVersion(modules) == webPushVersion {
		return modules, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errNoNode
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	log("installing web-push@%s with npm into %s", webPushVersion, dir)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", dir, "--no-audit", "--no-fund",
		"--no-save", "web-push@"+webPushVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install web-push@%s: %w\n%s", webPushVersion, err, out)
	}
	if v := installedVersion(modules); v != webPushVersion {
		return "", fmt.Errorf("npm installed web-push %q into %s, want %s", v, modules, webPushVersion)
	}
	return modules, nil
}

// installedVersion is the version of web-push in modules, or "".
func installedVersion(modules string) string {
	b, err := os.ReadFile(filepath.Join(modules, "web-push", "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return ""
	}
	return pkg.Version
}

// nodeConfig is send.js's input.
type nodeConfig struct {
	Subscriptions []push.Subscription `json:"subscriptions"`
	N             int                 `json:"n"`
	Concurrency   int                 `json:"concurrency"`
	PublicKey     string              `json:"publicKey"`
	PrivateKey    string              `json:"privateKey"`
	Subject       string              `json:"subject"`
	Payload       string              `json:"payload"`
}

// nodeResult is send.js's output line.
type nodeResult struct {
	Version    string `json:"version"`
	Sent       int    `json:"sent"`
	Failed     int    `json:"failed"`
	FirstError string `json:"firstError"`
	ElapsedNs  int64  `json:"elapsedNs"`
	CPUMicros  int64  `json:"cpuMicros"`
}

// runNode runs send.js with cfg in dir, pinned to cpu, trusting the push
// service's certificate, and returns what it reports.
func runNode(ctx context.Context, sup *supervisor, dir, modules, certFile string, cpu int, cfg nodeConfig) (nodeResult, error) {
	script, config := filepath.Join(dir, "send.js"), filepath.Join(dir, "send-config.json")
	b, err := json.Marshal(cfg)
	if err != nil {
		return nodeResult{}, err
	}
	if err := os.WriteFile(script, sendScript, 0o644); err != nil {
		return nodeResult{}, err
	}
	if err := os.WriteFile(config, b, 0o600); err != nil {
		return nodeResult{}, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nodeResult{}, errNoNode
	}
	var out bytes.Buffer
	c, _, err := sup.start(childSpec{name: "node web-push", cpu: cpu, path: node, args: []string{script, config},
		env: []string{"NODE_PATH=" + modules, "NODE_EXTRA_CA_CERTS=" + certFile}, stdout: &out})
	if err != nil {
		return nodeResult{}, err
	}
	select {
	case <-ctx.Done():
		return nodeResult{}, ctx.Err()
	case <-c.done:
	}
	if c.err != nil {
		return nodeResult{}, fmt.Errorf("node web-push: %w\n%s", c.err, c.Tail())
	}
	var res nodeResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return nodeResult{}, fmt.Errorf("node web-push printed %q: %w", out.String(), err)
	}
	if res.Failed > 0 {
		return res, fmt.Errorf("node web-push: %d of %d sends failed, the first: %s", res.Failed, cfg.N, res.FirstError)
	}
	return res, nil
}
