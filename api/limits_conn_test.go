package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// silentRequest sends request headers that declare a body it never sends,
// and returns the answer the server gives meanwhile.
func silentRequest(t *testing.T, addr, headers string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST /api/v1/device-seen HTTP/1.1\r\nHost: amsg\r\nContent-Type: application/json\r\nContent-Length: 100\r\n%s\r\n", headers)
	// A bound on a broken server only: the body timeout below is ten minutes.
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer before the body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("the connection stayed open after %d: %v", resp.StatusCode, err)
	}
	return resp, string(body)
}

// Issue 22, finding 1: a request refused from its headers is answered at
// once, with Connection: close, not after the body timeout; and a request
// without a credential must start its body within the body start timeout.
func TestRefusedFromHeadersBeforeTheBody(t *testing.T) {
	s := newTestServer(t, Config{ClientToken: "client-token-0123",
		Limits: Limits{BodyReadTimeout: 10 * time.Minute, BodyStartTimeout: 10 * time.Minute}}, Deps{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	resp, body := silentRequest(t, addr, "X-User-Id: "+testUserID+"\r\n")
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close || !strings.Contains(body, "INVALID_CLIENT_TOKEN") {
		t.Fatalf("no token: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestBodyMustStartWithoutACredential(t *testing.T) {
	s := newTestServer(t, Config{Limits: Limits{BodyReadTimeout: 10 * time.Minute, BodyStartTimeout: 20 * time.Millisecond}}, Deps{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	resp, body := silentRequest(t, strings.TrimPrefix(srv.URL, "http://"), "X-User-Id: "+testUserID+"\r\n")
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, "REQUEST_TIMEOUT") {
		t.Fatalf("a body that never started: %d %s", resp.StatusCode, body)
	}
}

// A body that started has the whole body timeout, however slow its start.
func TestStartedBodyGetsTheFullTimeout(t *testing.T) {
	s := newTestServer(t, Config{Limits: Limits{BodyReadTimeout: 10 * time.Minute, BodyStartTimeout: time.Hour}}, Deps{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"endpoint":"https://push.example/x"}`
	fmt.Fprintf(conn, "POST /api/v1/device-seen HTTP/1.1\r\nHost: amsg\r\nX-User-Id: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", testUserID, len(body), body[:1])
	fmt.Fprint(conn, body[1:])
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Close {
		t.Fatalf("a whole body: %d %v", resp.StatusCode, resp.Header)
	}
}

// LimitListener closes a connection over its address's cap or the total at
// once and serves the others; a closed connection gives its place back.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := LimitListener(inner, ConnLimits{PerAddress: 2, Total: 3})
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedByServer := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	dial("127.0.0.2")
	dial("127.0.0.2")
	s1 := <-accepted
	<-accepted
	if over := dial("127.0.0.2"); !closedByServer(over) {
		t.Fatal("a third connection from one address was kept")
	}
	dial("127.0.0.3")
	<-accepted
	if over := dial("127.0.0.4"); !closedByServer(over) {
		t.Fatal("a connection over the total was kept")
	}
	// Closing one gives its place back.
	s1.Close()
	dial("127.0.0.2")
	if c := <-accepted; c == nil {
		t.Fatal("no place given back")
	}
}
