package main

import (
	"compress/gzip"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"amsg/llm/llmtest"
	"amsg/push"
)

// otlpSpan is what the tests read of an exported span.
type otlpSpan struct {
	traceID, spanID, parentID, name string
	service                         string
	start, end                      uint64 // Unix nanoseconds
	attrs                           map[string]string
}

// otlpReceiver is a fake OpenTelemetry collector: it takes OTLP/HTTP
// protobuf exports at /v1/traces and keeps their spans.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []otlpSpan
	headers []http.Header
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rcv := &otlpReceiver{}
	rcv.Server = httptest.NewServer(http.HandlerFunc(rcv.export))
	t.Cleanup(rcv.Close)
	return rcv
}

func (rcv *otlpReceiver) export(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	body := io.Reader(r.Body)
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rcv.mu.Lock()
	rcv.headers = append(rcv.headers, r.Header.Clone())
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := otlpSpan{traceID: hex.EncodeToString(s.GetTraceId()), spanID: hex.EncodeToString(s.GetSpanId()),
					parentID: hex.EncodeToString(s.GetParentSpanId()), name: s.GetName(), service: service,
					start: s.GetStartTimeUnixNano(), end: s.GetEndTimeUnixNano(), attrs: map[string]string{}}
				for _, kv := range s.GetAttributes() {
					switch v := kv.GetValue().GetValue().(type) {
					case *commonpb.AnyValue_StringValue:
						sp.attrs[kv.GetKey()] = v.StringValue
					case *commonpb.AnyValue_IntValue:
						sp.attrs[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
					case *commonpb.AnyValue_BoolValue:
						sp.attrs[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
					}
				}
				rcv.spans = append(rcv.spans, sp)
			}
		}
	}
	rcv.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// trace returns the spans of one trace by span id.
func (rcv *otlpReceiver) trace(traceID string) map[string]otlpSpan {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	out := map[string]otlpSpan{}
	for _, s := range rcv.spans {
		if s.traceID == traceID {
			out[s.spanID] = s
		}
	}
	return out
}

// named returns the spans called name.
func (rcv *otlpReceiver) named(name string) []otlpSpan {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var out []otlpSpan
	for _, s := range rcv.spans {
		if s.name == name {
			out = append(out, s)
		}
	}
	return out
}

// under reports whether span s descends from ancestor within trace.
func under(trace map[string]otlpSpan, s otlpSpan, ancestor string) bool {
	for hops := 0; hops < len(trace); hops++ {
		parent, ok := trace[s.parentID]
		if !ok {
			return false
		}
		if parent.spanID == ancestor {
			return true
		}
		s = parent
	}
	return false
}

