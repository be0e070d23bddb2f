package scheduler

import (
	"log/slog"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
)

// BenchmarkBuildAFixedOccurrence is the scheduler's CPU for one occurrence
// of a one-off fixed task before the courier sends it (the shape of
// cmd/deliverybench's burst): reading the stored payload, its recurrence,
// and building the push (segments, builder, outbox encoding). Run with
// -benchmem: allocations here are per push.
func BenchmarkBuildAFixedOccurrence(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"no-sentence-end", "Reminder 1: time for a glass of water, deliverybench-due:1795498508335"},
		{"two-sentences", "Reminder 1: time for a glass of water. Then stretch for a minute!"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			raw, err := Payload{ContactName: "Rei", MessageType: push.TypeFixed, MessageSubtype: "chat",
				UserMessage: &bc.text, FirstSendTime: "2026-11-24T05:35:08.335Z", RecurrenceType: push.RecurrenceNone}.Encode()
			if err != nil {
				b.Fatal(err)
			}
			task := store.Task{ID: 50, UUID: "74804762-767a-41d2-9054-6177c4dae399", UserID: "u1", Payload: raw,
				NextSendAt: time.UnixMilli(1795498508335)}
			s := &Scheduler{log: slog.New(slog.DiscardHandler), now: time.Now}
			b.ReportAllocs()
			for b.Loop() {
				p, err := TaskPayload(task)
				if err != nil {
					b.Fatal(err)
				}
				rec, err := p.Recurrence()
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.build(task, p, rec, "", *p.UserMessage, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
