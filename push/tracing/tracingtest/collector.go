// Package tracingtest is a fake OpenTelemetry collector for tests: it takes
// OTLP/HTTP protobuf trace exports, as amsg's exporter sends them, and keeps
// their spans for the test to read. Export also points this process's own
// tracing (push/tracing) at one, for benchmarks of tracing's cost.
package tracingtest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"amsg/push/tracing"
)

// Span is what a test reads of an exported span. Ids are lower-case hex;
// ParentID is "" for a root. Attributes of string, integer and boolean
// values are kept, as text.
type Span struct {
	TraceID, SpanID, ParentID, Name string
	Service                         string // the resource's service.name
	Start, End                      uint64 // Unix nanoseconds
	Attrs                           map[string]string
}

// Collector is a fake collector listening on loopback; URL is the base to
// give as OTEL_EXPORTER_OTLP_ENDPOINT.
type Collector struct {
	URL     string
	server  *httptest.Server
	discard bool // Export's: read each export and keep nothing

	mu      sync.Mutex
	spans   []Span
	headers []http.Header
}

// maxExportBytes bounds one export's body.
const maxExportBytes = 16 << 20

// NewCollector starts a collector, closed when the test ends.
func NewCollector(tb testing.TB) *Collector {
	return newCollector(tb, false)
}

func newCollector(tb testing.TB, discard bool) *Collector {
	c := &Collector{discard: discard}
	c.server = httptest.NewServer(http.HandlerFunc(c.export))
	c.URL = c.server.URL
	tb.Cleanup(c.server.Close)
	return c
}

func (c *Collector) export(w http.ResponseWriter, r *http.Request) {
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
	if c.discard {
		_, _ = io.Copy(io.Discard, io.LimitReader(body, maxExportBytes))
		c.answer(w)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(body, maxExportBytes))
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.headers = append(c.headers, r.Header.Clone())
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, Span{TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Service: service,
					Start: s.GetStartTimeUnixNano(), End: s.GetEndTimeUnixNano(), Attrs: attributes(s.GetAttributes())})
			}
		}
	}
	c.mu.Unlock()
	c.answer(w)
}

// answer accepts an export whole.
func (c *Collector) answer(w http.ResponseWriter) {
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
		}
	}
	return out
}

// Spans returns every span received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Named returns the spans called name.
func (c *Collector) Named(name string) []Span {
	var out []Span
	for _, s := range c.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Trace returns the spans of one trace by span id.
func (c *Collector) Trace(traceID string) map[string]Span {
	out := map[string]Span{}
	for _, s := range c.Spans() {
		if s.TraceID == traceID {
			out[s.SpanID] = s
		}
	}
	return out
}

// Headers returns the request headers of every export received.
func (c *Collector) Headers() []http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.headers...)
}

// Under reports whether s descends from the span ancestor within trace.
func Under(trace map[string]Span, s Span, ancestor string) bool {
	for range len(trace) {
		parent, ok := trace[s.ParentID]
		if !ok {
			return false
		}
		if parent.SpanID == ancestor {
			return true
		}
		s = parent
	}
	return false
}

// Export turns this process's tracing on, exporting through the batching
// OTLP/HTTP exporter to a new collector as a deployment's would, until the
// test ends: what a benchmark of tracing's cost runs with. The collector
// reads each export and keeps nothing, so decoding spans costs the
// benchmark nothing that a deployment's process would not spend.
func Export(tb testing.TB) {
	c := newCollector(tb, true)
	exporter, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(c.URL+"/v1/traces"))
	if err != nil {
		tb.Fatal(err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	tracing.Use(provider)
	tb.Cleanup(func() {
		tracing.Use(nil)
		_ = provider.Shutdown(context.Background())
	})
}
