package webhook_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"amsg/push/netguard"
	"amsg/scheduler/webhook"
)

// TestSignMatchesTheReferenceLibrary signs as the Standard Webhooks
// reference library does, for generated secrets and the specification's own
// example secret.
func TestSignMatchesTheReferenceLibrary(t *testing.T) {
	ts := time.Unix(1_674_087_231, 0)
	body := []byte(`{"type":"message.sent","timestamp":"2026-11-26T08:00:00.000Z","data":{"seq":"1"}}`)
	for _, secret := range []string{webhook.GenerateSecret(), webhook.GenerateSecret(), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		key, err := webhook.ParseSecret(secret)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Sign("msg_wh_a_1", ts, body)
		if err != nil {
			t.Fatal(err)
		}
		got := webhook.Sign(key, "msg_wh_a_1", ts, body)
		if got != want {
			t.Errorf("Sign = %s, the reference library signs %s", got, want)
		}
		h := http.Header{"Webhook-Id": {"msg_wh_a_1"}, "Webhook-Timestamp": {"1674087231"}, "Webhook-Signature": {got}}
		if err := ref.VerifyIgnoringTimestamp(body, h); err != nil {
			t.Errorf("the reference library refuses %s: %v", got, err)
		}
		h.Set("Webhook-Signature", webhook.Sign(key, "msg_wh_a_1", ts, append(body, ' ')))
		if err := ref.VerifyIgnoringTimestamp(body, h); err == nil {
			t.Error("a signature of another body verifies")
		}
	}
	if a, b := webhook.GenerateSecret(), webhook.GenerateSecret(); a == b || !strings.HasPrefix(a, "whsec_") {
		t.Errorf("generated %q and %q", a, b)
	}
}

func TestParseSecretRefuses(t *testing.T) {
	for _, secret := range []string{"", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_!!!", "whsec_c2hvcnQ=",
		"whsec_" + strings.Repeat("QUFB", 30)} {
		if _, err := webhook.ParseSecret(secret); !errors.Is(err, webhook.ErrInvalidSecret) {
			t.Errorf("ParseSecret(%q) = %v, want ErrInvalidSecret", secret, err)
		}
	}
}

func TestURLPolicy(t *testing.T) {
	r := netguard.MapResolver{"hooks.example.com": {"93.184.215.14"}, "intranet.example.com": {"10.0.0.8"}, "metadata.example.com": {"169.254.169.254"}}
	strict, open := webhook.URLPolicy{Resolver: r}, webhook.URLPolicy{AllowPrivate: true, Resolver: r}
	for _, tt := range []struct {
		policy webhook.URLPolicy
		url    string
		want   string // "" accepted
	}{
		{strict, "https://hooks.example.com/amsg?token=x", ""},
		{strict, "https://hooks.example.com:8443/amsg", ""},
		{strict, "https://93.184.215.14/", ""},
		{strict, "http://hooks.example.com/", "must be an https URL"},
		{strict, "https://intranet.example.com/", "resolves to 10.0.0.8, a private-use address"},
		{strict, "https://metadata.example.com/", "link-local"},
		{strict, "https://[::1]/", "loopback"},
		{strict, "https://localhost:8443/", "is local"},
		{strict, "https://nowhere.example.com/", "does not resolve"},
		{strict, "https://user:pass@hooks.example.com/", "credentials"},
		{strict, "https://hooks.example.com/#x", "fragment"},
		{strict, "https://x.invalid/", ".invalid"},
		{strict, "mailto:a@b", "is not a URL"},
		{strict, "", "is missing"},
		{strict, "https://hooks.example.com/" + strings.Repeat("a", 2048), "longer than 2048"},
		{open, "http://127.0.0.1:9999/hook", ""},
		{open, "https://intranet.example.com/", ""},
		{open, "ftp://127.0.0.1/", "must be an https URL"},
	} {
		err := tt.policy.Check(context.Background(), tt.url)
		var ue *webhook.URLError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%.60s (allow private %v): %v", tt.url, tt.policy.AllowPrivate, err)
		case tt.want != "" && (!errors.As(err, &ue) || !strings.Contains(ue.Reason, tt.want)):
			t.Errorf("%.60s (allow private %v): %v, want …%s…", tt.url, tt.policy.AllowPrivate, err, tt.want)
		}
	}
}
