package webhook

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"amsg/store"
)

// The webhook event types an endpoint may ask for.
const (
	MessageSent         = "message.sent"         // handed to a push service
	MessageDelivered    = "message.delivered"    // a push service accepted it for a device (201)
	MessageFailed       = "message.failed"       // a push service refused it, could not be reached, or the device is gone
	MessageDeferred     = "message.deferred"     // held back by quiet hours or the daily limit
	MessageShown        = "message.shown"        // the service worker showed it
	MessageClicked      = "message.clicked"      // the user clicked it or one of its actions
	MessageDismissed    = "message.dismissed"    // the user closed it
	MessageAcknowledged = "message.acknowledged" // the client acknowledged it in the outbox
	TaskFailed          = "task.failed"          // a scheduled task failed for good
	InterruptDecided    = "interrupt.decided"    // a tool request was approved, denied or expired
	DeviceGone          = "device.gone"          // the push service said a device is gone (404/410); amsg removed it
)

// EventTypes are every webhook event type, in the order the docs list them.
var EventTypes = []string{
	MessageSent, MessageDelivered, MessageFailed, MessageDeferred, MessageShown, MessageClicked,
	MessageDismissed, MessageAcknowledged, TaskFailed, InterruptDecided, DeviceGone,
}

// webhookTypes maps a message event's type to the webhook's; an event type
// missing here (queued) sends no webhook.
var webhookTypes = map[string]string{
	store.EventSent:             MessageSent,
	store.EventAccepted:         MessageDelivered,
	store.EventFailed:           MessageFailed,
	store.EventGone:             MessageFailed,
	store.EventDeferred:         MessageDeferred,
	store.EventShown:            MessageShown,
	store.EventClicked:          MessageClicked,
	store.EventDismissed:        MessageDismissed,
	store.EventAcknowledged:     MessageAcknowledged,
	store.EventTaskFailed:       TaskFailed,
	store.EventInterruptDecided: InterruptDecided,
	store.EventDeviceGone:       DeviceGone,
}

// UnknownEventError names an event type no webhook sends.
type UnknownEventError struct{ Type string }

func (e *UnknownEventError) Error() string {
	return fmt.Sprintf("unknown webhook event type %q (known: %v)", e.Type, EventTypes)
}

// CheckEventTypes refuses an empty list, a repeated type and any type not in
// EventTypes (an *UnknownEventError).
func CheckEventTypes(types []string) error {
	if len(types) == 0 {
		return fmt.Errorf("no event types: name at least one of %v", EventTypes)
	}
	for i, t := range types {
		if !slices.Contains(EventTypes, t) {
			return &UnknownEventError{Type: t}
		}
		if slices.Contains(types[:i], t) {
			return fmt.Errorf("event type %q is listed twice", t)
		}
	}
	return nil
}

// Payload is the body of one webhook, as the Standard Webhooks
// specification shapes it: what happened, when, and its particulars.
type Payload struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"` // RFC 3339 with milliseconds, UTC
	Data      Data   `json:"data"`
}

// Data is a webhook's particulars: whose message, which device, and the
// event's own detail (a push status, a clicked action, a task's error).
type Data struct {
	// Seq is the event's place in amsg's order of events: a receiver that
	// sees one twice (a retry after a lost answer) can tell.
	Seq       string          `json:"seq"`
	UserID    string          `json:"userId"`
	MessageID string          `json:"messageId,omitempty"`
	DeviceID  string          `json:"deviceId,omitempty"`
	Event     string          `json:"event"` // amsg's own event type (accepted, gone, …)
	Detail    json.RawMessage `json:"detail,omitempty"`
}

// delivery makes the delivery of e to endpointID, or reports false when no
// webhook type answers e's.
func delivery(endpointID string, e store.MessageEvent) (store.WebhookDelivery, string, bool) {
	typ, ok := webhookTypes[e.Type]
	if !ok {
		return store.WebhookDelivery{}, "", false
	}
	body, err := json.Marshal(Payload{Type: typ, Timestamp: e.At.UTC().Format("2006-01-02T15:04:05.000Z"), Data: Data{
		Seq: strconv.FormatInt(e.Seq, 10), UserID: e.UserID, MessageID: e.MessageID, DeviceID: e.DeviceID, Event: e.Type, Detail: e.Detail,
	}})
	if err != nil { // only an invalid Detail, which the store refuses to keep
		return store.WebhookDelivery{}, "", false
	}
	var key string
	if e.MessageID != "" {
		key = e.UserID + "\n" + e.MessageID
	}
	return store.WebhookDelivery{EndpointID: endpointID, EventSeq: e.Seq, MessageKey: key, Payload: body}, typ, true
}
