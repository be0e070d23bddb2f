// Command amsg is a self-hosted Web Push active-messaging server.
//
//	amsg serve     run the server (amsg serve -h lists its settings)
//	amsg vapid     print a fresh VAPID key pair as environment lines
//	amsg token     mint a Bearer token for /instant (AMSG_TOKEN_SIGNING_KEY)
//	amsg send      send a notification to a user (operator API)
//	amsg admin     operator commands: users, devices, tasks, failed, broadcast, delete-user
//	amsg backup    write a consistent copy of the SQLite database
//	amsg restore   replace the SQLite database by a backup, server stopped
//	amsg health    exit 0 when the server at AMSG_ADDR answers /healthz
//	amsg rekey     re-seal the stored data under a new master key
//	amsg migrate   copy a SQLite data directory into PostgreSQL, keys included
//	amsg keys      print the key set of a database as environment lines
//	amsg version   print the version
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"amsg/api"
	"amsg/push/webpush"
)

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
  token     mint a Bearer token for /instant and /continue (amsg token -h)
  send      send a notification to a user (amsg send -h; needs AMSG_ADMIN_TOKEN)
  admin     operator commands: users, devices, tasks, failed, broadcast, delete-user (amsg admin -h)
  backup    write a consistent copy of the SQLite database, online (amsg backup -h)
  restore   replace the SQLite database by a backup, with the server stopped (amsg restore -h)
  health    exit 0 when the server at AMSG_ADDR answers /healthz
  rekey     re-seal the stored data under a new master key (amsg rekey -h)
  migrate   copy a SQLite data directory into PostgreSQL, keys included (amsg migrate -h)
  keys      export: print the key set of a database as environment lines (amsg keys -h)
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
		if status, done := noFlags("amsg vapid", "prints a fresh VAPID key pair as AMSG_VAPID_* environment lines", args[1:], stderr); done {
			return status
		}
		public, private, err := webpush.GenerateVAPIDKeys()
		if err != nil {
			fmt.Fprintf(stderr, "amsg vapid: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "AMSG_VAPID_PUBLIC_KEY=%s\nAMSG_VAPID_PRIVATE_KEY=%s\n", public, private)
		return 0
	case "token":
		return runToken(args[1:], stdout, stderr, getenv)
	case "send":
		return runSend(ctx, args[1:], stdout, stderr, getenv)
	case "admin":
		return runAdmin(ctx, args[1:], stdout, stderr, getenv)
	case "backup":
		return runBackup(ctx, args[1:], stdout, stderr, getenv)
	case "health":
		return runHealth(ctx, args[1:], getenv, stderr)
	case "restore":
		return runRestore(ctx, args[1:], stdout, stderr, getenv)
	case "rekey":
		return runRekey(ctx, args[1:], stdout, stderr, getenv)
	case "migrate":
		return runMigrate(ctx, args[1:], os.Stdin, stdout, stderr, getenv)
	case "keys":
		return runKeys(ctx, args[1:], stdout, stderr, getenv)
	case "version", "-version", "--version":
		if status, done := noFlags("amsg version", "prints the version", args[1:], stderr); done {
			return status
		}
		fmt.Fprintf(stdout, "amsg %s\n", buildVersion())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "amsg: unknown command %q\n%s", args[0], usage)
	return 2
}

// runToken mints a Bearer token signed with AMSG_TOKEN_SIGNING_KEY, for
// clients of /instant when the server requires one.
func runToken(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("amsg token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ttl := fs.Duration("ttl", 30*24*time.Hour, "how long the token is valid")
	subject := fs.String("subject", "", "who the token is for; a user id makes the token proof of that user for the per-user limits")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	key := getenv("AMSG_TOKEN_SIGNING_KEY")
	if key == "" {
		fmt.Fprintln(stderr, "amsg token: set AMSG_TOKEN_SIGNING_KEY to the server's signing key")
		return 2
	}
	token, err := api.SignToken(key, *subject, time.Now(), *ttl)
	if err != nil {
		fmt.Fprintf(stderr, "amsg token: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout, token)
	return 0
}

// noFlags parses the arguments of a command that takes none, so -h prints
// what it does (status 0) and anything else is misuse (status 2).
func noFlags(name, what string, args []string, stderr io.Writer) (status int, done bool) {
	fs := commandFlags(name, fmt.Sprintf("Usage: %s\n\n%s %s.", name, name, what), stderr)
	if status, done := parseFlags(fs, args); done {
		return status, true
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2, true
	}
	return 0, false
}

// runHealth asks a server for /healthz: exit 0 when it answers 200, 1 when
// it answers otherwise or nothing answers. It is the container's
// HEALTHCHECK, which has no curl.
func runHealth(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	fs := commandFlags("amsg health", "Usage: amsg health [--addr HOST:PORT]\n\nExits 0 when the server answers GET /healthz with 200, else 1.", stderr)
	addrEnv := envName("addr")
	addrFlag := fs.String("addr", "", "address of the server (env "+addrEnv+", default "+defaultAddr+")")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	if status, done := parseFlags(fs, args); done {
		return status
	}
	addr := cmp.Or(*addrFlag, getenv(addrEnv), defaultAddr)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "amsg health: address %q: %v\n", addr, err)
		return 2
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
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
