package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/store"
	"amsg/store/storetest"
	"amsg/store/usercrypt"
)

// The tests below run several real `amsg serve` processes on one
// PostgreSQL database (a schema of AMSG_TEST_DATABASE_URL of its own), with
// their pushes going to one fake push service in the test process.

// cluster is a database, the keys every instance runs with and a fake push
// service they sign for.
type cluster struct {
	url   string
	env   []string
	push  *pushtest.Server
	vapid [2]string
}

func newCluster(t *testing.T, env ...string) *cluster {
	t.Helper()
	url := storetest.DatabaseURL(t)
	public, private, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{url: url, push: pushtest.NewServer(public), vapid: [2]string{public, private}}
	t.Cleanup(c.push.Close)
	c.env = append([]string{"AMSG_DATABASE_URL=" + url, "AMSG_ALLOW_PRIVATE_ENDPOINTS=true", "AMSG_MASTER_KEY=" + masterKey,
		"AMSG_VAPID_PUBLIC_KEY=" + public, "AMSG_VAPID_PRIVATE_KEY=" + private, "AMSG_INSTANCE_HEARTBEAT=200ms"}, env...)
	return c
}

// start runs one more instance.
func (c *cluster) start(t *testing.T, env ...string) *amsgProcess {
	t.Helper()
	return startAmsg(t, t.TempDir(), append(append([]string{}, c.env...), env...)...)
}

// open is the database as the test reads and writes it directly.
func (c *cluster) open(t *testing.T) *store.Store {
	t.Helper()
	return storetest.Open(t, store.Config{DatabaseURL: c.url, MasterKey: masterKey,
		VAPIDPublicKey: c.vapid[0], VAPIDPrivateKey: c.vapid[1]})
}

