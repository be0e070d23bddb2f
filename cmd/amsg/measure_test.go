package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/pushtest"
	"amsg/push/webpush"
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
			"userMessage":   fmt.Sprintf("steady load %d: a fixed reminder of ordinary length, the kind a companion sends.", n),
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

// Issue 22 §1: 1 100 connections from one address that declare a body and
// never send it (with the client token), on a server of 256 descriptors:
// /healthz from another address every 100 connections (3 s timeout), then
// how long a request without the token waits for its 401.
func TestMeasureSilentBodies(t *testing.T) {
	measuring(t)
	const flood, nofile, token = 1100, 256, "client-token-0123456789"
	raiseFileLimit(t, 4*flood)
	p := startAmsgWithFileLimit(t, nofile, filepath.Join(t.TempDir(), "data"), "AMSG_CLIENT_TOKEN="+token, "AMSG_RATE_LIMIT=off")
	addr := strings.TrimPrefix(p.URL, "http://")
	silent := func(from, headers string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
		conn, err := d.Dial("tcp", addr)
		if err != nil {
			return nil
		}
		t.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "POST /api/v1/device-seen HTTP/1.1\r\nHost: amsg\r\nX-User-Id: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n%s\r\n", taskUser, headers)
		return conn
	}
	health := http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var failed []string
	for i := range flood {
		silent("127.0.0.2", "X-Client-Token: "+token+"\r\n")
		if i%100 == 99 {
			start := time.Now()
			resp, err := health.Get(p.URL + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				failed = append(failed, fmt.Sprintf("%d (%s)", i+1, time.Since(start).Round(time.Millisecond)))
			}
		}
	}
	t.Logf("/healthz failed at %d of %d checks: %v", len(failed), flood/100, failed)
	conn := silent("127.0.0.3", "")
	if conn == nil {
		t.Log("the request without the token could not connect")
		return
	}
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Logf("without the token: no answer after %s: %v", time.Since(start).Round(time.Millisecond), err)
		return
	}
	t.Logf("without the token: %d after %s, Connection: close %v", resp.StatusCode, time.Since(start).Round(time.Millisecond), resp.Close)
}

