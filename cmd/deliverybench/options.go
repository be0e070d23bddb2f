package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// The scenarios the benchmark knows, chosen with --scenario.
const (
	scenarioCompare = "compare" // node web-push, then amsg, N pushes each, and their ratio
	scenarioBacklog = "backlog" // amsg alone: a large backlog all due at one instant
	scenarioLatency = "latency" // amsg alone: tasks falling due at a steady rate
)

// nodeConcurrency is the fixed number of sends node keeps in flight.
const nodeConcurrency = 32

// options is everything one run is told on the command line.
type options struct {
	Scenario    string
	Tasks       int // pushes (tasks) to deliver; set by the scenario when 0
	Users       int // users, one device each; set by the scenario when 0
	Rate        int // latency scenario: tasks falling due per second
	Duration    time.Duration
	DatabaseURL string // passed to amsg as AMSG_DATABASE_URL
	Instances   int
	Rounds      int      // node then amsg, this many times, for medians on a noisy machine
	AmsgBinary  string   // a prebuilt amsg; empty builds ./cmd/amsg
	AmsgEnv     []string // extra KEY=VALUE for every amsg serve
	SkipNode    bool
	Pin         bool
	Lead        time.Duration // time from the last insert to the due time; 0 estimates it
	Timeout     time.Duration
	Inserters   int // API requests in flight while registering devices and scheduling
	Keep        bool
	Short       bool
	Perf        bool   // sample amsg with perf during delivery
	GoProfile   string // a directory: Go CPU profiles and execution traces of amsg during delivery
	// Coordination runs one instance, then Instances, in each round, and
	// reports what the others add per push.
	Coordination bool
}

// envList collects a repeated KEY=VALUE flag.
type envList []string

func (l *envList) String() string { return strings.Join(*l, " ") }

func (l *envList) Set(v string) error {
	name, _, ok := strings.Cut(v, "=")
	if !ok || name == "" || !strings.HasPrefix(name, "AMSG_") {
		return fmt.Errorf("want AMSG_NAME=value, got %q", v)
	}
	*l = append(*l, v)
	return nil
}

const usageHead = `Usage: deliverybench [flags]
       (from the repository root: go run ./cmd/deliverybench [flags])

Measures how fast amsg delivers scheduled Web Push messages, against node's
web-push@3.6.7, on this machine, in one run:

  1. starts a push service that verifies every VAPID token and decrypts every
     message (push/pushtest behind TLS on loopback) in its own process, pinned
     to CPU 0 with taskset when the machine has two CPUs or more;
  2. compare scenario: installs web-push@3.6.7 with npm into
     ${XDG_CACHE_HOME:-~/.cache}/amsg-deliverybench (once) and lets node send
     N pushes at concurrency 32 to the push service's subscriptions, pinned to
     CPU 1;
  3. builds ./cmd/amsg, runs "amsg serve" on a fresh data directory (pinned to
     CPU 1), registers one device per user and schedules N fixed tasks through
     the encrypted API, all due at one instant T, and times from T until the
     push service has verified and decrypted all N pushes.

It prints each side's rate, CPU seconds and CPU per push, the push service's
CPU, and amsg's rate over node's (the delivery-engine goal is 5x or more).
On a shared machine the rates are noisy: --rounds 3 repeats node then amsg
three times (a fresh amsg each time) and prints medians and ranges.

Scenarios:
  compare   node, then amsg, N pushes each (default N 3000, 100 users)
  backlog   amsg only: N tasks due at one instant (default 100000, 1000 users);
            reports the time until all arrived and amsg's peak RSS
  latency   amsg only, a steady trickle: --rate tasks fall due each second
            for --duration (default 1000/s for 20s, 100 users)

Every amsg phase reports due-to-delivered percentiles (measured by the push
service against the due time each message's text carries), how long amsg's
threads waited for a CPU while runnable (a busy machine's share), and the
database's commits per push: the SQLite writer's transactions (amsg_store_commits_total),
or on PostgreSQL pg_stat_database's xact_commit of a database created for the
phase, with the CPU of the server's processes (read from /proc, so the server
must run on this machine), and amsg's read and write system calls per push
(/proc/pid/io: the sockets' and, on SQLite, the pages read back and the
WAL's and checkpoint's writes; unlike CPU time, they do not move with the
machine's load). --instances N starts N amsg serve processes on
the one database; --coordination runs one, then N, and prints what the
others add per push.

Needs: Go, and for compare node and npm (or --skip-node). taskset (util-linux)
is optional. Temporary files go to a directory under $TMPDIR, removed at the
end unless --keep.

Flags:
`

