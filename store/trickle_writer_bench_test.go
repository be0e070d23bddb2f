//go:build unix

package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"amsg/push"
)

// BenchmarkSQLiteTrickleWriter is the writer's CPU a push in a trickle as
// cmd/deliverybench's latency scenario makes it (issue 24): tasks with
// random UUIDs, as the API's clients make them, claimed perClaim at a time
// (a claim ahead takes about 40 at 1 000 tasks a second) and completed in
// groups of perCommit, each one transaction (the writer's groupLinger makes
// about 14 a commit), lag claims later: a claim ahead passes over the tasks
// claimed before it and not yet delivered (the scheduler's Lookahead of
// 250 ms leases a claim's tasks some 125 ms before their time). It reports
// the claims' and the completions' CPU a push apart; the tasks' insertion
// and the completions' sealing are not counted. Run it once:
//
//	go test ./store -run '^$' -bench SQLiteTrickleWriter -benchtime 1x
func BenchmarkSQLiteTrickleWriter(b *testing.B) {
	const (
		users     = 100
		history   = 42 * 120 // pushes delivered before
		pending   = 5000     // tasks due later
		perClaim  = 42
		perCommit = 14
		rounds    = 150
		lag       = 3 // claims whose tasks are in delivery when the next comes
	)
	ctx := context.Background()
	st, clk := openTrickleBench(b, users, 0, 0, 0)
	insert := func(due time.Time, i int) { insertBenchTaskWithUUID(b, st, due, i, users, randomBenchTaskUUID(i)) }
	// Every task is scheduled first, as the trickle's are, due a
	// millisecond apart, then pending more due in an hour.
	start := clk.now
	for i := range history + rounds*perClaim {
		insert(start.Add(time.Duration(i/perClaim+1)*time.Millisecond), i)
	}
	for i := range pending {
		insert(start.Add(time.Hour), 1_000_000+i)
	}
	var leased [][]Task // claimed, their completions not written yet
	round := func() (claimCPU, completeCPU time.Duration) {
		clk.now = clk.now.Add(time.Millisecond)
		before := processCPU(b)
		tasks, err := st.ClaimDueTasks(ctx, clk.now, 90*time.Second, perClaim)
		if err != nil || len(tasks) != perClaim {
			b.Fatalf("claim: %d tasks, %v", len(tasks), err)
		}
		claimCPU = processCPU(b) - before
		if leased = append(leased, tasks); len(leased) <= lag {
			return claimCPU, 0
		}
		cs := benchCompletions(b, st, clk, leased[0])
		leased = leased[1:]
		before = processCPU(b)
		for len(cs) > 0 {
			group := cs[:min(perCommit, len(cs))]
			cs = cs[len(group):]
			writeCompletions(b, st, group)
		}
		completeCPU = processCPU(b) - before
		return claimCPU, completeCPU
	}
	for range history / perClaim {
		round()
	}
	var claimCPU, completeCPU time.Duration
	b.ResetTimer()
	for range rounds {
		c1, c2 := round()
		claimCPU += c1
		completeCPU += c2
	}
	b.StopTimer()
	b.ReportMetric(float64(claimCPU.Microseconds())/(rounds*perClaim), "claim-µs/push")
	b.ReportMetric(float64(completeCPU.Microseconds())/(rounds*perClaim), "complete-µs/push")
	b.ReportMetric(float64((claimCPU+completeCPU).Microseconds())/(rounds*perClaim), "cpu-µs/push")
}

// randomBenchTaskUUID is task i's UUID as an API client makes one: random
// looking (derived from i), not in the tasks' order as benchTaskUUID's.
func randomBenchTaskUUID(i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "task %d", i))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// benchCompletions are the completions of tasks, each with what the
// courier leaves of a push one device accepted (trickleCompletions).
func benchCompletions(b *testing.B, st *Store, clk *benchClock, tasks []Task) []completion {
	cs := make([]completion, len(tasks))
	for i, task := range tasks {
		id := fmt.Sprintf("msg_task_%d@%d_0", task.ID, task.NextSendAt.UnixMilli())
		payload := fmt.Sprintf(`{"messageKind":"content","messageType":"fixed","source":"scheduled","messageId":%q,`+
			`"sessionId":"sess_task_%d","timestamp":"2026-11-24T05:35:08.389Z","message":"Reminder: time for a glass of water",`+
			`"title":"From Rei","contactName":"Rei","avatarUrl":null,"messageSubtype":"chat","messageIndex":1,"totalMessages":1,`+
			`"taskId":%d,"taskUuid":%q,"recurrenceType":"none","metadata":{}}`, id, task.ID, task.ID, task.UUID)
		w, err := st.prepareBookkeeping(push.Bookkeeping{UserID: task.UserID,
			Record: []push.OutboxMessage{{MessageID: id, TaskUUID: task.UUID, SessionID: fmt.Sprintf("sess_task_%d", task.ID),
				MessageIndex: 1, TotalMessages: 1, Payload: []byte(payload)}},
			Attempts: []push.Attempt{{At: clk.now, MessageID: id, UserID: task.UserID, DeviceID: 1, PushHost: "push.example",
				Try: 1, Status: 201, Outcome: push.OutcomeDelivered, Latency: 3 * time.Millisecond}}})
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = completion{l: task.Lease(), w: w}
	}
	return cs
}
