package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
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
// service behind TLS on loopback, plus a control server. It stops when its
// standard input closes (the benchmark ended or died) or on a signal.
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

	ps := pushtest.NewServer(*vapidKey)
	defer ps.Close()
	front, certPEM, err := newTLSFront(ps.URL)
	if err != nil {
		return err
	}
	defer front.Close()
	// Subscriptions and the VAPID audience take the origin from URL, so it
	// must name the TLS front before the first Subscribe.
	ps.URL = "https://" + front.Addr().String()
	go front.serve(ctx)

	control, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("pushservice: control listener: %w", err)
	}
	srv := &http.Server{Handler: controlHandler(ps), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(control) }()
	defer srv.Close()

	ready, err := json.Marshal(pushServiceReady{PushURL: ps.URL, ControlURL: "http://" + control.Addr().String(), CertPEM: certPEM})
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", ready); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// controlHandler serves the benchmark's requests to the push service.
func controlHandler(ps *pushtest.Server) http.Handler {
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
		msgs, err := ps.WaitMessages(ctx, from+n)
		if err != nil {
			http.Error(w, err.Error(), http.StatusGatewayTimeout)
			return
		}
		_ = json.NewEncoder(w).Encode(summarize(msgs[from:from+n], ps.Errors(), q.Get("due") == "1"))
	})
	return mux
}

// summarize reports what the benchmark needs about the messages of a phase.
func summarize(msgs []pushtest.Message, errs []error, latencies bool) waitResult {
	res := waitResult{Delivered: len(msgs), ErrorCount: len(errs)}
	for _, err := range errs[:min(len(errs), 5)] {
		res.Errors = append(res.Errors, err.Error())
	}
	for i, m := range msgs {
		at := m.ReceivedAt.UnixNano()
		if i == 0 || at < res.First {
			res.First = at
		}
		res.Last = max(res.Last, at)
		if !latencies {
			continue
		}
		due, ok := dueAt(m.Plaintext)
		if !ok {
			res.ErrorCount++
			res.Errors = append(res.Errors, fmt.Sprintf("%s: a push without its due time", m.Endpoint))
			continue
		}
		res.LatenciesMicros = append(res.LatenciesMicros, m.ReceivedAt.Sub(due).Microseconds())
	}
	return res
}

// tlsFront terminates TLS on loopback and passes each connection's bytes to
// the plain HTTP service behind it. Until pushtest serves TLS itself this is
// how its handler gets a TLS front; it adds one loopback copy per byte.
type tlsFront struct {
	net.Listener
	backend string // host:port
}

func newTLSFront(backendURL string) (*tlsFront, string, error) {
	u, err := url.Parse(backendURL)
	if err != nil {
		return nil, "", fmt.Errorf("pushservice: backend URL: %w", err)
	}
	cert, certPEM, err := selfSignedCert()
	if err != nil {
		return nil, "", err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"}, // the service behind speaks HTTP/1.1 only
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		return nil, "", fmt.Errorf("pushservice: TLS listener: %w", err)
	}
	return &tlsFront{Listener: ln, backend: u.Host}, certPEM, nil
}

func (f *tlsFront) serve(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := f.Accept()
		if err != nil {
			return
		}
		wg.Go(func() { f.pass(ctx, conn) })
	}
}

// pass copies between one client connection and a new backend connection
// until either side closes.
func (f *tlsFront) pass(ctx context.Context, client net.Conn) {
	defer client.Close()
	var d net.Dialer
	backend, err := d.DialContext(ctx, "tcp", f.backend)
	if err != nil {
		return
	}
	defer backend.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(backend, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, backend); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// selfSignedCert makes a P-256 certificate for 127.0.0.1 that is its own
// authority, so clients can trust it as a root (SSL_CERT_FILE,
// NODE_EXTRA_CA_CERTS).
func selfSignedCert() (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "deliverybench push service"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("pushservice: certificate: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, string(certPEM), nil
}