// completedInTrace reports whether a store write began after the trace's
// push ended: a scheduled occurrence's completion, which writes its last
// push's bookkeeping with it.
func completedInTrace(trace map[string]otlpSpan) bool {
	var pushed uint64
	for _, s := range trace {
		if s.name == "push.send" {
			pushed = max(pushed, s.end)
		}
	}
	for _, s := range trace {
		if s.name == "store.write" && pushed != 0 && s.start >= pushed {
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
	collector := newOTLPReceiver(t)
	r := newTaskRig(t, "AMSG_TICK=100ms", "OTEL_EXPORTER_OTLP_ENDPOINT="+collector.URL,
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer collector-secret", "OTEL_SERVICE_NAME=amsg-test")
	llm := llmtest.NewServer(t)
	llm.Enqueue(llmtest.Reply{Content: "你好。"}, llmtest.Reply{Content: "早上好。"}, llmtest.Reply{Content: "晚安。"})
	p := r.start(t)
	r.register(t, p)

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	instant := func(traceparent string) {
		body, _ := json.Marshal(map[string]any{"contactName": "Rei", "completePrompt": "hi", "apiUrl": llm.APIURL(),
			"apiKey": "k", "primaryModel": "m", "pushSubscription": r.sub})
		req, _ := http.NewRequest(http.MethodPost, p.URL+"/api/v1/instant", strings.NewReader(string(body)))
		req.Header.Set("Accept", "application/json")
		req.Header.Set("Content-Type", "application/json")
		if traceparent != "" {
			req.Header.Set("Traceparent", traceparent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/instant = %d %s", resp.StatusCode, got)
		}
	}
	instant("00-" + callerTrace + "-" + callerSpan + "-01")
	waitPushes(t, r.push, 1, 20*time.Second)
	instant("")
	waitPushes(t, r.push, 2, 20*time.Second)
	r.schedule(t, p, map[string]any{"contactName": "Rei", "messageType": "prompted", "completePrompt": "good morning",
		"apiUrl": llm.APIURL(), "apiKey": "k", "primaryModel": "m", "firstSendTime": push.FormatTimestamp(time.Now().Add(time.Second))})
	p.WaitLog(t, "scheduler: task delivered", 20*time.Second)
	if err := p.Stop(t); err != nil { // the last spans are flushed on the way out
		t.Fatalf("amsg stopped with %v", err)
	}

	// Each /instant round is one trace: the request's span, with the LLM
	// call and the push inside it.
	requests := collector.named("POST /api/v1/instant")
	if len(requests) != 2 {
		t.Fatalf("%d /instant request spans exported, want 2", len(requests))
	}
	for _, req := range requests {
		trace := collector.trace(req.traceID)
		if req.attrs["http.route"] != "/api/v1/instant" || req.attrs["http.response.status_code"] != "200" || req.service != "amsg-test" {
			t.Errorf("request span %v", req)
		}
		for _, name := range []string{"llm.call", "push.send"} {
			n := 0
			for _, s := range trace {
				if s.name == name {
					n++
					if !under(trace, s, req.spanID) {
						t.Errorf("%s of the round %s is not inside its request's span", name, req.traceID)
					}
				}
			}
			if n != 1 {
				t.Errorf("the round %s has %d %s spans, want 1", req.traceID, n, name)
			}
		}
	}
	continued := requests[0]
	if continued.traceID != callerTrace {
		continued = requests[1]
	}
	if continued.traceID != callerTrace || continued.parentID != callerSpan {
		t.Errorf("the request with a traceparent is span %s/%s under %s, want trace %s under the caller's %s",
			continued.traceID, continued.spanID, continued.parentID, callerTrace, callerSpan)
	}

	// The scheduled occurrence is one trace: its root, the claim, the LLM
	// call, the push and the completion's write.
	occurrences := collector.named("scheduler.occurrence")
	if len(occurrences) != 1 {
		t.Fatalf("%d occurrence spans exported, want 1", len(occurrences))
	}
	occ := occurrences[0]
	if occ.parentID != "" || occ.attrs["amsg.occurrence.result"] != "delivered" {
		t.Errorf("occurrence span %v: want a root, delivered", occ)
	}
	trace := collector.trace(occ.traceID)
	seen := map[string]int{}
	for _, s := range trace {
		if s.spanID != occ.spanID && !under(trace, s, occ.spanID) {
			t.Errorf("%s is in the occurrence's trace but not under its root", s.name)
		}
		seen[s.name]++
	}
	if seen["scheduler.claim"] != 1 || seen["llm.call"] != 1 || seen["push.send"] != 1 || seen["store.write"] == 0 {
		t.Errorf("the occurrence's trace holds %v, want a claim, an LLM call, a push and store writes", seen)
	}
	if !completedInTrace(trace) {
		t.Error("the occurrence's trace has no store write after its push: its completion is not in it")
	}
	for _, s := range collector.named("llm.call") {
		if s.traceID != occ.traceID && s.traceID != requests[0].traceID && s.traceID != requests[1].traceID {
			t.Errorf("an LLM call in a trace of its own: %v", s)
		}
	}

	// A push's span names the push service's host, never the endpoint.
	endpoint, _ := url.Parse(r.sub.Endpoint)
	for _, s := range collector.named("push.send") {
		if s.attrs["server.address"] != endpoint.Host || s.attrs["http.response.status_code"] != "201" || s.attrs["amsg.push.attempts"] != "1" {
			t.Errorf("push span %v", s.attrs)
		}
	}
	collector.mu.Lock()
	defer collector.mu.Unlock()
	for _, s := range collector.spans {
		for k, v := range s.attrs {
			if strings.Contains(v, endpoint.Path) || strings.Contains(v, r.sub.Keys.Auth) {
				t.Errorf("span %s attribute %s carries the push endpoint or its keys: %q", s.name, k, v)
			}
		}
	}
	if len(collector.headers) == 0 || collector.headers[0].Get("Authorization") != "Bearer collector-secret" {
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
