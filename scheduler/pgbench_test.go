package scheduler

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"amsg/llm"
	"amsg/push"
	"amsg/push/courier"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/store"
	"amsg/store/storetest"
)

// BenchmarkPostgresBacklog is issue 24's PostgreSQL measurement: a backlog
// of fixed tasks (AMSG_BENCH_TASKS, default 3 000, for AMSG_BENCH_USERS,
// default 100, one device each) all due at once, delivered by
// AMSG_BENCH_INSTANCES (default 1) schedulers, each with a store of its own
// on one database, into an in-process push service that decrypts every
// push. It reports pushes/s, PostgreSQL's commits per push (pg_stat_database
// xact_commit), PostgreSQL's CPU per push (the postmaster and its children,
// from /proc, when AMSG_BENCH_PGDATA names the cluster's data directory, so
// run it on a cluster of its own) and this process's CPU per push (amsg and
// the push service together). It needs AMSG_TEST_DATABASE_URL; keep it
// short on a shared machine:
//
//	AMSG_TEST_DATABASE_URL='postgres://amsg@/amsg_bench?host=/tmp/sppg' AMSG_BENCH_PGDATA=/tmp/sppg/data \
//	  go test -run '^$' -bench PostgresBacklog -benchtime=1x ./scheduler/
func BenchmarkPostgresBacklog(b *testing.B) {
	tasks, users := envInt(b, "AMSG_BENCH_TASKS", 3_000), envInt(b, "AMSG_BENCH_USERS", 100)
	instances := envInt(b, "AMSG_BENCH_INSTANCES", 1)
	pgdata := os.Getenv("AMSG_BENCH_PGDATA")
	for range b.N {
		b.StopTimer()
		url := storetest.DatabaseURL(b)
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
		cfg := store.Config{DatabaseURL: url, Logger: logger}
		setup := storetest.Open(b, cfg)
		fake := pushtest.NewServer(setup.Secrets().VAPIDPublicKey)
		fillBacklog(b, setup, fake, tasks, users)
		// The stores close so that their sessions' statistics reach
		// pg_stat_database; the instances open their own.
		if err := setup.Close(); err != nil {
			b.Fatal(err)
		}
		admin, err := sql.Open("pgx", url)
		if err != nil {
			b.Fatal(err)
		}
		commitsBefore := settledCommits(b, admin)
		scheds := make([]*Scheduler, instances)
		stores := make([]*store.Store, instances)
		for i := range scheds {
			stores[i] = storetest.Open(b, cfg)
			scheds[i] = newBenchScheduler(b, stores[i], logger)
		}
		// An instance's start (its sessions' first statements, the
		// statements it prepares) is not a push's cost: PostgreSQL's CPU
		// is read from here on. Its few commits are in the count: a
		// session reports them up to ten seconds late.
		pgBefore := postgresCPU(b, pgdata)

		b.StartTimer()
		cpuBefore := processCPU()
		start := time.Now()
		for _, s := range scheds {
			s.Start()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		if _, err := fake.WaitPushes(ctx, tasks); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		cpu := processCPU() - cpuBefore
		b.StopTimer()
		cancel()
		for i, s := range scheds {
			if err := s.Stop(context.Background()); err != nil {
				b.Fatal(err)
			}
			if err := stores[i].Close(); err != nil {
				b.Fatal(err)
			}
		}
		commits := settledCommits(b, admin) - commitsBefore
		pg := postgresCPU(b, pgdata) - pgBefore
		_ = admin.Close()
		if errs := fake.Errors(); len(errs) != 0 {
			b.Fatalf("push service errors: %v", errs[0])
		}
		b.ReportMetric(float64(tasks)/elapsed.Seconds(), "pushes/s")
		b.ReportMetric(float64(commits)/float64(tasks), "commits/push")
		b.ReportMetric(float64(cpu.Microseconds())/float64(tasks), "amsg+service-µs/push")
		if pgdata != "" {
			b.ReportMetric(float64(pg.Microseconds())/float64(tasks), "pg-µs/push")
		}
		fake.Close()
	}
}

// fillBacklog registers users devices of fake's and schedules tasks fixed
// tasks among them, all due a second ago.
func fillBacklog(b *testing.B, st *store.Store, fake *pushtest.Server, tasks, users int) {
	userIDs := make([]string, users)
	for i := range userIDs {
		userIDs[i] = fmt.Sprintf("%08x-0000-4000-8000-000000000000", i)
		raw, _ := json.Marshal(fake.Subscribe())
		if _, err := st.PutSubscription(b.Context(), userIDs[i], raw, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	due := time.Now().Add(-time.Second)
	for i := range tasks {
		payload := fmt.Sprintf(`{"contactName":"Rei","avatarUrl":null,"messageType":"fixed","messageSubtype":"chat",`+
			`"userMessage":"第%d条提醒：该喝水了","firstSendTime":"%s","recurrenceType":"none","tzId":null,"metadata":{}}`,
			i, push.FormatTimestamp(due))
		if _, _, err := st.InsertTask(b.Context(), store.NewTask{UserID: userIDs[i%users], UUID: push.NewUUID(),
			MessageType: push.TypeFixed, NextSendAt: due, Payload: json.RawMessage(payload)}); err != nil {
			b.Fatal(err)
		}
	}
}

func newBenchScheduler(b *testing.B, st *store.Store, logger *slog.Logger) *Scheduler {
	sec := st.Secrets()
	sender, err := webpush.NewSender(webpush.Config{VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey,
		Subject: "https://amsg.example.org/contact", AllowPrivateEndpoints: true, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	sched, err := New(Config{Logger: logger}, Deps{Store: st, Courier: courier.New(sender, st, courier.Config{Policy: courier.PolicyUpstream, Logger: logger}),
		LLM: llm.NewClient(llm.Config{Policy: llm.URLPolicy{AllowPrivate: true}})})
	if err != nil {
		b.Fatal(err)
	}
	return sched
}

// settledCommits is the database's xact_commit once every other session
// on it has ended, so their statistics are in (a session reports them when
// it ends, or when idle at most every ten seconds).
func settledCommits(b *testing.B, admin *sql.DB) int64 {
	for {
		var others int
		if err := admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			b.Fatal(err)
		}
		if others == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond) // a benchmark, not a test: sessions end on their own time
	}
	var commits int64
	if _, err := admin.Exec(`SELECT pg_stat_clear_snapshot()`); err != nil {
		b.Fatal(err)
	}
	if err := admin.QueryRow(`SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&commits); err != nil {
		b.Fatal(err)
	}
	return commits
}

// postgresCPU is the CPU time of the cluster whose data directory is
// pgdata: the postmaster's own, its exited children's (cutime, cstime) and
// its live children's, read until two readings agree within a tick, since
// a child the postmaster reaps between the two halves of a reading is
// counted in neither. Zero when pgdata is "".
func postgresCPU(b *testing.B, pgdata string) time.Duration {
	if pgdata == "" {
		return 0
	}
	last := clusterCPU(b, pgdata)
	for {
		time.Sleep(50 * time.Millisecond) // a benchmark, not a test: let exiting sessions be reaped
		now := clusterCPU(b, pgdata)
		if now-last <= time.Second/100 {
			return now
		}
		last = now
	}
}

func clusterCPU(b *testing.B, pgdata string) time.Duration {
	pidFile, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		b.Fatal(err)
	}
	postmaster := strings.SplitN(string(pidFile), "\n", 2)[0]
	total := ticksOf(b, postmaster, true)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat")); err == nil && parentOf(stat) == postmaster {
			total += ticksOf(b, p.Name(), false)
		}
	}
	return time.Duration(total) * time.Second / 100 // USER_HZ
}

// statFields are the fields of /proc/pid/stat after the command's name.
func statFields(stat []byte) []string {
	s := string(stat)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func parentOf(stat []byte) string { return statFields(stat)[1] }

// ticksOf is pid's utime+stime, and with children its exited children's.
func ticksOf(b *testing.B, pid string, children bool) int64 {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0 // it ended: the postmaster's cutime has it now
	}
	f := statFields(stat)
	fields := []int{11, 12} // utime, stime (fields 14, 15 counted from pid)
	if children {
		fields = append(fields, 13, 14)
	}
	var total int64
	for _, i := range fields {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total
}

// processCPU is this process's CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
