package webpush

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"amsg/push"
)

// Production delivery goes through push/courier; Dispatcher stays here, in
// the tests only, as the fan-out the sender's tests drive.

// Directory is the test fan-out's store.
type Directory interface {
	Devices(ctx context.Context, userID string) ([]push.Device, error) // subscriptions decrypted
	DeleteDevice(ctx context.Context, userID string, deviceID int64) error
	RecordAttempts(ctx context.Context, attempts []push.Attempt) error
}

// ErrNoDevices means the user has no push subscription.
var ErrNoDevices = errors.New("the user has no push subscription")

// Dispatcher fans a push out to every device of a user, deletes the devices
// push services report gone and records every attempt.
type Dispatcher struct {
	Sender      *Sender
	Directory   Directory
	Concurrency int // devices sent to at once per push; default 8
}

// Result says what happened at each device.
type Result struct {
	MessageID string
	Devices   []DeviceResult // in the order Directory.Devices returned them
}

// DeviceResult is one device's delivery.
type DeviceResult struct {
	DeviceID int64
	Delivery
}

// Delivered counts the devices the push reached.
func (r Result) Delivered() int {
	n := 0
	for _, d := range r.Devices {
		if d.Outcome == push.OutcomeDelivered {
			n++
		}
	}
	return n
}

// bookkeepingTimeout bounds the writes after a fan-out, which run even if
// the caller's context ended meanwhile: the pushes went out either way.
const bookkeepingTimeout = 10 * time.Second

// Dispatch delivers msg to every device of userID. The error is for a push
// that could not be attempted at all: an invalid or too-large message
// (push.ErrPayloadTooLarge), ErrNoDevices, or the directory failing; per
// device outcomes are in the Result.
func (d *Dispatcher) Dispatch(ctx context.Context, userID string, msg Message) (Result, error) {
	res := Result{MessageID: msg.ID}
	o, err := d.Sender.prepare(msg)
	if err != nil {
		return res, err
	}
	devices, err := d.Directory.Devices(ctx, userID)
	if err != nil {
		return res, fmt.Errorf("list push subscriptions: %w", err)
	}
	if len(devices) == 0 {
		return res, ErrNoDevices
	}
	res.Devices = make([]DeviceResult, len(devices))
	limit := d.Concurrency
	if limit <= 0 {
		limit = 8
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, dev := range devices {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			res.Devices[i] = DeviceResult{DeviceID: dev.ID, Delivery: d.Sender.deliver(ctx, dev.Subscription, o)}
		})
	}
	wg.Wait()

	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	var attempts []push.Attempt
	for i := range res.Devices {
		dr := &res.Devices[i]
		for j := range dr.Attempts {
			dr.Attempts[j].UserID, dr.Attempts[j].DeviceID = userID, dr.DeviceID
		}
		attempts = append(attempts, dr.Attempts...)
		d.Sender.logDelivery(dr.Delivery, msg.ID, "deviceId", dr.DeviceID)
		if dr.Outcome == push.OutcomeGone {
			if err := d.Directory.DeleteDevice(bctx, userID, dr.DeviceID); err != nil {
				d.Sender.log.Error("could not delete a gone push subscription", "deviceId", dr.DeviceID,
					"host", dr.PushHost, "err", err)
			}
		}
	}
	if err := d.Directory.RecordAttempts(bctx, attempts); err != nil {
		// The pushes went out; failing the dispatch now would only make the
		// caller send them again.
		d.Sender.log.Error("could not record push attempts", "messageId", msg.ID, "attempts", len(attempts),
			"err", err)
	}
	return res, nil
}
