package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/web/browsertest"
)

// sendMessage types text in the composer and sends it.
func sendMessage(p *browsertest.Page, text string) {
	p.Eval(`(() => {
		const input = document.getElementById('composer-input');
		input.value = `+jsonString(text)+`;
		input.form.requestSubmit();
	})()`, nil)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Issue 19: a model on this machine, refused because the server calls only
// public hosts, is explained on the page with both ways to allow it.
func TestLocalModelRefusedSaysWhyAndHow(t *testing.T) {
	model := llmtest.NewServer(t) // on 127.0.0.1
	srv := newServerWith(t, serverOptions{strictLLM: true})
	b := browsertest.New(t, browsertest.Config{AllowConsoleErrors: true}) // the browser logs the 400 it gets
	p, _ := openPage(t, b, srv, "")
	useModel(t, p, srv.URL, "#/chat/new", model)
	p.WaitFor(`document.querySelector('.thread-empty') && !document.querySelector('.composer .send').disabled`)
	sendMessage(p, "hello")
	p.WaitFor(`document.querySelector('.msg-error')`)
	var text string
	p.Eval(`document.querySelector('.msg-error').textContent`, &text)
	for _, want := range []string{"INVALID_API_URL", "public hosts", "--llm-api-url", "--allow-private-llm", "127.0.0.1"} {
		if !strings.Contains(text, want) {
			t.Errorf("the error says %q, lacking %q", text, want)
		}
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the refused model got %d requests", n)
	}
}

// With an operator's model (--llm-api-url) the page chats with empty model
// settings, and the server's model answers.
func TestOperatorModelChatsWithEmptySettings(t *testing.T) {
	model := llmtest.NewServer(t)
	model.Enqueue(llmtest.Reply{Content: "Hello from the operator's model."})
	srv := newServerWith(t, serverOptions{strictLLM: true, operatorModel: llm.Model{APIURL: model.APIURL(), APIKey: "sk-op", Name: "local"}})
	b := browsertest.New(t, browsertest.Config{})
	p, _ := openPage(t, b, srv, "#/chat/new")
	p.WaitFor(`document.querySelector('.thread-empty') && !document.querySelector('.composer .send').disabled`)
	sendMessage(p, "hello")
	p.WaitFor(`[...document.querySelectorAll('.msg.assistant .bubble')].some((b) => b.textContent.includes('operator'))`)
	if reqs := model.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body["model"]), "local") {
		t.Errorf("the operator's model got %+v", reqs)
	}
}
