package push

import "time"

// Subscription is a browser PushSubscription as PushSubscription.toJSON()
// serializes it, the body the page registers with PUT /push-subscription.
type Subscription struct {
	Endpoint string `json:"endpoint"`
	// ExpirationTime is epoch milliseconds or null; browsers rarely set it.
	ExpirationTime *float64         `json:"expirationTime"`
	Keys           SubscriptionKeys `json:"keys"`
}

// SubscriptionKeys are the user agent's ECDH public key and auth secret,
// base64url as the browser emits them.
type SubscriptionKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// Device is one stored subscription of a user. A user has devices, not a
// device: every push fans out to all of them.
type Device struct {
	ID           int64
	UserID       string
	Subscription Subscription
	// Language is the BCP 47 tag the device reported ("" for none): the
	// language of the notification texts amsg writes for it.
	Language  string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Outcome classifies one delivery attempt to one device.
type Outcome string

// Delivery outcomes, used by the delivery log and the metrics.
const (
	OutcomeDelivered   Outcome = "delivered"    // 2xx
	OutcomeGone        Outcome = "gone"         // 404/410: the subscription was deleted
	OutcomeTooLarge    Outcome = "too_large"    // 413: the message failed, the subscription stays
	OutcomeRetry       Outcome = "retry"        // 429/5xx/network: retried with backoff
	OutcomeConfigError Outcome = "config_error" // 400/401/403: VAPID or request problem, nothing deleted
	OutcomeFailed      Outcome = "failed"       // anything else, or retries exhausted
	// OutcomeUnknownSubscription: a 400 whose body says the push service
	// does not know the subscription. The device stays until the answer
	// repeats (store.PruneUnknownSubscriptions): one 400 may be the push
	// service's passing fault.
	OutcomeUnknownSubscription Outcome = "unknown_subscription"
)

// Attempt is one HTTP attempt to deliver one message to one device, as the
// delivery log records it.
type Attempt struct {
	At        time.Time
	MessageID string
	UserID    string
	DeviceID  int64
	// PushHost is the push service host; the full endpoint is a bearer
	// capability and is never logged.
	PushHost string
	Try      int // 1-based attempt number for this message and device
	Status   int // HTTP status; 0 when no response arrived
	Outcome  Outcome
	Latency  time.Duration
	Error    string
}
