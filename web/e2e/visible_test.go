package e2e_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/builders"
	"amsg/builders/declarativetest"
	"amsg/llm/llmtest"
	"amsg/push/courier"
	"amsg/web/browsertest"
)

// Done-when of issue 11: an /instant round with reasoning and a tool call,
// then a /continue with a reply too long for one push, all with no window of
// the app open. Every push the round sends to the push service, decrypted by
// the fake push service and handed to amsg's worker one by one, shows a
// notification: none is silent, which is what makes iOS revoke a
// subscription. Under the default visible policy reasoning does not reach
// the push service at all; under upstream's it does, and shows quietly.
// Each content push that fits in one push is a Declarative Web Push message.
func TestEveryPushOfARoundShowsANotificationWhileHidden(t *testing.T) {
	for _, policy := range []courier.Policy{courier.PolicyVisible, courier.PolicyUpstream} {
		t.Run(string(policy), func(t *testing.T) { roundShowsEveryPush(t, policy) })
	}
}

func roundShowsEveryPush(t *testing.T, policy courier.Policy) {
	llm := llmtest.NewServer(t)
	long := strings.Repeat("好", 1700) // 5100 bytes and no sentence end: one segment, over one push
	llm.Enqueue(
		llmtest.Reply{ReasoningContent: "I need the user's time zone.",
			ToolCalls: []llmtest.ToolCall{{ID: "call_tz", Name: "get_timezone", Arguments: "{}"}}},
		llmtest.Reply{Content: long},
	)
	srv := newServerWith(t, serverOptions{policy: policy})
	b := browsertest.New(t, browsertest.Config{})
	p, _ := openPage(t, b, srv, "")
	onboard(t, b, p, srv.URL)
	id := userID(t, p)
	p.Navigate("about:blank") // no window of the app: the phone in a pocket

	const session = "sess_visible_round"
	runTimeZoneRound(t, srv, id, llm, session)
	plaintexts := waitRound(t, srv)
	kinds := make([]string, len(plaintexts))

	replyID := ""
	for i, plaintext := range plaintexts {
		var m struct {
			MessageKind string `json:"messageKind"`
			MessageID   string `json:"messageId"`
		}
		json.Unmarshal([]byte(plaintext), &m)
		kinds[i] = m.MessageKind
		if m.MessageKind == "content" {
			if _, err := declarativetest.Parse([]byte(plaintext)); err != nil {
				t.Errorf("content push %d is not declarative: %v", i, err)
			}
		}
		var before int
		p.WorkerEval(`self.__amsgTest.notificationsShown()`, &before)
		deliverPushes(p, plaintext)
		var after struct {
			Shown int `json:"shown"`
			Open  int `json:"open"`
		}
		p.WorkerEval(`self.registration.getNotifications().then((ns) => ({ shown: self.__amsgTest.notificationsShown(), open: ns.length }))`, &after)
		if after.Shown <= before || after.Open == 0 {
			t.Errorf("push %d (%s) showed nothing: shown %d → %d, %d open", i, m.MessageKind, before, after.Shown, after.Open)
		}
	}

	t.Logf("pushes of the round: %q", kinds)
	if reasoning := slices.Contains(kinds, "reasoning"); reasoning != (policy == courier.PolicyUpstream) {
		t.Errorf("policy %s: pushes %q", policy, kinds)
	}

	// The long reply, reassembled, is shown in place of the quiet ones.
	var shown []browsertest.Notification
	p.WorkerEval(`self.registration.getNotifications().then((ns) => ns.map((n) => ({ title: n.title, body: n.body, tag: n.tag })))`, &shown)
	for _, n := range shown {
		switch {
		case n.Tag == builders.SessionTag(session) || strings.HasPrefix(n.Tag, "amsg-receiving-"):
			t.Errorf("a quiet notification outlived the reply: %+v", n)
		case strings.HasPrefix(n.Body, "好好好"):
			replyID = n.Tag
		}
	}
	if replyID == "" {
		t.Errorf("no notification of the long reply among %+v", shown)
	}
}

// waitRound waits until the fake push service holds the whole round, the
// long reply last, and returns the plaintext of every message it was sent,
// chunks included, in the order sent.
func waitRound(t *testing.T, srv *server) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for n := 1; ; n++ {
		pushes, err := srv.Push.WaitPushes(ctx, n)
		if err != nil {
			t.Fatalf("waiting for push %d: %v", n, err)
		}
		if pushes[n-1].Chunks > 1 {
			break
		}
	}
	var out []string
	for _, m := range srv.Push.Messages() {
		out = append(out, string(m.Plaintext))
	}
	return out
}