// parseOptions parses the command line. It returns flag.ErrHelp after
// writing the usage to stderr when asked for help.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var env envList
	fs := flag.NewFlagSet("deliverybench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageHead)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.Scenario, "scenario", scenarioCompare, "compare, backlog or latency")
	fs.IntVar(&o.Tasks, "n", 0, "pushes to deliver (default by scenario: 3000, 100000, rate x duration)")
	fs.IntVar(&o.Users, "users", 0, "users, one device each (default by scenario: 100, 1000, 100)")
	fs.IntVar(&o.Rate, "rate", 1000, "latency scenario: tasks falling due per second")
	fs.DurationVar(&o.Duration, "duration", 20*time.Second, "latency scenario: how long tasks keep falling due")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "passed to every amsg serve as AMSG_DATABASE_URL (empty: SQLite in a fresh data directory)")
	fs.IntVar(&o.Instances, "instances", 1, "amsg serve processes on one database (more than 1 needs --database-url)")
	fs.BoolVar(&o.Coordination, "coordination", false, "with --instances N > 1: run one amsg instance, then N, each round, and report what the other instances add per push")
	fs.IntVar(&o.Rounds, "rounds", 1, "repeat node then amsg this many times (a fresh amsg each time) and print medians")
	fs.StringVar(&o.AmsgBinary, "amsg-bin", "", "use this amsg binary instead of building ./cmd/amsg")
	fs.Var(&env, "amsg-env", "extra AMSG_NAME=value for amsg serve (repeatable), e.g. AMSG_TASK_CONCURRENCY=32")
	fs.BoolVar(&o.SkipNode, "skip-node", false, "compare scenario: measure amsg only")
	fs.BoolVar(&o.Pin, "pin", true, "pin the push service to CPU 0 and the measured side to CPU 1 with taskset")
	fs.DurationVar(&o.Lead, "lead", 0, "wait between starting the inserts and the due time (0: estimated from the device registrations)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up on a phase after this long")
	fs.IntVar(&o.Inserters, "inserters", 8, "API requests in flight while registering devices and scheduling tasks")
	fs.BoolVar(&o.Perf, "perf", false, "sample amsg, and on PostgreSQL the server's processes, with Linux perf from the due time to the last arrival and print their top functions (adds a few per cent of CPU)")
	fs.StringVar(&o.GoProfile, "go-profile", "", "write a Go CPU profile and an execution trace of each amsg instance, taken through its --debug-addr from the due time (the trickle's --duration, or 2 s), into this directory")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary directory (data, logs, certificate) and print its path")
	fs.BoolVar(&o.Short, "short", false, "smoke run: 50 pushes for 10 users; node is skipped when npm is missing")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0))
	}
	o.AmsgEnv = env
	o.applyDefaults()
	return o, o.validate()
}

// applyDefaults fills the sizes the scenario decides.
func (o *options) applyDefaults() {
	tasks, users := 3000, 100
	switch {
	case o.Short:
		tasks, users = 50, 10
	case o.Scenario == scenarioBacklog:
		tasks, users = 100_000, 1000
	case o.Scenario == scenarioLatency:
		tasks = int(int64(o.Rate) * int64(o.Duration) / int64(time.Second))
	}
	if o.Tasks == 0 {
		o.Tasks = tasks
	}
	if o.Users == 0 {
		o.Users = users
	}
}

// errOptions marks a bad command line.
var errOptions = errors.New("bad flags")

func (o options) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errOptions}, args...)...)
	}
	switch {
	case o.Scenario != scenarioCompare && o.Scenario != scenarioBacklog && o.Scenario != scenarioLatency:
		return bad("--scenario must be compare, backlog or latency, got %q", o.Scenario)
	case o.Scenario == scenarioLatency && (o.Rate < 1 || o.Duration <= 0):
		return bad("--rate and --duration must be positive")
	case o.Tasks < 1 || o.Tasks > 10_000_000:
		return bad("--n must be between 1 and 10000000, got %d", o.Tasks)
	case o.Users < 1 || o.Users > o.Tasks:
		return bad("--users must be between 1 and --n (%d), got %d", o.Tasks, o.Users)
	case o.Instances < 1 || o.Instances > 16:
		return bad("--instances must be between 1 and 16, got %d", o.Instances)
	case o.Coordination && o.Instances < 2:
		return bad("--coordination compares one instance with --instances N: give N of 2 or more")
	case o.Instances > 1 && o.DatabaseURL == "":
		return bad("--instances %d needs --database-url: SQLite's data directory belongs to one process", o.Instances)
	case o.Rounds < 1 || o.Rounds > 50:
		return bad("--rounds must be between 1 and 50, got %d", o.Rounds)
	case o.Lead < 0 || o.Timeout <= 0:
		return bad("--lead must not be negative and --timeout must be positive")
	case o.Inserters < 1 || o.Inserters > 256:
		return bad("--inserters must be between 1 and 256, got %d", o.Inserters)
	}
	return nil
}

// runsNode reports whether this run sends with node web-push.
func (o options) runsNode() bool { return o.Scenario == scenarioCompare && !o.SkipNode }
