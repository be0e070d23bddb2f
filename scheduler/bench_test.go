package scheduler

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/push/pushtest"
	"amsg/store"
	"amsg/store/storetest"
)

// BenchmarkBacklog schedules a backlog of fixed tasks all due at once, spread
// over many users with one device each, starts the scheduler and measures
// how long until the fake push service has every push. The fake push service
// runs in the same process and decrypts every message, so it shares the CPU
// with the server. AMSG_BENCH_TASKS and AMSG_BENCH_USERS change the size
// (default 100 000 tasks for 1 000 users), AMSG_BENCH_TRACING=on traces
// every occurrence; run it with -benchtime=1x:
//
//	go test -run '^$' -bench Backlog -benchtime=1x ./scheduler/
func BenchmarkBacklog(b *testing.B) {
	traceBenchmark(b)
	tasks, users := envInt(b, "AMSG_BENCH_TASKS", 100_000), envInt(b, "AMSG_BENCH_USERS", 1_000)
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
		st := storetest.Open(b, store.Config{Path: filepath.Join(dir, "amsg.db"), Logger: logger})
		fake := pushtest.NewServer(st.Secrets().VAPIDPublicKey)
		fillBacklog(b, st, fake, tasks, users)
		sched := newBenchScheduler(b, st, logger)

		b.StartTimer()
		start := time.Now()
		sched.Start()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		if _, err := fake.WaitPushes(ctx, tasks); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		if err := sched.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		if errs := fake.Errors(); len(errs) != 0 {
			b.Fatalf("push service errors: %v", errs[0])
		}
		b.ReportMetric(elapsed.Seconds(), "s-to-deliver-all")
		b.ReportMetric(float64(tasks)/elapsed.Seconds(), "pushes/s")
		b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
		b.ReportMetric(dbMiB(dir), "db-MiB")
		fake.Close()
	}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q is not a positive integer", name, v)
	}
	return n
}

// peakRSSMiB is the process's peak resident set (VmHWM), Linux only.
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

// dbMiB is the size of the database and its WAL.
func dbMiB(dir string) float64 {
	var total int64
	for _, name := range []string{"amsg.db", "amsg.db-wal"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil {
			total += info.Size()
		}
	}
	return float64(total) / (1 << 20)
}
