package webhook_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"amsg/scheduler/webhook"
	"amsg/store"
)

// BenchmarkPass: b.N events of 100 messages recorded, fanned out and sent
// to one receiver on loopback that answers 204, a request per event or
// batched; the figure is per event, the store's writes and HTTP included.
func BenchmarkPass(b *testing.B) {
	for _, batch := range []bool{false, true} {
		b.Run(fmt.Sprintf("batch=%v", batch), func(b *testing.B) {
			var got atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
			defer srv.Close()
			f := newFixture(b, webhook.Config{})
			f.endpoint(b, "wh_bench", srv.URL, batch, webhook.EventTypes...)
			events := make([]store.MessageEvent, 0, b.N)
			for i := range b.N {
				events = append(events, store.MessageEvent{MessageID: fmt.Sprint("m", i%100), Type: store.EventSent})
			}
			b.ResetTimer()
			for start := 0; start < len(events); start += 500 {
				f.events(b, events[start:min(start+500, len(events))]...)
			}
			f.pass(b)
			b.StopTimer()
			health, err := f.st.WebhookHealth(b.Context())
			if err != nil || health["wh_bench"].Pending != 0 {
				b.Fatalf("health %+v, %v: not all sent", health, err)
			}
			b.ReportMetric(float64(got.Load())/float64(b.N), "requests/event")
		})
	}
}
