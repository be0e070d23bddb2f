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
	// A test schema's search path is set on every server connection.
	connect := ""
	if schema := cfg.RuntimeParams["search_path"]; schema != "" {
		connect = " connect_query='SET search_path TO " + schema + "'"
	}
	ini := fmt.Sprintf(`[databases]
amsg = host=%s port=%d dbname=%s user=%s%s

[pgbouncer]
listen_port = %d
unix_socket_dir = %s
auth_type = trust
auth_file = %s/users.txt
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
pidfile = %s/pgbouncer.pid
admin_users = %s
`, cfg.Host, cfg.Port, cfg.Database, cfg.User, connect, port, dir, dir, dir, cfg.User)
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

// pgbouncerTransactions is how many transactions PgBouncer at pooled has
// run for its database amsg (SHOW STATS on its admin console): the proof
// that amsg's queries went through it.
func pgbouncerTransactions(t *testing.T, pooled string) int64 {
	t.Helper()
	cfg, err := pgx.ParseConfig(strings.Replace(pooled, "/amsg?", "/pgbouncer?", 1))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), "SHOW STATS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		// The simple protocol answers in text.
		row := map[string]string{}
		for i, f := range rows.FieldDescriptions() {
			row[f.Name] = string(rows.RawValues()[i])
		}
		if row["database"] == "amsg" {
			var n int64
			if _, err := fmt.Sscan(row["total_xact_count"], &n); err != nil {
				t.Fatalf("SHOW STATS: total_xact_count %v: %v", row["total_xact_count"], err)
			}
			return n
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatal("SHOW STATS has no row of the database amsg")
	return 0
}

// listeners counts the server sessions whose last statement was a LISTEN
// on the task channel of c's schema.
func (c *cluster) listeners(t *testing.T) int {
	t.Helper()
	cfg, err := pgx.ParseConfig(c.url)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.raw(t).QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %' AND strpos(query, $1) > 0`,
		cfg.RuntimeParams["search_path"]+".amsg_tasks").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// deliversOnceEach fires the burst c.burst inserted and checks that every
// occurrence was pushed exactly once, and that no instance logged a failure
// or a prepared statement.
func (c *cluster) deliversOnceEach(t *testing.T, count int, instances ...*amsgProcess) {
	t.Helper()
	want := c.fireAll(t)
	c.waitTasksGone(t, c.raw(t), time.Minute)
	seen := c.deliveredIDs(t)
	for id, n := range seen {
		if !want[id] || n != 1 {
			t.Errorf("message id %s pushed %d times (expected: %v)", id, n, want[id])
		}
	}
	if len(seen) != count {
		t.Errorf("%d distinct ids pushed, want %d", len(seen), count)
	}
	for _, p := range instances {
		for _, bad := range []string{"prepared statement", "failed"} {
			if lines := p.Logs(bad); len(lines) > 0 {
				t.Errorf("an instance logged %v", lines[0])
			}
		}
	}
}

// With AMSG_DATABASE_DIRECT_URL, two instances through PgBouncer in
// transaction mode deliver a burst once each, with no prepared statement
// of theirs on a pooled session, their transactions going through it.
func TestTwoInstancesThroughPgBouncerDeliver(t *testing.T) {
	c := newCluster(t, "AMSG_TICK=200ms")
	pooled := startPgBouncer(t, c.url)
	st := c.open(t)
	const users, perUser = 10, 10
	c.burst(t, st, users, perUser)
	through := []string{"AMSG_DATABASE_URL=" + pooled, "AMSG_DATABASE_DIRECT_URL=" + c.url}
	a, b := c.start(t, through...), c.start(t, through...)
	before := pgbouncerTransactions(t, pooled)
	c.deliversOnceEach(t, users*perUser, a, b)
	// The writes of many pushes share one transaction (group commit): at
	// least one went through PgBouncer, the instances' only path for data.
	if after := pgbouncerTransactions(t, pooled); after == before {
		t.Errorf("PgBouncer ran no transaction while %d pushes were delivered", users*perUser)
	}
	for _, p := range []*amsgProcess{a, b} {
		if lines := p.Logs("poll-only"); len(lines) > 0 {
			t.Errorf("an instance with a direct URL logged %v", lines[0])
		}
	}
	if n := c.listeners(t); n != 2 {
		t.Errorf("%d sessions LISTEN for the two instances, want 2 on the direct URL", n)
	}
}

// Issue 23, problem 6, without a direct URL: through PgBouncer in
// transaction mode alone amsg started, then every tick failed on its
// prepared statements and leadership sat on a pooled connection. Now an
// instance that finds the pooler (and one told AMSG_DATABASE_POOLER) runs
// poll-only: they deliver a burst once each, one of them leads by a lease,
// and when the leader is killed the other takes the lease over.
func TestTwoInstancesThroughPgBouncerPollOnly(t *testing.T) {
	// A lease of 3 beats of 1 s: a stalled renewal on a busy machine does
	// not pass the lead while the leader lives.
	c := newCluster(t, "AMSG_TICK=200ms", "AMSG_INSTANCE_HEARTBEAT=1s")
	pooled := startPgBouncer(t, c.url)
	st := c.open(t)
	const users, perUser = 10, 10
	c.burst(t, st, users, perUser)
	a := c.start(t, "AMSG_DATABASE_URL="+pooled)
	if line := a.WaitLog(t, "poll-only", 10*time.Second); line["level"] != "WARN" || !strings.Contains(line["msg"].(string), "AMSG_DATABASE_POOLER") {
		t.Errorf("an instance that found the pooler logged %v, want a warning naming the settings", line)
	}
	if line := a.WaitLog(t, "housekeeping leadership", 10*time.Second); line["leads"] != true {
		t.Fatalf("the first instance does not lead: %v", line)
	}
	b := c.start(t, "AMSG_DATABASE_URL="+pooled, "AMSG_DATABASE_POOLER=transaction")
	if line := b.WaitLog(t, "poll-only", 10*time.Second); line["level"] != "INFO" {
		t.Errorf("an instance told of the pooler logged %v, want information", line)
	}
	if line := b.WaitLog(t, "housekeeping leadership", 10*time.Second); line["leads"] != false {
		t.Fatalf("a second instance leads beside the first: %v", line)
	}
	before := pgbouncerTransactions(t, pooled)
	c.deliversOnceEach(t, users*perUser, a, b)
	// The writes of many pushes share one transaction (group commit): at
	// least one went through PgBouncer, the instances' only path for data.
	if after := pgbouncerTransactions(t, pooled); after == before {
		t.Errorf("PgBouncer ran no transaction while %d pushes were delivered", users*perUser)
	}
	if n := c.listeners(t); n != 0 {
		t.Errorf("%d sessions LISTEN in poll-only mode", n)
	}
	a.Kill(t)
	if line := b.WaitLogs(t, "housekeeping leadership", 2, 30*time.Second)[1]; line["leads"] != true {
		t.Errorf("after the leader died the survivor logged %v", line)
	}
}
