package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"amsg/llm/llmtest"
)

// testPolicy lets tests call the fake LLM, which listens on loopback.
var testPolicy = URLPolicy{AllowPrivate: true}

// fakeResolver answers every name with its addresses.
type fakeResolver []netip.Addr

func (r fakeResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

func TestURLPolicyRefusesNonPublicHosts(t *testing.T) {
	public := URLPolicy{Resolver: fakeResolver{netip.MustParseAddr("93.184.216.34")}}
	for _, u := range []string{
		"http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://api.localhost/v1", "http://[::1]/v1",
		"http://10.0.0.5/v1", "http://192.168.1.1/v1", "http://169.254.169.254/latest/meta-data",
		"http://[fe80::1]/v1", "http://0.0.0.0:22/", "http://100.64.0.1/v1", "http://[::ffff:127.0.0.1]/v1",
		"http://[::ffff:0:127.0.0.1]/v1", "http://[2001:2::1]/v1", "http://[3fff::1]/v1", "http://[2001::1]/v1",
	} {
		err := public.Check(context.Background(), u)
		if !errors.Is(err, ErrInvalidAPIURL) || !strings.Contains(err.Error(), "only public hosts") {
			t.Errorf("Check(%q) = %v, want a refusal", u, err)
		}
	}
	rebinding := URLPolicy{Resolver: fakeResolver{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")}}
	if err := rebinding.Check(context.Background(), "https://llm.example.com/v1"); !errors.Is(err, ErrInvalidAPIURL) {
		t.Errorf("a name with one private address: %v", err)
	}
	if err := public.Check(context.Background(), "https://api.example.com/v1"); err != nil {
		t.Errorf("public host refused: %v", err)
	}
	if err := testPolicy.Check(context.Background(), "http://127.0.0.1:8080/v1"); err != nil {
		t.Errorf("AllowPrivate refused loopback: %v", err)
	}
}

// The dial-time check holds even when the caller skipped Check (a stored
// task, a name that re-resolves): loopback is never dialled.
func TestClientRefusesPrivateAddressesWhenDialling(t *testing.T) {
	llm := llmtest.NewServer(t)
	_, err := NewClient(Config{}).Complete(context.Background(), Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Prompt: "p"})
	if !errors.Is(err, ErrTransport) || !errors.Is(err, errRefusedAddress) {
		t.Fatalf("err = %v, want a refused dial", err)
	}
	if strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "loopback") {
		t.Errorf("the caller's error tells why the dial failed: %q", err)
	}
	if n := len(llm.Requests()); n != 0 {
		t.Errorf("the fake LLM got %d requests", n)
	}
}

func TestClientFollowsNoRedirects(t *testing.T) {
	var hits int
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	t.Cleanup(target.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/internal", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	_, err := NewClient(Config{Policy: testPolicy}).Complete(context.Background(), Request{APIURL: redirector.URL, APIKey: testKey, Model: "m", Prompt: "p"})
	if !errors.Is(err, ErrStatus) || hits != 0 {
		t.Fatalf("err = %v, target hits = %d; want the 307 as an error and no hit", err, hits)
	}
}

// The operator's model is trusted wherever it points and fills in for a
// request without apiUrl.
func TestClientDefaultModel(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Content: "ok"})
	c := NewClient(Config{Default: Model{APIURL: llm.APIURL(), APIKey: "sk-operator", Name: "local-model"}})
	resp, err := c.Complete(context.Background(), Request{Prompt: "p"})
	if err != nil || resp.Content != "ok" {
		t.Fatalf("%v, %+v", err, resp)
	}
	req := llm.Requests()[0]
	if req.Header.Get("Authorization") != "Bearer sk-operator" || string(req.Body["model"]) != `"local-model"` {
		t.Errorf("sent %v %s", req.Header, req.Raw)
	}
}

// A key in the apiUrl's query never reaches an error message.
func TestErrorsMaskTheQuery(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Status: 500})
	_, err := NewClient(Config{Policy: testPolicy}).Complete(context.Background(),
		Request{APIURL: llm.APIURL() + "?key=AIzaSECRET123", APIKey: "x", Model: "m", Prompt: "p"})
	if err == nil || strings.Contains(err.Error(), "AIzaSECRET123") || !strings.Contains(err.Error(), "key=redacted") {
		t.Fatalf("err = %v", err)
	}
	// A transport failure too: its text is what a task stores as last_error.
	llm.Close()
	_, err = NewClient(Config{Policy: testPolicy}).Complete(context.Background(),
		Request{APIURL: "http://user:pw@" + strings.TrimPrefix(llm.URL, "http://") + "/v1?key=AIzaSECRET123", APIKey: "x", Model: "m", Prompt: "p"})
	if !errors.Is(err, ErrTransport) || strings.Contains(err.Error(), "AIzaSECRET123") || strings.Contains(err.Error(), "pw@") {
		t.Fatalf("transport err = %v", err)
	}
}

// Under the strict policy a failed answer tells its caller the status class
// only: not the status line, not the body (finding 3's read-back).
func TestStrictPolicyTellsTheStatusClassOnly(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Status: 401, Body: `{"error":{"message":"internal secret 42","code":"secret_code"}}`},
		llmtest.Reply{Body: `<html>admin panel</html>`})
	// A plain HTTP client stands in for a public host the dial guard lets through.
	c := NewClient(Config{HTTPClient: &http.Client{}})
	req := Request{APIURL: llm.APIURL(), APIKey: testKey, Model: "m", Prompt: "p"}
	_, err := c.Complete(context.Background(), req)
	if !errors.Is(err, ErrStatus) || err.Error() != "AI API error: the endpoint answered with an error status (4xx). Request URL: "+llm.URL+"/v1/chat/completions" {
		t.Fatalf("status error = %v", err)
	}
	var e *Error
	if errors.As(err, &e) && (e.ProviderMessage != "" || e.ProviderCode != "" || e.Status != 401 || !e.Permanent()) {
		t.Errorf("provider detail %q %q, status %d", e.ProviderMessage, e.ProviderCode, e.Status)
	}
	_, err = c.Complete(context.Background(), req)
	if !errors.Is(err, ErrBadResponse) || strings.Contains(err.Error(), "200") || !strings.Contains(err.Error(), "2xx") {
		t.Fatalf("bad response = %v", err)
	}
}