// Issue 22 §3 and §4 from one address: 80 /instant at once under 80 user
// ids while the model holds every call, then a victim's /instant from
// another address; 300 tasks of 700 KB over 38 fresh ids; and with the
// client token, 130 requests naming a victim's id, then the victim's own.
func TestMeasureOneAddress(t *testing.T) {
	measuring(t)
	const token = "client-token-0123456789"
	r := newTaskRig(t, "AMSG_CLIENT_TOKEN="+token)
	release := make(chan struct{})
	var asked atomic.Int64
	arrived := make(chan struct{}, 200)
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		asked.Add(1)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(model.Close)
	t.Cleanup(func() { close(release) })
	p := r.start(t)
	clientFrom := func(from string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	instant := func(c *http.Client, user string) int {
		body, _ := json.Marshal(map[string]any{"contactName": "Rei", "completePrompt": "hi", "apiUrl": model.URL + "/v1", "apiKey": "k",
			"primaryModel": "m", "pushSubscription": r.sub})
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/instant", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		req.Header.Set("X-User-Id", user)
		req.Header.Set("X-Client-Token", token)
		resp, err := c.Do(req)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	attacker := clientFrom("127.0.0.2")
	refused := make(chan int, 80) // a status, or 0 for a connection closed unanswered
	for i := range 80 {
		go func() {
			if status := instant(attacker, fmt.Sprintf("550e8400-e29b-41d4-a716-4466554401%02d", i)); status != http.StatusOK {
				refused <- status
			}
		}()
	}
	// Each call either reaches the model (and is held) or is refused.
	held, statuses := 0, map[int]int{}
	for held+sum(statuses) < 80 {
		select {
		case <-arrived:
			held++
		case status := <-refused:
			statuses[status]++
		}
	}
	victim := make(chan int, 1)
	go func() { victim <- instant(clientFrom("127.0.0.3"), taskUser) }()
	select {
	case <-arrived:
		t.Logf("80 /instant from one address: %d rounds held, refused %v; the victim's /instant from another address reached the model", held, statuses)
	case status := <-victim:
		t.Logf("80 /instant from one address: %d rounds held, refused %v; the victim's /instant from another address: %d", held, statuses, status)
	}

	// 300 tasks of 700 KB over 38 ids, from an address of their own, ten a
	// second (the 300 took 34 s).
	writer := clientFrom("127.0.0.5")
	pace := time.NewTicker(100 * time.Millisecond)
	defer pace.Stop()
	ring, err := usercrypt.NewKeyring(masterKey)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 700_000)
	devices := map[string]push.Subscription{}
	var stored int64
	taken, byStatus := 0, map[string]int{}
	start := time.Now()
	for i := range 300 {
		<-pace.C
		user := fmt.Sprintf("550e8400-e29b-41d4-a716-4466554402%02d", i%38)
		if _, ok := devices[user]; !ok {
			devices[user] = r.push.Subscribe()
		}
		plaintext, _ := json.Marshal(map[string]any{"contactName": "Rei", "messageType": "fixed", "userMessage": big,
			"firstSendTime": push.FormatTimestamp(time.Now().Add(24 * time.Hour)), "pushSubscription": devices[user]})
		env, _ := json.Marshal(ring.UserKey(user).Seal(plaintext))
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/schedule-message", bytes.NewReader(env))
		for k, v := range map[string]string{"X-User-Id": user, "X-Client-Token": token, "Content-Type": "application/json",
			"X-Payload-Encrypted": "true", "X-Encryption-Version": "1"} {
			req.Header.Set(k, v)
		}
		resp, err := writer.Do(req)
		if err != nil { // refused from the headers: the server closed while the body was being sent
			byStatus["connection closed"]++
			continue
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusCreated {
			taken++
			stored += int64(len(big))
			continue
		}
		var e struct {
			Error struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		byStatus[fmt.Sprintf("%d %s %v", resp.StatusCode, e.Error.Code, e.Error.Details["limit"])]++
	}
	t.Logf("300 tasks of 700 KB over 38 ids from one address: %d taken (%d MB of messages) in %s; refused %v",
		taken, stored/1_000_000, time.Since(start).Round(time.Second), byStatus)

	// 130 requests naming the victim's id, with the token.
	claims := map[int]int{}
	for range 130 {
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/device-seen", strings.NewReader(`{"endpoint":"https://push.example/x"}`))
		req.Header.Set("X-User-Id", taskUser)
		req.Header.Set("X-Client-Token", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := clientFrom("127.0.0.4").Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		claims[resp.StatusCode]++
	}
	status, _, _ := r.callWith(t, p, http.MethodPut, "push-subscription", map[string]any{"subscription": r.sub}, map[string]string{"X-Client-Token": token})
	t.Logf("130 requests naming the victim's id (answers %v); the victim's own PUT push-subscription then: %d", claims, status)
}

func sum(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Issue 22 §10: 2 000 fixed tasks due at once for 100 users, one device
// each, on one push service, healthy and then misbehaving (20 % 500s, 5 %
// 429s with Retry-After: 1, 1 % requests that hang for 35 s); pushes a
// second from the due time to the last distinct arrival.
func TestMeasureMisbehavingPushService(t *testing.T) {
	measuring(t)
	for _, faulty := range []bool{false, true} {
		t.Run(map[bool]string{false: "healthy", true: "misbehaving"}[faulty], func(t *testing.T) {
			measurePushThroughput(t, faulty)
		})
	}
}

func measurePushThroughput(t *testing.T, faulty bool) {
	const users, tasks, hang = 100, 2000, 35 * time.Second
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	const hangStatus = http.StatusAccepted // a scripted answer that stands for a hang
	var fake *pushtest.Server
	public, private, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	fake = pushtest.NewServerWithOptions(public, pushtest.Options{DiscardBodies: true, OnDelivered: func(m pushtest.Message) {
		if m.Status == hangStatus {
			select {
			case <-time.After(hang):
			case <-done:
			}
			return
		}
		var p struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(m.Plaintext, &p)
		mu.Lock()
		if _, ok := arrived[p.MessageID]; !ok {
			arrived[p.MessageID] = m.ReceivedAt
		}
		mu.Unlock()
	}})
	t.Cleanup(fake.Close)
	r := newTaskRig(t, "AMSG_RATE_LIMIT=off", "AMSG_LOG_LEVEL=info", "AMSG_VAPID_PUBLIC_KEY="+public, "AMSG_VAPID_PRIVATE_KEY="+private)
	p := r.start(t)
	rng := rand.New(rand.NewPCG(22, 10))
	ids := make([]string, users)
	for i := range ids {
		ids[i] = fmt.Sprintf("550e8400-e29b-41d4-a716-4466554403%02d", i)
		sub := fake.Subscribe()
		if faulty {
			for range 200 {
				switch x := rng.Float64(); {
				case x < 0.20:
					fake.Respond(sub, 1, pushtest.Response{Status: http.StatusInternalServerError})
				case x < 0.25:
					fake.Respond(sub, 1, pushtest.Response{Status: http.StatusTooManyRequests, RetryAfter: "1"})
				case x < 0.26:
					fake.Respond(sub, 1, pushtest.Response{Status: hangStatus})
				default:
					fake.Respond(sub, 1, pushtest.Response{Status: http.StatusCreated})
				}
			}
		}
		if status := sealedCall(t, p.URL, ids[i], http.MethodPut, "push-subscription", map[string]any{"subscription": sub}); status != http.StatusOK {
			t.Fatalf("push-subscription: %d", status)
		}
	}
	due := time.Now().Add(40 * time.Second).Truncate(time.Second)
	scheduleFixedBurst(t, p.URL, ids, tasks, due)
	// Until every push arrived, or none arrived for 45 s (a hang is 35 s).
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(arrived)
	}
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	seen, since := 0, time.Now()
	for {
		<-poll.C
		n := count()
		if n >= tasks || time.Since(since) > 45*time.Second && time.Now().After(due) {
			break
		}
		if n > seen {
			seen, since = n, time.Now()
		}
	}
	mu.Lock()
	var after []time.Duration
	for _, at := range arrived {
		after = append(after, at.Sub(due))
	}
	mu.Unlock()
	slices.Sort(after)
	// The arrival of the q-th fraction of all the pushes due, and the pace
	// up to it.
	at := func(q float64) string {
		i := int(q*tasks) - 1
		if i >= len(after) {
			return "never"
		}
		return fmt.Sprintf("%s (%.0f/s)", after[i].Round(time.Millisecond), float64(i+1)/after[i].Seconds())
	}
	t.Logf("%d of %d pushes arrived; after the due time: half %s, 90 %% %s, 99 %% %s, all %s; %d requests to the service",
		len(after), tasks, at(0.5), at(0.9), at(0.99), at(1), fake.Counts().Requests)
}
