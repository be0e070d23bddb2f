// Command amsg is a self-hosted Web Push active-messaging server.
//
//	amsg serve     run the server (amsg serve -h lists its settings)
//	amsg vapid     print a fresh VAPID key pair as environment lines
//	amsg health    exit 0 when the server at AMSG_ADDR answers /healthz
//	amsg version   print the version
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"amsg/push/webpush"
)

// version is set at build time with -ldflags "-X main.version=…"; otherwise
// it comes from the module's build information.
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

const usage = `Usage: amsg <command> [flags]

Commands:
  serve     run the server (amsg serve -h lists its settings)
  vapid     print a fresh VAPID key pair as environment lines
  health    exit 0 when the server at AMSG_ADDR answers /healthz
  version   print the version
`

// run is the whole program; it returns the exit status: 0 success, 1 a
// runtime failure, 2 a usage or configuration error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(ctx, args[1:], stderr, getenv)
	case "vapid":
		public, private, err := webpush.GenerateVAPIDKeys()
		if err != nil {
			fmt.Fprintf(stderr, "amsg vapid: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "AMSG_VAPID_PUBLIC_KEY=%s\nAMSG_VAPID_PRIVATE_KEY=%s\n", public, private)
		return 0
	case "health":
		return runHealth(ctx, getenv, stderr)
	case "version", "-version", "--version":
		fmt.Fprintf(stdout, "amsg %s\n", buildVersion())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "amsg: unknown command %q\n%s", args[0], usage)
	return 2
}

// buildVersion is the version given at link time, else the module version
// and VCS revision Go recorded in the binary.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

// runHealth asks the local server for /healthz; it is the container's
// HEALTHCHECK, which has no curl.
func runHealth(ctx context.Context, getenv func(string) string, stderr io.Writer) int {
	addr := getenv("AMSG_ADDR")
	if addr == "" {
		addr = "localhost:8080"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "amsg health: AMSG_ADDR=%q: %v\n", addr, err)
		return 2
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		fmt.Fprintf(stderr, "amsg health: %v\n", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "amsg health: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "amsg health: %s\n", resp.Status)
		return 1
	}
	return 0
}
