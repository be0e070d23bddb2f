package scheduler

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
		sec := st.Secrets()
		fake := pushtest.NewServer(sec.VAPIDPublicKey)
		sender, err := webpush.NewSender(webpush.Config{VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey,
			Subject: "https://amsg.example.org/contact", AllowPrivateEndpoints: true, Logger: logger})
		if err != nil {
			b.Fatal(err)
		}
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
		sched, err := New(Config{Logger: logger}, Deps{Store: st, Courier: courier.New(sender, st, courier.Config{Policy: courier.PolicyUpstream, Logger: logger}),
			LLM: llm.NewClient(llm.Config{Policy: llm.URLPolicy{AllowPrivate: true}})})
		if err != nil {
			b.Fatal(err)
		}

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
