package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"amsg/push"
	"amsg/push/pushtest"
)

// pushServiceCommand is the argument that makes the binary the push service.
const pushServiceCommand = "pushservice"

// pushServiceReady is the one line the push service prints on stdout once it
// listens.
type pushServiceReady struct {
	PushURL    string `json:"pushURL"`    // https://127.0.0.1:port, the subscriptions' origin
	ControlURL string `json:"controlURL"` // http://127.0.0.1:port, the benchmark's own requests
	CertPEM    string `json:"certPEM"`    // the certificate to trust for PushURL
}

// waitResult answers GET /wait: what arrived among the n messages after the
// first from.
type waitResult struct {
	Delivered  int      `json:"delivered"`
	First      int64    `json:"first"` // arrival of the earliest, Unix nanoseconds
	Last       int64    `json:"last"`  // arrival of the latest
	ErrorCount int      `json:"errorCount"`
	Errors     []string `json:"errors,omitempty"` // the first few
	// LatenciesMicros are arrival minus the due time each message carries
	// (see dueMarker), when asked for with due=1.
	LatenciesMicros []int64 `json:"latenciesMicros,omitempty"`
}

// dueMarker precedes, in a task's text, the Unix millisecond at which the
// task is due, so the push service can tell how late it arrived.
const dueMarker = "deliverybench-due:"

// maxDueDigits bounds the due time's digits: Unix milliseconds have 13
// until the year 2286.
const maxDueDigits = 15

// dueAt reads the due time a decrypted push carries after dueMarker.
func dueAt(plaintext []byte) (time.Time, bool) {
	_, rest, ok := bytes.Cut(plaintext, []byte(dueMarker))
	if !ok {
		return time.Time{}, false
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	ms, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil || end > maxDueDigits {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// runPushService is the child process: pushtest's verifying, decrypting
// service over TLS on loopback, keeping counts and arrival times rather than
// bodies, plus a control server. It stops when its standard input closes
// (the benchmark ended or died) or on a signal.
func runPushService(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet(pushServiceCommand, flag.ContinueOnError)
	vapidKey := fs.String("vapid-public-key", "", "the application server's VAPID public key, base64url")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *vapidKey == "" {
		return errors.New("pushservice: --vapid-public-key is required")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		cancel()
	}()

	var arrived arrivals
	ps := pushtest.NewServerWithOptions(*vapidKey, pushtest.Options{TLS: true, DiscardBodies: true, OnDelivered: arrived.add})
	defer ps.Close()

	control, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pushservice: control listener: %w", err)
	}
	srv := &http.Server{Handler: controlHandler(ps, &arrived), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(control) }()
	defer srv.Close()

	ready, err := json.Marshal(pushServiceReady{PushURL: ps.URL, ControlURL: "http://" + control.Addr().String(), CertPEM: string(ps.CertPEM())})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", ready); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// arrival is what the benchmark keeps of one delivered message.
type arrival struct {
	at  time.Time
	due time.Time // zero when the message carries no due time
}

// arrivals records every delivered message in arrival order.
type arrivals struct {
	mu   sync.Mutex
	list []arrival
}

func (a *arrivals) add(m pushtest.Message) {
	due, _ := dueAt(m.Plaintext)
	a.mu.Lock()
	a.list = append(a.list, arrival{at: m.ReceivedAt, due: due})
	a.mu.Unlock()
}

// span returns the arrivals from index from, n of them.
func (a *arrivals) span(from, n int) []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]arrival(nil), a.list[from:min(from+n, len(a.list))]...)
}

// controlHandler serves the benchmark's requests to the push service.
func controlHandler(ps *pushtest.Server, arrived *arrivals) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /subscribe", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if err != nil || n < 1 || n > 1_000_000 {
			http.Error(w, "n must be a count of subscriptions", http.StatusBadRequest)
			return
		}
		subs := make([]push.Subscription, n)
		for i := range subs {
			subs[i] = ps.Subscribe()
		}
		_ = json.NewEncoder(w).Encode(subs)
	})
	mux.HandleFunc("GET /counts", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(ps.Counts())
	})
	mux.HandleFunc("GET /wait", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		from, err1 := strconv.Atoi(q.Get("from"))
		n, err2 := strconv.Atoi(q.Get("n"))
		timeout, err3 := time.ParseDuration(q.Get("timeout"))
		if err := errors.Join(err1, err2, err3); err != nil || from < 0 || n < 1 {
			http.Error(w, "want from, n and timeout", http.StatusBadRequest)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		counts, err := ps.WaitDelivered(ctx, from+n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusGatewayTimeout)
			return
		}
		errs := ps.Errors()
		res := summarize(arrived.span(from, n), q.Get("due") == "1")
		res.ErrorCount += counts.Errors
		for _, err := range errs[:min(len(errs), 5)] {
			res.Errors = append(res.Errors, err.Error())
		}
		_ = json.NewEncoder(w).Encode(res)
	})
	return mux
}

// summarize reports what the benchmark needs about the arrivals of a phase.
func summarize(list []arrival, latencies bool) waitResult {
	res := waitResult{Delivered: len(list)}
	for i, a := range list {
		at := a.at.UnixNano()
		if i == 0 || at < res.First {
			res.First = at
		}
		res.Last = max(res.Last, at)
		if !latencies {
			continue
		}
		if a.due.IsZero() {
			res.ErrorCount++
			continue
		}
		res.LatenciesMicros = append(res.LatenciesMicros, a.at.Sub(a.due).Microseconds())
	}
	if res.ErrorCount > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("%d pushes carry no due time (%s)", res.ErrorCount, dueMarker))
	}
	return res
}
