package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"amsg/llm/llmtest"
	"amsg/push"
	"amsg/push/tracing/tracingtest"
)

// completedInTrace reports whether a store write began after the trace's
// push ended: a scheduled occurrence's completion, which writes its last
// push's bookkeeping with it.
func completedInTrace(trace map[string]tracingtest.Span) bool {
	var pushed uint64
	for _, s := range trace {
		if s.Name == "push.send" {
			pushed = max(pushed, s.End)
		}
	}
	for _, s := range trace {
		if (s.Name == "store.write" || s.Name == "store.batch") && pushed != 0 && s.Start >= pushed {
			return true
		}
	}
	return false
}

// Done-when (issue 25): with the OTEL_EXPORTER_OTLP_* environment set, a
// fake collector gets one trace per /instant round, with the LLM call and
// the push inside the request's span (continuing the caller's traceparent),
// and one trace per scheduled occurrence, from its claim to its completion;
// no span names a push endpoint's path.
func TestTracesOneTracePerInstantRoundAndPerScheduledOccurrence(t *testing.T) {
	collector := tracingtest.NewCollector(t)
	r := newTaskRig(t, "AMSG_TICK=100ms", "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL,
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer collector-secret", "OTEL_SERVICE_NAME=amsg-test")
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Content: "你好。"}, llmtest.Reply{Content: "早上好。"}, llmtest.Reply{Content: "晚安。"})
	p := r.start(t)
	r.register(t, p)

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	instant := map[string]any{"contactName": "Rei", "completePrompt": "hi", "apiUrl": llm.APIURL(),
		"apiKey": "k", "primaryModel": "m", "pushSubscription": r.sub}
	postInstant(t, p.URL, map[string]string{"Traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}, instant)
	waitPushes(t, r.push, 1, 20*time.Second)
	postInstant(t, p.URL, nil, instant)
	waitPushes(t, r.push, 2, 20*time.Second)
	r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "prompted", "completePrompt": "good morning",
		"apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m", "firstSendTime": push.FormatTimestamp(time.Now().Add(time.Second))})
	p.WaitLog(t, "scheduler: task delivered", 20*time.Second)
	if err := p.Stop(t); err != nil { // the last spans are flushed on the way out
		t.Fatalf("amsg stopped with %v", err)
	}

	// Each /instant round is one trace: the request's span, with the LLM
	// call and the push inside it.
	requests := collector.Named("POST /api/v1/instant")
	if len(requests) != 2 {
		t.Fatalf("%d /instant request spans exported, want 2", len(requests))
	}
	for _, req := range requests {
		trace := collector.Trace(req.TraceID)
		if req.Attrs["http.route"] != "/api/v1/instant" || req.Attrs["http.response.status_code"] != "200" || req.Service != "amsg-test" {
			t.Errorf("request span %v", req)
		}
		for _, name := range []string{"llm.call", "push.send"} {
			n := 0
			for _, s := range trace {
				if s.Name == name {
					n++
					if !tracingtest.Under(trace, s, req.SpanID) {
						t.Errorf("%s of the round %s is not inside its request's span", name, req.TraceID)
					}
				}
			}
			if n != 1 {
				t.Errorf("the round %s has %d %s spans, want 1", req.TraceID, n, name)
			}
		}
	}
	continued := requests[0]
	if continued.TraceID != callerTrace {
		continued = requests[1]
	}
	if continued.TraceID != callerTrace || continued.ParentID != callerSpan {
		t.Errorf("the request with a traceparent is span %s/%s under %s, want trace %s under the caller's %s",
			continued.TraceID, continued.SpanID, continued.ParentID, callerTrace, callerSpan)
	}

	// The scheduled occurrence is one trace: its root, the claim, the LLM
	// call, the push and the completion's write.
	occurrences := collector.Named("scheduler.occurrence")
	if len(occurrences) != 1 {
		t.Fatalf("%d occurrence spans exported, want 1", len(occurrences))
	}
	occ := occurrences[0]
	if occ.ParentID != "" || occ.Attrs["amsg.occurrence.result"] != "delivered" {
		t.Errorf("occurrence span %v: want a root, delivered", occ)
	}
	trace := collector.Trace(occ.TraceID)
	seen := map[string]int{}
	for _, s := range trace {
		if s.SpanID != occ.SpanID && !tracingtest.Under(trace, s, occ.SpanID) {
			t.Errorf("%s is in the occurrence's trace but not under its root", s.Name)
		}
		seen[s.Name]++
	}
	if seen["scheduler.claim"] != 1 || seen["llm.call"] != 1 || seen["push.send"] != 1 || seen["store.write"] == 0 {
		t.Errorf("the occurrence's trace holds %v, want a claim, an LLM call, a push and store writes", seen)
	}
	if !completedInTrace(trace) {
		t.Error("the occurrence's trace has no store write after its push: its completion is not in it")
	}
	for _, name := range []string{"llm.call", "push.send"} {
		spans := collector.Named(name)
		if len(spans) != 3 {
			t.Errorf("%d %s spans exported, want 3: two rounds and one occurrence", len(spans), name)
		}
		for _, s := range spans {
			if s.TraceID != occ.TraceID && s.TraceID != requests[0].TraceID && s.TraceID != requests[1].TraceID {
				t.Errorf("%s in a trace of its own: %v", name, s)
			}
		}
	}

	// A push's span names the push service's host, never the endpoint.
	endpoint, _ := url.Parse(r.sub.Endpoint)
	for _, s := range collector.Named("push.send") {
		if s.Attrs["server.address"] != endpoint.Host || s.Attrs["http.response.status_code"] != "201" || s.Attrs["amsg.push.attempts"] != "1" {
			t.Errorf("push span %v", s.Attrs)
		}
	}
	for _, s := range collector.Spans() {
		for k, v := range s.Attrs {
			if strings.Contains(v, endpoint.Path) || strings.Contains(v, r.sub.Keys.Auth) {
				t.Errorf("span %s attribute %s carries the push endpoint or its keys: %q", s.Name, k, v)
			}
		}
	}
	if h := collector.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Bearer collector-secret" {
		t.Errorf("exports carried no OTEL_EXPORTER_OTLP_HEADERS")
	}
}

// A trace protocol amsg cannot speak is a configuration error, said before
// anything opens.
func TestServeRefusesATraceProtocolItCannotSpeak(t *testing.T) {
	var stderr strings.Builder
	code := runServe(t.Context(), nil, &stderr, env(map[string]string{
		"AMSG_DATA_DIR": t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
	}))
	if code != 2 || !strings.Contains(stderr.String(), "http/protobuf") {
		t.Errorf("runServe = %d, %q; want 2 naming http/protobuf", code, stderr.String())
	}
}
