package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckHost(t *testing.T) {
	r := MapResolver{
		"push.example.com":  {"142.250.74.106"},
		"mixed.example.com": {"142.250.74.106", "10.1.2.3"},
		"empty.example.com": {},
	}
	ctx := context.Background()
	for host, want := range map[string]string{
		"push.example.com": "", "8.8.8.8": "",
		"127.0.0.1": "literal a loopback", "::ffff:10.0.0.1": "literal a private-use",
		"mixed.example.com": "10.1.2.3 a private-use",
	} {
		refusal, err := CheckHost(ctx, r, host)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		got := ""
		if refusal != nil {
			got = refusal.Addr.String() + " " + refusal.Why
			if refusal.Literal {
				got = "literal " + refusal.Why
			}
		}
		if !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%s: refusal %q, want %q…", host, got, want)
		}
	}
	for _, host := range []string{"nowhere.example.com", "empty.example.com"} {
		if _, err := CheckHost(ctx, r, host); !errors.Is(err, ErrUnresolved) {
			t.Errorf("%s: err = %v, want ErrUnresolved", host, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := CheckHost(cancelled, r, "push.example.com"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled lookup: err = %v", err)
	}
}

func TestIsLocalName(t *testing.T) {
	for host, local := range map[string]bool{"localhost": true, "a.localhost": true, "localhost.example.com": false, "mylocalhost": false} {
		if IsLocalName(host) != local {
			t.Errorf("IsLocalName(%q) = %v", host, !local)
		}
	}
}

// TestRefusePrivateDial dials a loopback server through the Control, by
// address and by a name a resolver points at loopback: both are refused with
// the caller's error, and nothing reaches the server.
func TestRefusePrivateDial(t *testing.T) {
	reached := false
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	defer srv.Close()
	errMine := errors.New("my endpoint refused")
	dialer := &net.Dialer{Control: RefusePrivate(errMine)}
	named := strings.Replace(srv.URL, "127.0.0.1", "hook.example.net", 1)
	client := &http.Client{Transport: &http.Transport{DialContext: Dial(dialer, MapResolver{"hook.example.net": {"127.0.0.1"}})}}
	for _, u := range []string{srv.URL, named} {
		_, err := client.Get(u)
		if !errors.Is(err, errMine) || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: err = %v", u, err)
		}
	}
	if reached {
		t.Error("the server was reached")
	}
}
