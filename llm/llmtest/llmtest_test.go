package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"amsg/llm/llmtest"
)

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestReplyPlainAndStreamed(t *testing.T) {
	llm := llmtest.NewServer(t)
	reply := llmtest.Reply{Content: "你好。", ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "f", Arguments: `{"a":1}`}},
		Usage: &llmtest.Usage{PromptTokens: 3, CompletionTokens: 2, CachedTokens: 1, ReasoningTokens: 1}}
	llm.Enqueue(reply, reply)

	resp, body := post(t, llm.APIURL()+"/chat/completions", `{"model":"m","stream":false}`)
	var completion struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &completion); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
	}
	c := completion.Choices[0]
	if c.Message.Content != "你好。" || c.FinishReason != "tool_calls" || c.Message.ToolCalls[0].Function.Arguments != `{"a":1}` ||
		completion.Usage.PromptTokens != 3 || completion.Usage.PromptTokensDetails.CachedTokens != 1 {
		t.Fatalf("completion %s", body)
	}

	resp, body = post(t, llm.APIURL()+"/chat/completions", `{"model":"m","stream":true}`)
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("stream %q: %s", resp.Header.Get("Content-Type"), body)
	}
	if !strings.Contains(body, `"content":"你好。"`) || !strings.Contains(body, `"arguments":"{\"a"`) || !strings.Contains(body, `"choices":[],`) {
		t.Fatalf("stream body %s", body)
	}

	reqs := llm.Requests()
	if len(reqs) != 2 || reqs[0].Stream() || !reqs[1].Stream() || reqs[1].Path != "/v1/chat/completions" || string(reqs[1].Body["model"]) != `"m"` {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestReleaseHoldsTheAnswer(t *testing.T) {
	llm := llmtest.NewServer(t)
	release := make(chan struct{})
	llm.Enqueue(llmtest.Reply{Status: 503, Body: `{"error":{"message":"busy"}}`, Release: release})
	got := make(chan string, 1)
	go func() {
		_, body := post(t, llm.APIURL(), `{}`)
		got <- body
	}()
	llm.WaitRequests(1)
	select {
	case body := <-got:
		t.Fatalf("answered before release: %s", body)
	default:
	}
	close(release)
	if body := <-got; body != `{"error":{"message":"busy"}}` {
		t.Fatalf("body %s", body)
	}
}

func TestAbortedSeesTheClientGoAway(t *testing.T) {
	llm := llmtest.NewServer(t)
	aborted := make(chan struct{})
	llm.Enqueue(llmtest.Reply{Content: "never", Release: make(chan struct{}), Aborted: aborted})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, llm.APIURL(), strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	llm.WaitRequests(1)
	select {
	case <-aborted:
		t.Fatal("aborted before the client went away")
	default:
	}
	cancel()
	<-aborted
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("client error %v", err)
	}
}

func TestStreamSendsPieceByPiece(t *testing.T) {
	llm := llmtest.NewServer(t)
	st := llm.Stream()
	lines := make(chan string, 10)
	go func() {
		resp, err := http.Post(llm.APIURL(), "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				lines <- string(buf[:n])
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	st.Content("a")
	if got := <-lines; !strings.Contains(got, `"content":"a"`) {
		t.Fatalf("first piece %q", got)
	}
	st.Raw(": ping\n\n")
	if got := <-lines; got != ": ping\n\n" {
		t.Fatalf("raw piece %q", got)
	}
	st.Done()
	var rest strings.Builder
	for l := range lines {
		rest.WriteString(l)
	}
	if rest.String() != "data: [DONE]\n\n" {
		t.Fatalf("end %q", rest.String())
	}
}
