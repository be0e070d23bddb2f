package main

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startPgBouncer runs Debian's pgbouncer in transaction mode in front of
// the database of direct (a test schema's URL, whose search_path it sets on
// every server connection), listening on a unix socket only, and returns
// the URL through it. It stops when the test ends.
func startPgBouncer(t *testing.T, direct string) string {
	t.Helper()
	pgbouncer := requireTool(t, "pgbouncer")
	cfg, err := pgx.ParseConfig(direct)
	if err != nil {
		t.Fatal(err)
	}
	// pgbouncer refuses to run as root; as root it runs as postgres, which
	// must reach its files.
	dir, err := os.MkdirTemp("", "amsg-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	const port = 6432
	ini := fmt.Sprintf(`[databases]
amsg = host=%s port=%d dbname=%s user=%s connect_query='SET search_path TO %s'

[pgbouncer]
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s/users.txt
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
pidfile = %s/pgbouncer.pid
`, cfg.Host, cfg.Port, cfg.Database, cfg.User, cfg.RuntimeParams["search_path"], port, dir, dir, dir)
	for name, text := range map[string]string{"pgbouncer.ini": ini, "users.txt": fmt.Sprintf("%q \"\"\n", cfg.User)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		args = append([]string{"-u", "postgres"}, args...)
	}
	cmd := exec.Command(pgbouncer, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Its log is shown when the test fails.
	var logLines []string
	up, logged := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "process up") {
				select {
				case <-up:
				default:
					close(up)
				}
			}
			logLines = append(logLines, sc.Text())
		}
	}()
	done := make(chan struct{})
	go func() { <-logged; _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("pgbouncer's log:\n%s", strings.Join(logLines, "\n"))
		}
	})
	select {
	case <-up:
	case <-done:
		t.Fatal("pgbouncer exited before it was up")
	case <-time.After(20 * time.Second):
		t.Fatal("pgbouncer was not up within 20 s")
	}
	return (&url.URL{Scheme: "postgres", User: url.User(cfg.User), Path: "/amsg",
		RawQuery: url.Values{"host": {dir}, "port": {fmt.Sprint(port)}}.Encode()}).String()
}

// Issue 23, problem 6: through PgBouncer in transaction mode amsg started,
// then every tick failed on its prepared statements and leadership sat on a
// pooled connection. Without a direct URL it now refuses in one line that
// names the pooler and the fix.
func TestThroughPgBouncerWithoutADirectURLRefuses(t *testing.T) {
	c := newCluster(t)
	pooled := startPgBouncer(t, c.url)
	code, _, stderr := runAmsg(t, append(append([]string{}, c.env...), "AMSG_DATABASE_URL="+pooled, "AMSG_ADDR=127.0.0.1:0"), "serve")
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 ||
		!strings.Contains(stderr, "PgBouncer") || !strings.Contains(stderr, "AMSG_DATABASE_DIRECT_URL") {
		t.Errorf("serve through PgBouncer alone: exit %d, want 2 and one line naming the pooler and the fix\n%s", code, stderr)
	}
}

// With AMSG_DATABASE_DIRECT_URL, two instances through PgBouncer in
// transaction mode deliver a burst once each, with no prepared statement
// of theirs on a pooled session.
func TestTwoInstancesThroughPgBouncerDeliver(t *testing.T) {
	c := newCluster(t, "AMSG_TICK=200ms")
	pooled := startPgBouncer(t, c.url)
	st := c.open(t)
	const users, perUser = 10, 10
	c.burst(t, st, users, perUser)
	through := []string{"AMSG_DATABASE_URL=" + pooled, "AMSG_DATABASE_DIRECT_URL=" + c.url}
	a, b := c.start(t, through...), c.start(t, through...)
	want := c.fireAll(t)
	c.waitTasksGone(t, c.raw(t), time.Minute)
	seen := c.deliveredIDs(t)
	for id, n := range seen {
		if !want[id] || n != 1 {
			t.Errorf("message id %s pushed %d times (expected: %v)", id, n, want[id])
		}
	}
	if len(seen) != users*perUser {
		t.Errorf("%d distinct ids pushed, want %d", len(seen), users*perUser)
	}
	for _, p := range []*amsgProcess{a, b} {
		if lines := p.Logs("prepared statement"); len(lines) > 0 {
			t.Errorf("an instance logged %v", lines[0])
		}
		if lines := p.Logs("failed"); len(lines) > 0 {
			t.Errorf("an instance logged %v", lines[0])
		}
	}
}
