//go:build unix

package store_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// BenchmarkPostgresDeliveryRound is amsg's own CPU (not the server's) and
// its allocations for what the store does a delivered push on PostgreSQL
// (issue 24): rounds of perRound one-off tasks claimed in one claim, as the
// scheduler claims them, then completed concurrently, as its deliveries
// complete them (CompleteTask with a push's bookkeeping: the outbox row,
// one attempt, the events), so the store's batches form as in a burst.
// Inserting the tasks, before the rounds, is not counted. Run it once, against the test
// database:
//
//	AMSG_TEST_DATABASE_URL=… go test ./store -run '^$' -bench PostgresDeliveryRound -benchtime 1x
func BenchmarkPostgresDeliveryRound(b *testing.B) {
	const (
		users    = 100
		rounds   = 50
		perRound = 64
	)
	clk := &deliveryClock{now: time.Now().Truncate(time.Millisecond)}
	st := storetest.Open(b, store.Config{DatabaseURL: storetest.DatabaseURL(b), Now: clk.Now})
	ctx := context.Background()
	start := clk.Now()
	for n := range rounds * perRound {
		if _, _, err := st.InsertTask(ctx, store.NewTask{UserID: fmt.Sprintf("user-%03d", n%users),
			UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), MessageType: push.TypeFixed,
			NextSendAt: start.Add(time.Duration(n/perRound+1) * time.Millisecond),
			Payload:    []byte(`{"contactName":"Rei","userMessage":"time for a glass of water"}`)}); err != nil {
			b.Fatal(err)
		}
	}
	var cpu time.Duration
	var mallocs, bytes uint64
	b.ResetTimer()
	for range rounds {
		clk.advance(time.Millisecond)
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		used := processCPU(b)
		deliverRound(b, st, clk, perRound)
		cpu += processCPU(b) - used
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		mallocs += after.Mallocs - before.Mallocs
		bytes += after.TotalAlloc - before.TotalAlloc
	}
	b.StopTimer()
	pushes := float64(rounds * perRound)
	b.ReportMetric(float64(cpu.Microseconds())/pushes, "cpu-µs/push")
	b.ReportMetric(float64(mallocs)/pushes, "allocs/push")
	b.ReportMetric(float64(bytes)/pushes, "B/push")
}

// BenchmarkPostgresInsertTask is amsg's own CPU and allocations a task
// scheduled on PostgreSQL (InsertTask, the API's write of a new task): its
// statements are not prepared, so each passes through the driver's rebind
// and pgx's statement cache on every call.
//
//	AMSG_TEST_DATABASE_URL=… go test ./store -run '^$' -bench PostgresInsertTask -benchtime 1x
func BenchmarkPostgresInsertTask(b *testing.B) {
	const (
		users = 100
		tasks = 2000
	)
	st := storetest.Open(b, store.Config{DatabaseURL: storetest.DatabaseURL(b)})
	ctx := context.Background()
	start := time.Now().Add(time.Hour)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	used := processCPU(b)
	b.ResetTimer()
	for n := range tasks {
		if _, _, err := st.InsertTask(ctx, store.NewTask{UserID: fmt.Sprintf("user-%03d", n%users),
			UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), MessageType: push.TypeFixed,
			NextSendAt: start.Add(time.Duration(n) * time.Millisecond),
			Payload:    []byte(`{"contactName":"Rei","userMessage":"time for a glass of water"}`)}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := processCPU(b) - used
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(cpu.Microseconds())/tasks, "cpu-µs/task")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/tasks, "allocs/task")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/tasks, "B/task")
}

// deliverRound claims n due tasks and completes each, concurrently, with
// the bookkeeping of a push one device accepted.
func deliverRound(b *testing.B, st *store.Store, clk *deliveryClock, n int) {
	ctx := context.Background()
	now := clk.Now()
	tasks, err := st.ClaimTasksDueBy(ctx, now, now, 90*time.Second, n, nil)
	if err != nil || len(tasks) != n {
		b.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(tasks))
	for i, task := range tasks {
		wg.Go(func() {
			id := fmt.Sprintf("msg_task_%d@%d_0", task.ID, task.NextSendAt.UnixMilli())
			payload := fmt.Sprintf(`{"messageKind":"content","messageType":"fixed","source":"scheduled","messageId":%q,`+
				`"sessionId":"sess_task_%d","message":"Reminder: time for a glass of water","contactName":"Rei",`+
				`"messageIndex":1,"totalMessages":1,"taskId":%d,"taskUuid":%q,"recurrenceType":"none","metadata":{}}`,
				id, task.ID, task.ID, task.UUID)
			errs[i] = st.CompleteTask(ctx, task.Lease(), time.Time{}, push.Bookkeeping{UserID: task.UserID,
				Record: []push.OutboxMessage{{MessageID: id, TaskUUID: task.UUID, SessionID: fmt.Sprintf("sess_task_%d", task.ID),
					MessageIndex: 1, TotalMessages: 1, Payload: []byte(payload)}},
				Attempts: []push.Attempt{{At: now, MessageID: id, UserID: task.UserID, DeviceID: 1, PushHost: "push.example",
					Try: 1, Status: 201, Outcome: push.OutcomeDelivered, Latency: 3 * time.Millisecond}}})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// deliveryClock is the benchmark's time, moved on by each round.
type deliveryClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *deliveryClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *deliveryClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
