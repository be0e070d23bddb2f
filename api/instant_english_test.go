package api

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/loop"
)

// TestInstantStreamsEnglishSentenceBySentence: the fake model streams an
// English reply word by word; each sentence reaches the page as a frame, and
// the push service as a push, once the next sentence has begun, before the
// model has finished (issue 19).
func TestInstantStreamsEnglishSentenceBySentence(t *testing.T) {
	f := newInstantFixture(t, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	st := f.llm.Stream()
	_, frames := f.stream(t, t.Context(), "/api/v1/instant", jsonBody(t, f.body(map[string]any{"pushSubscription": sub})))
	nextPayload := func() string {
		t.Helper()
		for {
			fr, err := frames.next()
			if err != nil {
				t.Fatal(err)
			}
			if fr.event == "payload" {
				s := summarize(t, []byte(fr.data))
				return fmt.Sprintf("%s %d/%d", s.Text, s.Index, s.Total)
			}
		}
	}
	words := func(s string) { // each word with the space before it
		for i, w := range strings.Fields(s) {
			if i > 0 || strings.HasPrefix(s, " ") {
				w = " " + w
			}
			st.Content(w)
		}
	}
	words("Dr. Lee says the price is 3.50 dollars.")
	words(" See")
	if got := nextPayload(); got != "Dr. Lee says the price is 3.50 dollars. 1/2" {
		t.Fatalf("first frame %q", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if first, err := f.push.WaitPushes(ctx, 1); err != nil || summarize(t, first[0].JSON).Text != "Dr. Lee says the price is 3.50 dollars." {
		t.Fatalf("first push before the model finished: %v %v", first, err)
	}
	words(" example.com for more. Thanks!")
	if got := nextPayload(); got != "See example.com for more. 2/3" {
		t.Fatalf("second frame %q", got)
	}
	st.Send(llmtest.Chunk{Usage: &llmtest.Usage{PromptTokens: 1, CompletionTokens: 1}})
	st.Done()
	if got := nextPayload(); got != "Thanks! 3/3" {
		t.Fatalf("last frame %q", got)
	}
	var texts []string
	for _, p := range f.waitPushes(t, 3) {
		texts = append(texts, p.Text)
	}
	if want := []string{"Dr. Lee says the price is 3.50 dollars.", "See example.com for more.", "Thanks!"}; !reflect.DeepEqual(texts, want) {
		t.Errorf("pushes %q, want %q", texts, want)
	}
}
