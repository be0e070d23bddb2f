package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"
)

// The kinds of report a service worker sends.
const (
	Shown     = "shown"
	Clicked   = "clicked"
	Dismissed = "dismissed"
)

// Bounds of a batch of reports.
const (
	// MaxBatchBytes bounds a batch's body; a full batch of the longest
	// reports fits.
	MaxBatchBytes = 64 << 10
	// MaxReports bounds the reports of one batch: a worker that was
	// offline flushes its queue in batches of at most this many.
	MaxReports = 50
	// MaxMessageIDBytes and MaxActionBytes bound a report's message id and
	// clicked action; MaxEndpointBytes the reporting device's endpoint.
	MaxMessageIDBytes = 1024
	MaxActionBytes    = 128
	MaxEndpointBytes  = 2048
)

// Report is one thing a device's worker saw happen to one push.
type Report struct {
	MessageID string `json:"messageId"`
	Token     string `json:"token"`
	Type      string `json:"type"`             // Shown, Clicked or Dismissed
	Action    string `json:"action,omitempty"` // the clicked action; "" for the notification itself
}

// Batch is the body of POST /receipts: the reports of one device, which
// names itself by its push endpoint (optional: a report's token names its
// device too, and the endpoint lets the server refuse another device's).
type Batch struct {
	Endpoint string   `json:"endpoint,omitempty"`
	Reports  []Report `json:"receipts"`
}

// ErrBatch reports a body that is not a batch of reports; a *BatchError
// says which report and why.
var ErrBatch = errors.New("receipt: invalid batch")

// BatchError is a batch refused for one of its reports (Index, from 0) or,
// with Index -1, as a whole.
type BatchError struct {
	Index  int
	Reason string
}

func (e *BatchError) Error() string {
	if e.Index < 0 {
		return "receipt: invalid batch: " + e.Reason
	}
	return fmt.Sprintf("receipt: invalid batch: receipt %d: %s", e.Index, e.Reason)
}

func (e *BatchError) Unwrap() error { return ErrBatch }

// DecodeBatch reads and checks a batch: a JSON object whose receipts are 1
// to MaxReports reports, each with a message id, a token that parses, a
// known type, and an action only when clicked, every string within its
// bound. Members it does not know are ignored, so newer workers can add
// some. A token that parses may still be forged: Signer.Check tells.
func DecodeBatch(body []byte) (Batch, error) {
	if len(body) > MaxBatchBytes {
		return Batch{}, &BatchError{-1, fmt.Sprintf("the body is over %d bytes", MaxBatchBytes)}
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !utf8.Valid(body) {
		return Batch{}, &BatchError{-1, "the body is not a JSON object"}
	}
	var b Batch
	if err := json.Unmarshal(body, &b); err != nil {
		return Batch{}, &BatchError{-1, "the body is not a batch of receipts"}
	}
	switch {
	case len(b.Reports) == 0:
		return Batch{}, &BatchError{-1, "receipts must be a non-empty array"}
	case len(b.Reports) > MaxReports:
		return Batch{}, &BatchError{-1, fmt.Sprintf("%d receipts, limit %d", len(b.Reports), MaxReports)}
	case len(b.Endpoint) > MaxEndpointBytes:
		return Batch{}, &BatchError{-1, fmt.Sprintf("endpoint is over %d bytes", MaxEndpointBytes)}
	}
	for i, r := range b.Reports {
		if reason := checkReport(r); reason != "" {
			return Batch{}, &BatchError{i, reason}
		}
	}
	return b, nil
}

// checkReport returns why r is not a report, or "".
func checkReport(r Report) string {
	switch {
	case r.MessageID == "" || len(r.MessageID) > MaxMessageIDBytes:
		return fmt.Sprintf("messageId must be a string of 1 to %d bytes", MaxMessageIDBytes)
	case !slices.Contains([]string{Shown, Clicked, Dismissed}, r.Type):
		return "type must be shown, clicked or dismissed"
	case len(r.Action) > MaxActionBytes:
		return fmt.Sprintf("action is over %d bytes", MaxActionBytes)
	case r.Action != "" && r.Type != Clicked:
		return "only a clicked receipt names an action"
	}
	if _, _, err := Parse(r.Token); err != nil {
		return "token is not a receipt token"
	}
	return ""
}
