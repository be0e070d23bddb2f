package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Retention is how long each kind of row is kept once it has served; a zero
// duration keeps that kind for good. The outbox and the delivery log take
// their retention from Config.
type Retention struct {
	FinishedTasks time.Duration // sent and failed tasks, from their last update
	Transcripts   time.Duration // session transcripts, from when they were recorded
	DeviceSilence time.Duration // devices, from their last sign of life
	Instances     time.Duration // instances, from their last heartbeat
	TokenProofs   time.Duration // client token proofs, from their last renewal
}

// Pruned counts what one Prune deleted.
type Pruned struct {
	FinishedTasks, Outbox, DeliveryLog, Transcripts, Interrupts, Devices, Instances int
	DailySlots, IdempotencyKeys, TokenProofs, UnknownSubscriptions                  int
	// MessageEvents counts the rows of events older than the outbox keeps
	// a message or beyond Config.MessageEventsMaxRows (a delivery's row
	// tells up to three events).
	MessageEvents int
	// WebhookDeliveries counts webhook deliveries done or given up longer
	// ago than the delivery log keeps attempts.
	WebhookDeliveries int
	// CloudRecords counts expired inventory snapshots, plans and finished
	// cleanup operations, and ownership records of deleted resources.
	CloudRecords int
}

// LogValue lists the counts under the names Prune's steps have.
func (p Pruned) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("finishedTasks", p.FinishedTasks), slog.Int("outbox", p.Outbox),
		slog.Int("deliveryLog", p.DeliveryLog), slog.Int("transcripts", p.Transcripts), slog.Int("interrupts", p.Interrupts),
		slog.Int("devices", p.Devices), slog.Int("instances", p.Instances), slog.Int("tokenProofs", p.TokenProofs),
		slog.Int("dailySlots", p.DailySlots), slog.Int("idempotencyKeys", p.IdempotencyKeys),
		slog.Int("unknownSubscriptions", p.UnknownSubscriptions),
		slog.Int("messageEvents", p.MessageEvents), slog.Int("webhookDeliveries", p.WebhookDeliveries), slog.Int("cloudRecords", p.CloudRecords))
}

// Prune is the store's housekeeping, the one place rows are deleted for
// their age: finished tasks, the outbox, the delivery log, message events,
// transcripts, silent devices, devices their push service does not know,
// dead instances and stale client token proofs, each against now and its
// retention, and expired cloud-data records (after continuing due
// cleanups).
// A failing step does not stop the others; the error joins theirs.
func (s *Store) Prune(ctx context.Context, now time.Time, r Retention) (Pruned, error) {
	var p Pruned
	olderThan := func(keep time.Duration, prune func(context.Context, time.Time) (int, error)) func() (int, error) {
		return func() (int, error) {
			if keep <= 0 {
				return 0, nil
			}
			return prune(ctx, now.Add(-keep))
		}
	}
	steps := []struct {
		what  string
		count *int
		run   func() (int, error)
	}{
		{"finished tasks", &p.FinishedTasks, olderThan(r.FinishedTasks, s.DeleteFinishedTasks)},
		{"outbox", &p.Outbox, func() (int, error) { return s.CleanupOutbox(ctx) }},
		{"delivery log", &p.DeliveryLog, func() (int, error) { return s.PruneDeliveryLog(ctx) }},
		{"message events", &p.MessageEvents, func() (int, error) { return s.PruneMessageEvents(ctx) }},
		{"webhook deliveries", &p.WebhookDeliveries, olderThan(s.deliveryLogMaxAge, s.PruneWebhookDeliveries)},
		{"transcripts", &p.Transcripts, olderThan(r.Transcripts, s.PruneTranscripts)},
		// An answered approval lives as long as the transcript that records it.
		{"interrupts", &p.Interrupts, olderThan(r.Transcripts, s.PruneInterrupts)},
		{"silent devices", &p.Devices, olderThan(r.DeviceSilence, s.ExpireSilentDevices)},
		{"unknown subscriptions", &p.UnknownSubscriptions, func() (int, error) { return s.PruneUnknownSubscriptions(ctx, now) }},
		{"dead instances", &p.Instances, olderThan(r.Instances, s.DeleteStaleInstances)},
		{"daily slots", &p.DailySlots, olderThan(dailySlotRetention, s.PruneDailySlots)},
		{"idempotency keys", &p.IdempotencyKeys, olderThan(IdempotencyKeyTTL, s.PruneIdempotencyKeys)},
		{"token proofs", &p.TokenProofs, olderThan(r.TokenProofs, s.PruneTokenProofs)},
		{"cloud data", &p.CloudRecords, func() (int, error) { return s.housekeepCloudData(ctx) }},
	}
	var errs []error
	for _, step := range steps {
		n, err := step.run()
		*step.count = n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", step.what, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return p, fmt.Errorf("store: prune: %w", err)
	}
	return p, nil
}
