package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// What the database did during a phase: how many transactions it committed
// (the cost that grows with instances), and on PostgreSQL its processes'
// CPU.
//
// On SQLite the commits are amsg's own count of its writer's transactions
// (the amsg_store_commits_total metric of every instance). On PostgreSQL they
// are pg_stat_database's xact_commit of a database made for the phase, so
// other clients of the server are not counted; its CPU is the sum over the
// server processes that serve that database (its backends, autovacuum
// workers included), the shared background ones (checkpointer, WAL writer,
// …) and the postmaster with the children it reaped (sessions that ended
// during the phase, a pool's surplus connections among them), read from
// /proc: the server must run on this machine for it. The shared processes
// count other databases' work too, and the ended sessions are reported
// apart, with how many sessions the phase's database opened: on a server
// other clients use, they are mostly theirs.

// commitsMetric is amsg's counter of its SQLite writer's commits.
const commitsMetric = "amsg_store_commits_total"

// statsSettle is how long a PostgreSQL backend may keep what it counted
// before reporting it to pg_stat_database (PGSTAT_IDLE_INTERVAL, 10 s, and
// a margin): the scheduling before a phase must be in the count before the
// phase starts.
const statsSettle = 11 * time.Second

// postgresProbe is a connection to the server amsg uses, and the database
// of the current phase.
type postgresProbe struct {
	admin *pgx.Conn // to the database of --database-url
	base  *url.URL
	db    string // the phase's database; "" uses --database-url's as it is
}

// openPostgresProbe connects to the server of databaseURL.
func openPostgresProbe(ctx context.Context, databaseURL string) (*postgresProbe, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("connecting to --database-url: %w", err)
	}
	p := &postgresProbe{admin: conn}
	if u, err := url.Parse(databaseURL); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		p.base = u
	}
	return p, nil
}

func (p *postgresProbe) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p.dropPhaseDatabase(ctx)
	_ = p.admin.Close(ctx)
}

// freshDatabase creates an empty database for a phase and returns the URL
// amsg gets for it. When the URL is not a postgres:// one or the role may
// not create databases, it returns databaseURL itself, and the commits
// counted include every other client of that database.
func (p *postgresProbe) freshDatabase(ctx context.Context, databaseURL string, logf func(string, ...any)) string {
	p.dropPhaseDatabase(ctx)
	if p.base == nil {
		logf("--database-url is not a postgres:// URL: using its database as it is; commits of other clients are counted too")
		return databaseURL
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "deliverybench_" + hex.EncodeToString(suffix)
	if _, err := p.admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		logf("cannot create a database for the phase (%v): using --database-url's as it is; commits of other clients are counted too", err)
		return databaseURL
	}
	p.db = name
	u := *p.base
	u.Path = "/" + name
	return u.String()
}

// dropPhaseDatabase drops the database of the last phase, if any.
func (p *postgresProbe) dropPhaseDatabase(ctx context.Context) {
	if p.db == "" {
		return
	}
	_, _ = p.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+p.db+" WITH (FORCE)")
	p.db = ""
}

// dbName is the database the phase's commits are counted in.
func (p *postgresProbe) dbName(ctx context.Context) (string, error) {
	if p.db != "" {
		return p.db, nil
	}
	var name string
	err := p.admin.QueryRow(ctx, "SELECT current_database()").Scan(&name)
	return name, err
}

// counts reads the phase database's committed transactions and the
// sessions it has had.
func (p *postgresProbe) counts(ctx context.Context) (commits, sessions int64, err error) {
	name, err := p.dbName(ctx)
	if err != nil {
		return 0, 0, err
	}
	err = p.admin.QueryRow(ctx, "SELECT xact_commit, sessions FROM pg_stat_database WHERE datname = $1", name).Scan(&commits, &sessions)
	return commits, sessions, err
}

// serverProcess is one PostgreSQL server process at a reading: its CPU
// time so far and its pg_stat_activity backend_type ("client backend",
// "autovacuum worker", "walwriter", …), which says where a phase's
// database CPU went.
type serverProcess struct {
	cpu  time.Duration
	kind string
}

