package courier

import (
	"context"
	"log/slog"
	"testing"

	"amsg/push/webpush"
)

// BenchmarkLocalized is the per-push cost of the language plumbing on the
// delivery path: three devices that reported English or nothing (nothing
// to do) and the same with one Chinese device (one Localize per push).
func BenchmarkLocalized(b *testing.B) {
	payload := []byte(`{"messageKind":"content","messageId":"m","title":"From Rei","contactName":"Rei","message":"Hi."}`)
	c := &Courier{log: slog.Default(), cfg: Config{Localize: func(p []byte, _ string) ([]byte, error) { return p, nil }}}
	msg := webpush.Message{ID: "m", Payload: payload}
	for _, bc := range []struct {
		name      string
		languages []string
	}{
		{"english", []string{"", "en-US", "en-GB"}},
		{"one-chinese", []string{"", "en-US", "zh-CN"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.localized(context.Background(), msg, bc.languages)
			}
		})
	}
}