// burst inserts perUser fixed tasks for each of users users, each user with
// one device at the fake push service, all due in an hour until fireAll.
func (c *cluster) burst(t *testing.T, st *store.Store, users, perUser int) {
	t.Helper()
	ctx := t.Context()
	later := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	for u := range users {
		user := fmt.Sprintf("00000000-0000-4000-8000-%012d", u)
		sub, _ := json.Marshal(c.push.Subscribe())
		if _, err := st.PutSubscription(ctx, user, sub, time.Time{}); err != nil {
			t.Fatal(err)
		}
		for i := range perUser {
			uuid := fmt.Sprintf("00000000-0000-4000-9000-%06d%06d", u, i)
			payload := fmt.Sprintf(`{"contactName":"Rei","avatarUrl":null,"messageType":"fixed","messageSubtype":"chat","userMessage":"%s",`+
				`"firstSendTime":"%s","recurrenceType":"none","tzId":null,"metadata":{}}`, uuid, push.FormatTimestamp(later))
			if _, _, err := st.InsertTask(ctx, store.NewTask{UserID: user, UUID: uuid, MessageType: push.TypeFixed,
				NextSendAt: later, Payload: json.RawMessage(payload)}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// fireAll makes every task due at one instant, now, and returns the ids
// their occurrences carry.
func (c *cluster) fireAll(t *testing.T) map[string]bool {
	t.Helper()
	db := c.raw(t)
	now := time.Now().UnixMilli()
	rows, err := db.QueryContext(t.Context(), `UPDATE tasks SET next_send_at = $1 RETURNING id`, now)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ids := map[string]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[fmt.Sprintf("msg_task_%d@%d_0", id, now)] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func (c *cluster) raw(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", c.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitTasksGone waits until no task row is left (one-off tasks are deleted
// once delivered), reading the table whenever a push arrives or every
// 100 ms, and returns how long it took.
func (c *cluster) waitTasksGone(t *testing.T, db *sql.DB, within time.Duration) time.Duration {
	t.Helper()
	started := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for {
		var left int
		if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM tasks`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return time.Since(started)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%d tasks still undelivered after %s (%d pushes)", left, within, len(c.push.Pushes()))
		}
	}
}

// deliveredIDs counts the pushes per message id.
func (c *cluster) deliveredIDs(t *testing.T) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, p := range c.push.Pushes() {
		seen[messageID(t, p)]++
	}
	return seen
}

const burstUsers, burstPerUser = 100, 20

// Done-when: two instances on one database deliver 2 000 tasks of 100
// users, all due at one instant: every occurrence once, under its one
// message id, and nothing more once the tasks are done.
func TestTwoInstancesDeliverABurstOnce(t *testing.T) {
	c := newCluster(t, "AMSG_TICK=200ms", "AMSG_TASK_CONCURRENCY=32")
	st := c.open(t)
	c.burst(t, st, burstUsers, burstPerUser)
	a, b := c.start(t), c.start(t)
	want := c.fireAll(t)
	took := c.waitTasksGone(t, c.raw(t), 2*time.Minute)
	seen := c.deliveredIDs(t)
	for id, n := range seen {
		if !want[id] || n != 1 {
			t.Errorf("message id %s pushed %d times (expected: %v)", id, n, want[id])
		}
	}
	if len(seen) != len(want) || len(want) != burstUsers*burstPerUser {
		t.Errorf("%d distinct ids pushed, want %d", len(seen), burstUsers*burstPerUser)
	}
	if errs := c.push.Errors(); len(errs) != 0 {
		t.Errorf("push service errors: %v", errs[:min(len(errs), 3)])
	}
	t.Logf("%d tasks delivered by two instances in %s; a delivered %d, b %d", len(want), took,
		len(a.Logs("scheduler: task delivered")), len(b.Logs("scheduler: task delivered")))
}

// Done-when: the same burst with one instance SIGKILLed in the middle:
// nothing is lost, the survivor delivers the dead one's tasks once their
// leases end, each under the message id it already had.
func TestABurstSurvivesAnInstanceKilledMidway(t *testing.T) {
	const lease = 3 * time.Second
	c := newCluster(t, "AMSG_TICK=200ms", "AMSG_TASK_CONCURRENCY=32", "AMSG_TASK_LEASE="+lease.String(), "AMSG_TASK_HEARTBEAT=500ms")
	st := c.open(t)
	c.burst(t, st, burstUsers, burstPerUser)
	a, _ := c.start(t), c.start(t)
	want := c.fireAll(t)
	waitPushes(t, c.push, len(want)/4, time.Minute)
	a.Kill(t)
	took := c.waitTasksGone(t, c.raw(t), lease+time.Minute)
	seen := c.deliveredIDs(t)
	for id, n := range seen {
		if !want[id] || n > 2 {
			t.Errorf("message id %s pushed %d times (expected: %v)", id, n, want[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d distinct ids pushed, want %d: tasks were lost", len(seen), len(want))
	}
	t.Logf("the survivor finished %s after the kill (lease %s)", took, lease)
	if took > lease+15*time.Second {
		t.Errorf("the survivor took %s after the kill, lease %s", took, lease)
	}
}

// Done-when: a task scheduled through instance A fires on instance B. A
// stops right after scheduling; B, whose own tick is a minute, hears of the
// task through the database and fires it on time.
func TestATaskScheduledOnOneInstanceFiresOnAnother(t *testing.T) {
	c := newCluster(t)
	ring, err := usercrypt.NewKeyring(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	r := &taskRig{push: c.push, sub: c.push.Subscribe(), key: ring.UserKey(taskUser)}
	a := c.start(t)
	b := c.start(t, "AMSG_TICK=1m")
	r.register(t, a)
	due := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	r.schedule(t, a, map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": "on b",
		"firstSendTime": push.FormatTimestamp(due)})
	if err := a.Stop(t); err != nil {
		t.Fatal(err)
	}
	waitPushes(t, c.push, 1, 30*time.Second)
	if late := c.push.Messages()[0].ReceivedAt.Sub(due); late < 0 || late > 5*time.Second {
		t.Errorf("delivered %s after its time by an instance whose tick is a minute", late)
	}
	b.WaitLog(t, "scheduler: task delivered", 10*time.Second)
}

// Done-when: a /continue after a tool request works on another instance.
// A round that instance A runs for a /continue holds its iteration against
// instance B, though B started after the claim; once A dies in the round,
// B takes the iteration over and finishes the loop.
func TestContinueOnAnotherInstance(t *testing.T) {
	c := newCluster(t)
	llm := llmtest.NewServer(t)
	held := make(chan struct{})
	llm.Enqueue(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "get_time", Arguments: "{}"}}},
		llmtest.Reply{Content: "中午。", Release: held}, llmtest.Reply{Content: "中午。"})
	t.Cleanup(func() { close(held) })
	a := c.start(t)
	sub := c.push.Subscribe()
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{"type": "object"}}}}
	request := func(p *amsgProcess, path string, body map[string]any) (int, string) {
		body["contactName"], body["apiUrl"], body["apiKey"], body["primaryModel"], body["pushSubscription"] = "Rei", llm.APIURL(), "k", "m", sub
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/"+path, strings.NewReader(string(raw)))
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(got)
	}
	status, body := request(a, "instant", map[string]any{"sessionId": "s", "tools": tools,
		"messages": []any{map[string]any{"role": "user", "content": "what time is it?"}}})
	if status != 200 || !strings.Contains(body, `"status":"tool_requested"`) {
		t.Fatalf("/instant on a = %d %s", status, body)
	}
	result := json.RawMessage(`[{"role":"tool","tool_call_id":"call_1","content":"12:00"}]`)
	continueOn := func(p *amsgProcess) (int, string) {
		return request(p, "continue", map[string]any{"sessionId": "s", "iteration": 1, "messages": result})
	}
	go continueOn(a) // a claims iteration 1, and its round waits for the model
	llm.WaitRequests(2)

	b := c.start(t)
	if status, body := continueOn(b); status != http.StatusConflict {
		t.Fatalf("/continue on b while a runs the round = %d %s, want 409", status, body)
	}
	a.Kill(t)
	// a counts as dead once it has missed three heartbeats; until then b
	// refuses, without calling the model.
	retry := time.NewTicker(200 * time.Millisecond)
	defer retry.Stop()
	deadline := time.After(20 * time.Second)
	for {
		status, body := continueOn(b)
		if status == 200 {
			if !strings.Contains(body, `"status":"finished"`) {
				t.Fatalf("/continue on b after a died = %s", body)
			}
			break
		}
		if status != http.StatusConflict {
			t.Fatalf("/continue on b = %d %s", status, body)
		}
		select {
		case <-retry.C:
		case <-deadline:
			t.Fatal("b never took over the iteration of the dead a")
		}
	}
	if n := len(llm.Requests()); n != 3 {
		t.Errorf("%d model calls, want 3 (the refused /continue calls make none)", n)
	}
}

// Done-when: one instance does the housekeeping; when it dies, the
// survivor takes it over within a few heartbeats.
func TestHousekeepingMovesToTheSurvivor(t *testing.T) {
	c := newCluster(t)
	a := c.start(t)
	if line := a.WaitLog(t, "housekeeping leadership", 10*time.Second); line["leads"] != true {
		t.Fatalf("the first instance does not lead: %v", line)
	}
	b := c.start(t)
	if line := b.WaitLog(t, "housekeeping leadership", 10*time.Second); line["leads"] != false {
		t.Fatalf("a second instance leads beside the first: %v", line)
	}
	a.Kill(t)
	if line := b.WaitLogs(t, "housekeeping leadership", 2, 20*time.Second)[1]; line["leads"] != true {
		t.Errorf("after the leader died the survivor logged %v", line)
	}
}
