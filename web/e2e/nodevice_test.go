package e2e_test

import (
	"strings"
	"testing"

	"amsg/llm/llmtest"
	"amsg/web/browsertest"
)

// TestChatWithoutADevice: a browser that never turned notifications on
// chats over SSE; the reply shows in the thread, nothing is pushed, and the
// page says plainly that notifications are off.
func TestChatWithoutADevice(t *testing.T) {
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Content: "Hello from the model."})
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p, _ := openPage(t, b, srv, "")
	useModel(t, p, srv.URL, "#/chat/new", llm)
	p.WaitFor(`document.querySelector('.thread-empty') && !document.querySelector('.composer .send').disabled`)
	var banner string
	p.Eval(`[...document.querySelectorAll('.notice')].map((n) => n.textContent).join(' ')`, &banner)
	if !strings.Contains(banner, "Notifications are off") {
		t.Fatalf("banners %q, want one saying notifications are off", banner)
	}

	p.Eval(`(() => {
		const input = document.getElementById('composer-input');
		input.value = 'Hi';
		input.form.requestSubmit();
	})()`, nil)
	p.WaitFor(`document.querySelectorAll('.msg.assistant .bubble').length === 1 && !document.querySelector('.composer .send.stop')`)
	var reply string
	p.Eval(`document.querySelector('.msg.assistant .bubble').textContent`, &reply)
	if reply != "Hello from the model." {
		t.Fatalf("reply %q", reply)
	}
	if n := len(srv.Push.Requests()); n != 0 {
		t.Fatalf("%d pushes sent for a user without a device", n)
	}
	if errs := b.TakeConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}
