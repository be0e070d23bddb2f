package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"amsg/push"
	"amsg/store/storetest"
	"amsg/store/usercrypt"
)

// Issue 22 §7 and §9 measured against the real binary, like the other
// TestMeasure tests (AMSG_MEASURE=1; AMSG_TEST_AMSG_BINARY for the build
// before). docs/performance.md records their numbers and commands.

// sealedCall sends one request as user under masterKey, the body sealed
// with the user's key as amsg-client does, and returns the status (0 when
// the connection failed).
func sealedCall(t *testing.T, baseURL, user, method, path string, body any) int {
	t.Helper()
	ring, err := usercrypt.NewKeyring(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	plaintext, _ := json.Marshal(body)
	env, _ := json.Marshal(ring.UserKey(user).Seal(plaintext))
	req, _ := http.NewRequest(method, baseURL+"/api/v1/"+path, bytes.NewReader(env))
	for k, v := range map[string]string{"X-User-Id": user, "Content-Type": "application/json", "X-Payload-Encrypted": "true", "X-Encryption-Version": "1"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// inParallel runs one(i) for i in [0, n) on eight workers.
func inParallel(n int, one func(i int)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				one(i)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
}

// scheduleFixedBurst schedules n fixed tasks due at due over HTTP, spread
// over the users ids in turn.
func scheduleFixedBurst(t *testing.T, baseURL string, ids []string, n int, due time.Time) {
	t.Helper()
	inParallel(n, func(i int) {
		if status := sealedCall(t, baseURL, ids[i%len(ids)], http.MethodPost, "schedule-message", map[string]any{"contactName": "Rei",
			"messageType": "fixed", "userMessage": fmt.Sprint("reminder ", i), "firstSendTime": push.FormatTimestamp(due)}); status != http.StatusCreated {
			t.Errorf("schedule-message: %d", status)
		}
	})
	if late := time.Since(due); late > 0 {
		t.Logf("scheduling ended %s after the due time", late.Round(time.Millisecond))
	}
}

// Issue 22 §7: an operator broadcast to 400 users with a device each at
// 200 users a second, cut after 100 pushes by a graceful stop and, in a run
// of its own, by SIGKILL; then the pace of the resumed broadcast (pushes a
// second after the restart, against the 200 asked) and the users who got
// the message under two message ids.
func TestMeasureBroadcastResume(t *testing.T) {
	measuring(t)
	for _, kill := range []bool{false, true} {
		t.Run(map[bool]string{false: "graceful", true: "kill-9"}[kill], func(t *testing.T) {
			measureBroadcastResume(t, kill)
		})
	}
}

func measureBroadcastResume(t *testing.T, kill bool) {
	const users, rate, cutAfter = 400, 200, 100
	r := newTaskRig(t, "AMSG_RATE_LIMIT=off", "AMSG_LOG_LEVEL=info", "AMSG_ADMIN_TOKEN="+webhookAdminToken)
	p := r.start(t)
	ids := make([]string, users)
	for i := range ids {
		ids[i] = fmt.Sprintf("550e8400-e29b-41d4-a716-4466554%05d", i)
	}
	subs := make([]push.Subscription, users)
	inParallel(users, func(i int) {
		sub := r.push.Subscribe()
		subs[i] = sub
		if status := sealedCall(t, p.URL, ids[i], http.MethodPut, "push-subscription", map[string]any{"subscription": sub}); status != http.StatusOK {
			t.Errorf("push-subscription: %d", status)
		}
	})
	userOf := map[string]string{} // endpoint → user
	for i, sub := range subs {
		userOf[sub.Endpoint] = ids[i]
	}
	// admin is an operator call (webhookAdminToken) and its answer's data.
	admin := func(p *amsgProcess, method, path string, body any) (int, json.RawMessage) {
		raw, _ := json.Marshal(body)
		status, answer := adminCall(t, p, method, "/api/v1/admin/"+path, string(raw))
		var envelope struct {
			Data json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal([]byte(answer), &envelope)
		return status, envelope.Data
	}
	status, data := admin(p, http.MethodPost, "broadcasts", map[string]any{"userIds": ids, "ratePerSecond": rate,
		"message": "The service will be down for maintenance tonight from 02:00 to 02:30 UTC."})
	var bc struct {
		ID     string `json:"broadcastId"`
		Status string `json:"status"`
		Sent   int    `json:"sent"`
	}
	if status != http.StatusAccepted || json.Unmarshal(data, &bc) != nil {
		t.Fatalf("POST admin/broadcasts: %d %s", status, data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := r.push.WaitDelivered(ctx, cutAfter); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	if kill {
		p.Kill(t)
	} else if err := p.Stop(t); err != nil {
		t.Logf("graceful stop: %v", err)
	}
	stopping := time.Since(cut)
	p = r.start(t)
	restarted := time.Now()
	// Until the broadcast says done, or nothing arrived for 30 s.
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	seen, since := 0, time.Now()
	for {
		<-poll.C
		if _, data := admin(p, http.MethodGet, "broadcasts/"+bc.ID, nil); json.Unmarshal(data, &bc) == nil && bc.Status == "done" {
			break
		}
		if n := r.push.Counts().Delivered; n > seen {
			seen, since = n, time.Now()
		} else if time.Since(since) > 30*time.Second {
			t.Logf("nothing arrived for 30 s; the broadcast is %s", bc.Status)
			break
		}
	}
	got := map[string]map[string]int{} // user → message id → pushes
	var first, after []time.Time       // the pushes before the cut, and after the restart
	for _, m := range r.push.Messages() {
		var pl struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(m.Plaintext, &pl)
		user := userOf[m.Endpoint]
		if got[user] == nil {
			got[user] = map[string]int{}
		}
		got[user][pl.MessageID]++
		if m.ReceivedAt.After(restarted) {
			after = append(after, m.ReceivedAt)
		} else {
			first = append(first, m.ReceivedAt)
		}
	}
	twoIDs, twice := 0, 0
	for _, byID := range got {
		if len(byID) > 1 {
			twoIDs++
		}
		for _, n := range byID {
			if n > 1 {
				twice++
			}
		}
	}
	// pace is how fast pushes arrived, first to last.
	pace := func(at []time.Time) string {
		slices.SortFunc(at, time.Time.Compare)
		n := len(at)
		if n < 2 {
			return fmt.Sprintf("%d pushes", n)
		}
		span := at[n-1].Sub(at[0])
		return fmt.Sprintf("%d pushes in %s, %.1f/s", n, span.Round(time.Millisecond), float64(n-1)/span.Seconds())
	}
	last := "never"
	if len(after) > 0 {
		last = after[len(after)-1].Sub(restarted).Round(time.Millisecond).String()
	}
	t.Logf("asked %d/s; the stop took %s; before the restart: %s; after the restart: %s, the last %s after it; broadcast %s with %d sent; "+
		"%d of %d users reached, %d under two message ids, %d got one id twice", rate, stopping.Round(time.Millisecond), pace(first), pace(after), last,
		bc.Status, bc.Sent, len(got), users, twoIDs, twice)
}

// Issue 22 §9: 2 000 fixed tasks due at once for 100 users with a device
// each, on PostgreSQL (a schema of AMSG_TEST_DATABASE_URL), and the command
// AMSG_MEASURE_PG_RESTART (such as `pg_ctl -D … -m fast restart` of a
// private cluster: never a shared one) run once a quarter of them has
// arrived; then the re-pushes (a message id pushed twice to its device) and
// how late the burst's tail is.
func TestMeasureDatabaseBlipMidBurst(t *testing.T) {
	measuring(t)
	restart := os.Getenv("AMSG_MEASURE_PG_RESTART")
	if restart == "" {
		t.Skip("set AMSG_MEASURE_PG_RESTART to a command that restarts the PostgreSQL of AMSG_TEST_DATABASE_URL")
	}
	const users, tasks = 100, 2000
	r := newTaskRig(t, "AMSG_RATE_LIMIT=off", "AMSG_LOG_LEVEL=info", "AMSG_DATABASE_URL="+storetest.DatabaseURL(t))
	p := r.start(t)
	ids := make([]string, users)
	inParallel(users, func(i int) {
		ids[i] = fmt.Sprintf("550e8400-e29b-41d4-a716-4466554409%02d", i)
		if status := sealedCall(t, p.URL, ids[i], http.MethodPut, "push-subscription", map[string]any{"subscription": r.push.Subscribe()}); status != http.StatusOK {
			t.Errorf("push-subscription: %d", status)
		}
	})
	due := time.Now().Add(45 * time.Second).Truncate(time.Second)
	scheduleFixedBurst(t, p.URL, ids, tasks, due)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := r.push.WaitDelivered(ctx, tasks/4); err != nil {
		t.Fatal(err)
	}
	blip := time.Now()
	if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", restart, err, out)
	}
	t.Logf("PostgreSQL restarted in %s, %d pushes in", time.Since(blip).Round(time.Millisecond), r.push.Counts().Delivered)
	// Until nothing more arrived for 100 s: a task whose bookkeeping write
	// was lost is pushed again when its lease (90 s by default) ends.
	arrivals := func() map[string][]time.Time { // endpoint and message id → arrivals
		out := map[string][]time.Time{}
		for _, m := range r.push.Messages() {
			var pl struct {
				MessageID string `json:"messageId"`
			}
			_ = json.Unmarshal(m.Plaintext, &pl)
			key := m.Endpoint + " " + pl.MessageID
			out[key] = append(out[key], m.ReceivedAt)
		}
		return out
	}
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	seen, since := 0, time.Now()
	for {
		<-poll.C
		n := r.push.Counts().Delivered
		if time.Since(since) > 100*time.Second {
			break
		}
		if n > seen {
			seen, since = n, time.Now()
		}
	}
	repushed, last, lastFirst := 0, time.Time{}, time.Time{}
	for _, at := range arrivals() {
		repushed += len(at) - 1
		lastFirst = latest(lastFirst, at[0])
		last = latest(last, at[len(at)-1])
	}
	warnings, empty := map[string]int{}, 0
	for _, l := range p.Logs("") {
		if l["level"] == "WARN" || l["level"] == "ERROR" {
			warnings[fmt.Sprint(l["msg"])]++
			if e, ok := l["err"]; ok && e == "" {
				empty++
			}
		}
	}
	t.Logf("%d of %d tasks arrived; %d re-pushes; every task's first push %s after the due time, the last push %s after it (%s after the restart); warnings and errors logged %v, %d with an empty err",
		len(arrivals()), tasks, repushed, lastFirst.Sub(due).Round(time.Millisecond), last.Sub(due).Round(time.Millisecond),
		last.Sub(blip).Round(time.Millisecond), warnings, empty)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
