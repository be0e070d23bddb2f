package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"amsg/push"
	"amsg/store/usercrypt"
)

// The measurements of issue 22's figures against the real binary. They take
// minutes and load the machine, so they run only when AMSG_MEASURE is set;
// AMSG_TEST_AMSG_BINARY measures another build (the figure before a
// change). docs/security.md records their numbers and commands.

// measuring skips a measurement unless AMSG_MEASURE is set.
func measuring(t *testing.T) {
	t.Helper()
	if os.Getenv("AMSG_MEASURE") == "" {
		t.Skip("a measurement: set AMSG_MEASURE=1 to run it")
	}
}

// Issue 22 §11, the soak: 200 fixed tasks a second and 10 /instant a second
// over 20 users with a device each, for AMSG_MEASURE_SOAK (default 2m); the
// database's size (file and WAL) every 30 s.
func TestMeasureSteadyLoadGrowth(t *testing.T) {
	measuring(t)
	length := 2 * time.Minute
	if v := os.Getenv("AMSG_MEASURE_SOAK"); v != "" {
		var err error
		if length, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	r := newTaskRig(t, "AMSG_RATE_LIMIT=off", "AMSG_LOG_LEVEL=info")
	model := constantModel(t, "a reply of about three hundred characters, as the issue's soak used. "+
		"It is long enough to be a real answer and short enough to go in one push, like most replies of a companion.")
	p := r.start(t)
	ring, err := usercrypt.NewKeyring(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	type user struct {
		id  string
		key usercrypt.Key
		sub push.Subscription
	}
	var users []user
	for i := range 20 {
		u := user{id: fmt.Sprintf("550e8400-e29b-41d4-a716-4466554400%02d", i), sub: r.push.Subscribe()}
		u.key = ring.UserKey(u.id)
		users = append(users, u)
	}
	send := func(u user, method, path string, body any, encrypted bool) int {
		raw, _ := json.Marshal(body)
		if encrypted {
			raw, _ = json.Marshal(u.key.Seal(raw))
		}
		req, _ := http.NewRequest(method, p.URL+"/api/v1/"+path, bytes.NewReader(raw))
		req.Header.Set("X-User-Id", u.id)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if encrypted {
			req.Header.Set("X-Payload-Encrypted", "true")
			req.Header.Set("X-Encryption-Version", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, u := range users {
		if status := send(u, http.MethodPut, "push-subscription", map[string]any{"subscription": u.sub}, true); status != http.StatusOK {
			t.Fatalf("push-subscription: %d", status)
		}
	}
	size := func() int64 {
		var total int64
		for _, name := range []string{"amsg.db", "amsg.db-wal"} {
			if fi, err := os.Stat(filepath.Join(r.dir, name)); err == nil {
				total += fi.Size()
			}
		}
		return total
	}
	var scheduled, instants, refused atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// 200 tasks a second: 10 every 50 ms, each from a worker of its own.
	load := func(every time.Duration, perTick int, one func(n int) int, count *atomic.Int64) {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		n := 0
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var batch sync.WaitGroup
			for range perTick {
				n++
				batch.Add(1)
				go func(n int) {
					defer batch.Done()
					if status := one(n); status >= 200 && status < 300 {
						count.Add(1)
					} else {
						refused.Add(1)
					}
				}(n)
			}
			batch.Wait()
		}
	}
	wg.Add(2)
	go load(50*time.Millisecond, 10, func(n int) int {
		u := users[n%len(users)]
		return send(u, http.MethodPost, "schedule-message", map[string]any{"contactName": "Rei", "messageType": "fixed",
			"userMessage": fmt.Sprintf("steady load %d: a fixed reminder of ordinary length, the kind a companion sends.", n),
			"firstSendTime": push.FormatTimestamp(time.Now().Add(time.Second))}, true)
	}, &scheduled)
	go load(100*time.Millisecond, 1, func(n int) int {
		u := users[n%len(users)]
		return send(u, http.MethodPost, "instant", map[string]any{"contactName": "Rei", "completePrompt": "hello",
			"apiUrl": model, "apiKey": "k", "primaryModel": "m", "pushSubscription": u.sub}, false)
	}, &instants)
	start, first := time.Now(), size()
	t.Logf("start: %d bytes", first)
	sample := time.NewTicker(30 * time.Second)
	defer sample.Stop()
	last, lastAt := first, start
	for time.Since(start) < length {
		<-sample.C
		now, at := size(), time.Now()
		t.Logf("%4.0fs: %6.1f MiB, %+6.1f MiB/min; %d tasks and %d /instant taken, %d refused or failed, %d pushes received",
			at.Sub(start).Seconds(), float64(now)/(1<<20), float64(now-last)/(1<<20)/at.Sub(lastAt).Minutes(),
			scheduled.Load(), instants.Load(), refused.Load(), r.push.Counts().Delivered)
		last, lastAt = now, at
	}
	close(stop)
	wg.Wait()
	t.Logf("end: %.1f MiB after %s, %.1f MiB/min on average", float64(last)/(1<<20), lastAt.Sub(start).Round(time.Second),
		float64(last-first)/(1<<20)/lastAt.Sub(start).Minutes())
}

// constantModel is a chat-completions endpoint that answers every request
// with reply (plain or streamed, as asked), for load that needs no script;
// it returns its API URL.
func constantModel(t *testing.T, reply string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		content, _ := json.Marshal(reply)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s},\"finish_reason\":null}]}\n\n", content)
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":60,"total_tokens":70}}`, content)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}
