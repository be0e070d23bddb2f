package e2e_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/web/browsertest"
)

// An iPhone gets a reply too long for one push as one summary naming the
// whole push in _truncated (the sender's doing); the worker that receives
// it fetches the whole push from the server's outbox, and the page shows
// the whole reply in place of the summary.
func TestTruncatedReplyIsCompletedFromTheOutbox(t *testing.T) {
	var apple *pushtest.Server
	srv := newServerWith(t, serverOptions{sender: func(c *webpush.Config) {
		apple = pushtest.NewServerWithOptions(c.VAPIDPublicKey, pushtest.Options{TLS: true, Host: "web.push.apple.com"})
		t.Cleanup(apple.Close)
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(apple.CertPEM())
		c.Resolver, c.RootCAs = apple.Resolver(), pool
	}})
	b := browsertest.New(t, browsertest.Config{})
	p, _ := openPage(t, b, srv, "")
	onboard(t, b, p, srv.URL)
	id := userID(t, p)
	iphone, _ := json.Marshal(apple.Subscribe())
	if _, err := srv.Store.PutSubscription(t.Context(), id, iphone, time.Time{}); err != nil {
		t.Fatal(err)
	}

	llm := llmtest.NewServer(t)
	long := strings.Repeat("好", 1700) // one segment of 5100 bytes: over one push
	llm.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "call_tz", Name: "get_timezone", Arguments: "{}"}}},
		llmtest.Reply{Content: long},
	)
	const session = "sess_truncated"
	runTimeZoneRound(t, srv, id, llm, session)

	// What the iPhone got for the reply: one summary.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var summary []byte
	for n := 1; summary == nil; n++ {
		pushes, err := apple.WaitPushes(ctx, n)
		if err != nil {
			t.Fatalf("waiting for the iPhone's push %d: %v", n, err)
		}
		if strings.Contains(string(pushes[n-1].JSON), `"_truncated"`) {
			summary = pushes[n-1].JSON
		}
	}
	var cut struct {
		MessageID string `json:"messageId"`
		Message   string `json:"message"`
	}
	json.Unmarshal(summary, &cut)
	if len(summary) > 3993 || len(cut.Message) >= len(long) {
		t.Fatalf("summary of %d bytes with %d bytes of text", len(summary), len(cut.Message))
	}

	// The worker shows the summary, fetches the whole push and puts it
	// behind the notification; the open page shows the whole reply.
	p.Navigate(srv.URL + "/#/chat/" + session)
	p.WaitServiceWorker()
	deliverPushes(p, string(summary))
	p.WaitForWorker(`self.registration.getNotifications({ tag: ` + strconv.Quote(cut.MessageID) + ` })
		.then((ns) => ns.length === 1 && ns[0].data.payload.message === ` + strconv.Quote(long) + `)`)
	p.WaitFor(`[...document.querySelectorAll('.msg.assistant .bubble')].some((b) => b.textContent === ` + strconv.Quote(long) + `)`)
	var texts []string
	p.Eval(`[...document.querySelectorAll('.msg.assistant .bubble')].map((b) => b.textContent)`, &texts)
	for _, text := range texts {
		if strings.HasSuffix(text, "…") {
			t.Errorf("the page still shows the summary beside the whole reply: %d bytes", len(text))
		}
	}
}
