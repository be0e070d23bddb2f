package api

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/loop"
)

// reportLatencies reports the median and the 99th percentile of samples.
func reportLatencies(b *testing.B, samples []time.Duration, unit string) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	at := func(q float64) float64 { return float64(samples[int(q*float64(len(samples)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-"+unit)
	b.ReportMetric(at(0.99), "p99-"+unit)
}

// BenchmarkInstantRequest is the server's overhead for one /instant over
// the JSON transport with a zero-latency fake LLM: read and validate the
// body, record the input, call the model (loopback), segment a two-sentence
// reply, build, encrypt and send two pushes to the fake push service
// (loopback, which decrypts them), record the round, answer. p50/p99 are
// over the requests of the run.
func BenchmarkInstantRequest(b *testing.B) {
	f := newInstantFixture(b, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	body := jsonBody(b, f.body(map[string]any{"pushSubscription": sub}))
	reply := llmtest.Reply{Content: "好的，我记下了。明天见！", Usage: &llmtest.Usage{PromptTokens: 20, CompletionTokens: 8}}
	var samples []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		f.llm.Enqueue(reply)
		start := time.Now()
		got := post(f.s, "/api/v1/instant", body, jsonHeaders)
		samples = append(samples, time.Since(start))
		if got.status != 200 {
			b.Fatalf("%d %s", got.status, got.body)
		}
	}
	reportLatencies(b, samples, "µs")
}

// BenchmarkFirstSentenceToFrame is how long the first complete sentence of
// a streaming model takes to reach the client as an SSE frame: from the
// model writing the chunk that completes it to the client reading the
// `event: payload` frame, both over loopback HTTP.
func BenchmarkFirstSentenceToFrame(b *testing.B) {
	f := newInstantFixture(b, Config{}, loop.AgentConfig{})
	sub := f.push.Subscribe()
	body := jsonBody(b, f.body(map[string]any{"pushSubscription": sub}))
	var samples []time.Duration
	for b.Loop() {
		st := f.llm.Stream()
		req, _ := http.NewRequest(http.MethodPost, f.http.URL+"/api/v1/instant", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		frames := &sseReader{bufio.NewReader(resp.Body)}
		if fr, err := frames.next(); err != nil || fr.event != ":" {
			b.Fatalf("first frame %+v %v", fr, err)
		}
		st.Content("你好")
		start := time.Now()
		st.Content("。今")
		for {
			fr, err := frames.next()
			if err != nil {
				b.Fatal(err)
			}
			if fr.event == "payload" {
				break
			}
		}
		samples = append(samples, time.Since(start))
		st.Content("天也很好。")
		st.Done()
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	reportLatencies(b, samples, "µs")
}
