package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be the push service, as the benchmark
// re-executes itself for it.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == pushServiceCommand {
		os.Exit(runMain(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestSmoke runs the whole benchmark small, without node: the real amsg
// binary schedules 50 fixed tasks through the encrypted API and the push
// service in its own process verifies and decrypts all 50.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs amsg")
	}
	profiles := t.TempDir()
	report := runReport(t, 2*time.Minute, "-short", "--skip-node", "--scenario", "latency", "-n", "50", "--rate", "100",
		"--go-profile", profiles)
	reportHas(t, report,
		`amsg \(scheduled\) +50 pushes in +[0-9.]+ s`,
		`due-to-delivered \(100 tasks/s\): first \S+, p50 \S+, p99 \S+, max \S+; runnable but waiting for a CPU [0-9]+% of a core; [0-9.]+ commits/push`,
		`amsg peak RSS: [1-9][0-9]* MiB`)
	if strings.Contains(report, "node web-push") && !strings.Contains(report, "skipping") {
		t.Errorf("node ran despite --skip-node:\n%s", report)
	}
	// --go-profile: amsg's CPU profile (gzipped protocol buffers) and
	// execution trace, taken through its --debug-addr.
	cpu, err := os.ReadFile(filepath.Join(profiles, "amsg-round1-instance1.cpu.pprof"))
	if err != nil || !bytes.HasPrefix(cpu, []byte{0x1f, 0x8b}) {
		t.Errorf("no CPU profile (%d bytes, %v)", len(cpu), err)
	}
	trace, err := os.ReadFile(filepath.Join(profiles, "amsg-round1-instance1.trace"))
	if err != nil || !bytes.HasPrefix(trace, []byte("go 1.")) {
		t.Errorf("no execution trace (%d bytes, %v)", len(trace), err)
	}
}

// TestSmokePostgres runs one instance, then two, on a database the
// benchmark creates on AMSG_TEST_DATABASE_URL's server, and reports the
// server's commits and CPU and what the second instance adds.
func TestSmokePostgres(t *testing.T) {
	url := os.Getenv("AMSG_TEST_DATABASE_URL")
	if testing.Short() || url == "" {
		t.Skip("builds and runs amsg on PostgreSQL: set AMSG_TEST_DATABASE_URL")
	}
	report := runReport(t, 3*time.Minute, "-short", "--skip-node", "-n", "40", "--database-url", url, "--instances", "2", "--coordination")
	reportHas(t, report,
		`scenario compare: 40 pushes, .* amsg instance\(s\), [0-9]+ CPUs, [^\n]*, PostgreSQL on CPUs [0-9][0-9,-]*\n`,
		`1 instance\(s\): due-to-delivered \(burst\): .*; [0-9.]*[1-9][0-9.]* commits/push; [0-9.]+ read and [0-9.]+ write syscalls/push; PostgreSQL CPU [0-9.]+ s`,
		`2 instance\(s\): due-to-delivered \(burst\): .*; [0-9.]*[1-9][0-9.]* commits/push; [0-9.]+ read and [0-9.]+ write syscalls/push; PostgreSQL CPU [0-9.]+ s = [0-9]+ µs/push( \([a-z ]+ [0-9]+ in [1-9][0-9]*(, [a-z ]+ [0-9]+ in [1-9][0-9]*)*\))?, and`,
		`coordination: 2 instances against 1: [-+][0-9]+ µs amsg CPU/push, [-+][0-9]+ µs database CPU/push`)
}

// runReport runs the benchmark with args and returns its report.
func runReport(t *testing.T, timeout time.Duration, args ...string) string {
	t.Helper()
	o, err := parseOptions(args, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out strings.Builder
	if err := run(ctx, o, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return out.String()
}

// reportHas checks that report matches each of patterns.
func reportHas(t *testing.T, report string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(report) {
			t.Errorf("the report lacks %s:\n%s", p, report)
		}
	}
}