// processCPU reads the CPU time so far of every server process that
// serves the phase's database or the whole server, by pid, and of the
// sessions that ended (the postmaster's reaped children).
func (p *postgresProbe) processCPU(ctx context.Context) (live map[int]serverProcess, ended time.Duration, err error) {
	name, err := p.dbName(ctx)
	if err != nil {
		return nil, 0, err
	}
	rows, err := p.admin.Query(ctx, "SELECT pid, coalesce(backend_type, '') FROM pg_stat_activity WHERE datname = $1 OR backend_type <> 'client backend'", name)
	if err != nil {
		return nil, 0, err
	}
	type activity struct {
		Pid  int32
		Kind string
	}
	procs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[activity])
	if err != nil {
		return nil, 0, err
	}
	live = make(map[int]serverProcess, len(procs))
	postmaster := 0
	for _, proc := range procs {
		// A backend may end between the query and the read: it is left out.
		if t, parent, err := ownCPU(int(proc.Pid)); err == nil {
			live[int(proc.Pid)] = serverProcess{cpu: t, kind: proc.Kind}
			postmaster = parent
		}
	}
	if postmaster == 0 {
		return nil, 0, fmt.Errorf("none of the server's %d processes is readable in /proc: is PostgreSQL on this machine?", len(procs))
	}
	if ended, err = reapedCPU(postmaster); err != nil {
		return nil, 0, fmt.Errorf("the postmaster: %w", err)
	}
	return live, ended, nil
}

// serverCPUs returns the CPUs the server's postmaster, and so every
// session it starts, may run on.
func (p *postgresProbe) serverCPUs(ctx context.Context) (string, error) {
	var pid int
	if err := p.admin.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return "", err
	}
	_, postmaster, err := ownCPU(pid)
	if err != nil {
		return "", err
	}
	return allowedCPUs(postmaster)
}

// kindCPU is what one kind of server process used in a phase: CPU, and
// how many processes used any (a second instance's pool adds sessions).
type kindCPU struct {
	cpu   time.Duration
	procs int
}

// cpuBetween is the CPU the processes of after used since before, by
// backend_type: the difference for a process in both, all of it for one
// started since. A process that ended in between is not counted.
func cpuBetween(before, after map[int]serverProcess) map[string]kindCPU {
	kinds := make(map[string]kindCPU)
	for pid, p := range after {
		k := kinds[p.kind]
		if used := p.cpu - before[pid].cpu; used > 0 {
			k.cpu += used
			k.procs++
		}
		kinds[p.kind] = k
	}
	return kinds
}

// total is the CPU of every kind of process.
func total(kinds map[string]kindCPU) time.Duration {
	var sum time.Duration
	for _, k := range kinds {
		sum += k.cpu
	}
	return sum
}

// scrapeCommits sums amsg's commit counter over instances.
func scrapeCommits(ctx context.Context, client *http.Client, instances []*amsgInstance) (int64, error) {
	var total int64
	for _, inst := range instances {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, inst.URL+"/metrics", nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, fmt.Errorf("reading %s/metrics: %w", inst.URL, err)
		}
		n, err := counterValue(io.LimitReader(resp.Body, 4<<20), commitsMetric)
		resp.Body.Close()
		if err != nil {
			return 0, fmt.Errorf("%s/metrics: %w", inst.URL, err)
		}
		total += n
	}
	return total, nil
}

// counterValue reads an unlabelled counter from the Prometheus text format.
func counterValue(r io.Reader, name string) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err != nil || !(v >= 0) { // NaN too
			return 0, fmt.Errorf("%s is %q, not a count", name, rest)
		}
		return int64(v), nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no %s (an amsg older than the counter?)", name)
}

// byKind lists the CPU a push of each kind of process that used any,
// most first, with how many processes: "client backend 52 in 9, walwriter
// 3 in 1".
func byKind(cpu map[string]kindCPU, pushes int) string {
	kinds := slices.SortedFunc(maps.Keys(cpu), func(a, b string) int {
		return cmp.Or(cmp.Compare(cpu[b].cpu, cpu[a].cpu), strings.Compare(a, b))
	})
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		if us := perPush(cpu[k].cpu, pushes); us >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f in %d", cmp.Or(k, "unknown"), us, cpu[k].procs))
		}
	}
	return strings.Join(parts, ", ")
}
