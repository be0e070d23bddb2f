package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Webhooks tell an operator's receivers what happened to messages
// (issue 25). The operator's endpoints are rows of webhook_endpoints, each
// secret sealed at rest; a fan-out follows message_events with one cursor
// and writes a webhook_deliveries row per event and interested endpoint
// before anything is sent, so a delivery outlives a crash; the sender reads
// the due rows of an endpoint, a message's rows one at a time in order, and
// records each try. Deliveries done or given up are pruned with the
// delivery log's age.

// Bounds of webhooks.
const (
	// MaxWebhookEndpoints bounds the endpoints one database keeps.
	MaxWebhookEndpoints = 20
	// MaxWebhookURLBytes bounds an endpoint's URL.
	MaxWebhookURLBytes = 2048
	// MaxWebhookDeliveriesPage bounds one DueWebhookDeliveries read.
	MaxWebhookDeliveriesPage = 500
	// MaxWebhookErrorBytes bounds the error kept of a failed try.
	MaxWebhookErrorBytes = 500
)

// The states of a webhook delivery.
const (
	WebhookPending = "pending" // not yet sent, or to be tried again at NextAt
	WebhookDone    = "done"    // the receiver answered 2xx
	WebhookFailed  = "failed"  // given up: retried until the retry window closed
)

// webhookKeyOwner names the key endpoint secrets are sealed with, derived
// from the master key as a user's is. The newline keeps it from ever being
// a user id: no header can carry one.
const webhookKeyOwner = "amsg webhooks\n"

// webhookFanOutCursor names the fan-out's row of webhook_cursor.
const webhookFanOutCursor = "fan-out"

var (
	// ErrWebhookNotFound: no endpoint has the id.
	ErrWebhookNotFound = errors.New("store: webhook endpoint not found")
	// ErrWebhookLimit: MaxWebhookEndpoints are registered already.
	ErrWebhookLimit = fmt.Errorf("store: at most %d webhook endpoints", MaxWebhookEndpoints)
	// ErrWebhookCursorMoved: another fan-out advanced the cursor first;
	// nothing was written.
	ErrWebhookCursorMoved = errors.New("store: the webhook fan-out cursor moved")
	// ErrInvalidWebhook reports an endpoint or delivery the store cannot
	// keep; the API validates before and never meets it.
	ErrInvalidWebhook = errors.New("store: invalid webhook")
)

// WebhookEndpoint is one receiver the operator registered.
type WebhookEndpoint struct {
	ID     string
	URL    string
	Events []string // webhook event types (message.sent, …), never empty
	// Secret is the Standard Webhooks signing secret, whsec_<base64>.
	Secret string
	// Batch lets one request carry several events, as a JSON array.
	Batch bool
	// StartSeq is the last message event before the endpoint existed.
	StartSeq  int64
	CreatedAt time.Time
}

// String leaves the secret out, so a logged endpoint leaks nothing.
func (e WebhookEndpoint) String() string {
	return fmt.Sprintf("store.WebhookEndpoint{%s %s %v batch:%v}", e.ID, e.URL, e.Events, e.Batch)
}

func (e WebhookEndpoint) check() error {
	switch {
	case e.ID == "" || len(e.ID) > 64:
		return fmt.Errorf("%w: id %q", ErrInvalidWebhook, e.ID)
	case e.URL == "" || len(e.URL) > MaxWebhookURLBytes:
		return fmt.Errorf("%w: url of %d bytes", ErrInvalidWebhook, len(e.URL))
	case len(e.Events) == 0:
		return fmt.Errorf("%w: no events", ErrInvalidWebhook)
	case !strings.HasPrefix(e.Secret, "whsec_"):
		return fmt.Errorf("%w: the secret is not whsec_…", ErrInvalidWebhook)
	}
	return nil
}

// PutWebhookEndpoint registers e, or replaces the URL, events, secret and
// batching of the endpoint with its id, keeping where it started. A new
// endpoint starts after the last message event: it is told only what
// happens from now on. Beyond MaxWebhookEndpoints it fails with
// ErrWebhookLimit and writes nothing. It returns the endpoint as stored.
func (s *Store) PutWebhookEndpoint(ctx context.Context, e WebhookEndpoint) (WebhookEndpoint, error) {
	if err := e.check(); err != nil {
		return WebhookEndpoint{}, err
	}
	sealed := s.userKey(webhookKeyOwner).SealAtRest([]byte(e.Secret))
	err := s.write(ctx, func(tx *sql.Tx) error {
		var count int
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(CASE WHEN id = ? THEN 1 ELSE 0 END), 0) = 1 FROM webhook_endpoints`,
			e.ID).Scan(&count, &exists); err != nil {
			return err
		}
		if !exists && count >= MaxWebhookEndpoints {
			return ErrWebhookLimit
		}
		e.CreatedAt = s.now().UTC().Truncate(time.Millisecond)
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM message_events`).Scan(&e.StartSeq); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO webhook_endpoints (id, url, events, secret, batch, start_seq, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET url = excluded.url, events = excluded.events, secret = excluded.secret, batch = excluded.batch
			RETURNING start_seq, created_at`,
			e.ID, e.URL, strings.Join(e.Events, " "), sealed, boolInt(e.Batch), e.StartSeq, millis(e.CreatedAt)).
			Scan(&e.StartSeq, (*millisTime)(&e.CreatedAt))
	})
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("store: put webhook endpoint: %w", err)
	}
	return e, nil
}

// WebhookEndpoints returns every endpoint, secrets opened, oldest first.
func (s *Store) WebhookEndpoints(ctx context.Context) ([]WebhookEndpoint, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, url, events, secret, batch, start_seq, created_at
		FROM webhook_endpoints ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("store: webhook endpoints: %w", err)
	}
	defer rows.Close()
	endpoints := []WebhookEndpoint{}
	for rows.Next() {
		var e WebhookEndpoint
		var events, sealed string
		var batch int
		if err := rows.Scan(&e.ID, &e.URL, &events, &sealed, &batch, &e.StartSeq, (*millisTime)(&e.CreatedAt)); err != nil {
			return nil, fmt.Errorf("store: webhook endpoints: %w", err)
		}
		secret, err := s.userKey(webhookKeyOwner).OpenAtRest(sealed)
		if err != nil {
			return nil, fmt.Errorf("store: webhook endpoint %s: the secret does not open: %w", e.ID, err)
		}
		e.Events, e.Secret, e.Batch = strings.Fields(events), string(secret), batch == 1
		endpoints = append(endpoints, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: webhook endpoints: %w", err)
	}
	return endpoints, nil
}

// DeleteWebhookEndpoint removes the endpoint and its deliveries;
// ErrWebhookNotFound when there is none.
func (s *Store) DeleteWebhookEndpoint(ctx context.Context, id string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmpErr(err, ErrWebhookNotFound)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE endpoint_id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: delete webhook endpoint: %w", err)
	}
	return nil
}

// WebhookCursor is the last message event the fan-out has read, 0 before
// the first.
func (s *Store) WebhookCursor(ctx context.Context) (int64, error) {
	var seq int64
	err := s.reader.QueryRowContext(ctx, `SELECT seq FROM webhook_cursor WHERE name = ?`, webhookFanOutCursor).Scan(&seq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: webhook cursor: %w", err)
	}
	return seq, nil
}

// WebhookDelivery is one event to send to one endpoint.
type WebhookDelivery struct {
	ID         int64
	EndpointID string
	EventSeq   int64
	// MessageKey orders: a delivery is not due while an earlier one of
	// the endpoint with the same key is pending. "" orders nothing.
	MessageKey string
	Payload    []byte // the JSON object sent
	Attempts   int
	CreatedAt  time.Time
}

// AddWebhookDeliveries records deliveries, pending from now, and moves the
// fan-out cursor from from to to, in one write. A delivery of an event the
// endpoint has already is left as it is, so re-reading events adds
// nothing; when the cursor is no longer at from, nothing is written and
// the error is ErrWebhookCursorMoved.
func (s *Store) AddWebhookDeliveries(ctx context.Context, from, to int64, deliveries []WebhookDelivery) error {
	now := millis(s.now())
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_cursor SET seq = ? WHERE name = ? AND seq = ?`, to, webhookFanOutCursor, from)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			if from != 0 {
				return ErrWebhookCursorMoved
			}
			// The first fan-out: a concurrent first one conflicts here.
			if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_cursor (name, seq) VALUES (?, ?)`, webhookFanOutCursor, to); err != nil {
				return fmt.Errorf("%w: %w", ErrWebhookCursorMoved, err)
			}
		}
		return execEach(ctx, tx, `INSERT INTO webhook_deliveries
				(endpoint_id, event_seq, message_key, payload, state, attempts, next_at, created_at, last_status, last_error)
				VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, 0, '')
				ON CONFLICT (endpoint_id, event_seq) DO NOTHING`, len(deliveries), func(i int) []any {
			d := deliveries[i]
			return []any{d.EndpointID, d.EventSeq, d.MessageKey, string(d.Payload), now, now}
		})
	})
	if err != nil {
		return fmt.Errorf("store: add webhook deliveries: %w", err)
	}
	return nil
}

// DueWebhookDeliveries returns up to limit (1 to MaxWebhookDeliveriesPage)
// of endpointID's pending deliveries due at now, oldest first, leaving out
// any with an earlier pending delivery of the same message: a message's
// events go one at a time, in order.
func (s *Store) DueWebhookDeliveries(ctx context.Context, endpointID string, now time.Time, limit int) ([]WebhookDelivery, error) {
	if limit < 1 || limit > MaxWebhookDeliveriesPage {
		return nil, fmt.Errorf("store: due webhook deliveries: %w: limit %d", ErrInvalidWebhook, limit)
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT id, event_seq, message_key, payload, attempts, created_at
		FROM webhook_deliveries d
		WHERE endpoint_id = ? AND state = 'pending' AND next_at <= ?
			AND (message_key = '' OR NOT EXISTS (SELECT 1 FROM webhook_deliveries e
				WHERE e.endpoint_id = d.endpoint_id AND e.message_key = d.message_key AND e.state = 'pending' AND e.id < d.id))
		ORDER BY id LIMIT ?`, endpointID, millis(now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due webhook deliveries: %w", err)
	}
	defer rows.Close()
	var due []WebhookDelivery
	for rows.Next() {
		d := WebhookDelivery{EndpointID: endpointID}
		var payload string
		if err := rows.Scan(&d.ID, &d.EventSeq, &d.MessageKey, &payload, &d.Attempts, (*millisTime)(&d.CreatedAt)); err != nil {
			return nil, fmt.Errorf("store: due webhook deliveries: %w", err)
		}
		d.Payload = []byte(payload)
		due = append(due, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: due webhook deliveries: %w", err)
	}
	return due, nil
}

// WebhookTry is what became of one request carrying deliveries.
type WebhookTry struct {
	At     time.Time
	State  string    // WebhookDone, WebhookPending (try again at NextAt) or WebhookFailed
	NextAt time.Time // when State is WebhookPending
	Status int       // the receiver's HTTP status, 0 for none
	Error  string    // why it did not succeed, cut to MaxWebhookErrorBytes
}

// RecordWebhookTry records try for the deliveries ids in one write.
func (s *Store) RecordWebhookTry(ctx context.Context, ids []int64, try WebhookTry) error {
	var finished any
	switch try.State {
	case WebhookDone, WebhookFailed:
		finished = millis(try.At)
	case WebhookPending:
	default:
		return fmt.Errorf("store: record webhook try: %w: state %q", ErrInvalidWebhook, try.State)
	}
	if len(try.Error) > MaxWebhookErrorBytes {
		try.Error = try.Error[:MaxWebhookErrorBytes]
	}
	lastError := strings.ToValidUTF8(try.Error, "?")
	err := s.write(ctx, func(tx *sql.Tx) error {
		return execEach(ctx, tx, `UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_at = ?,
				finished_at = ?, last_status = ?, last_error = ? WHERE id = ?`, len(ids), func(i int) []any {
			return []any{try.State, millis(try.NextAt), finished, try.Status, lastError, ids[i]}
		})
	})
	if err != nil {
		return fmt.Errorf("store: record webhook try: %w", err)
	}
	return nil
}

// WebhookHealth is what /admin shows of an endpoint's deliveries.
type WebhookHealth struct {
	Pending, Failed int
	// LastFailure is the latest delivery given up, nil for none.
	LastFailure *WebhookFailure
}

// WebhookFailure is a delivery given up.
type WebhookFailure struct {
	EventSeq   int64
	At         time.Time
	Attempts   int
	LastStatus int
	LastError  string
}

// WebhookHealth returns each endpoint's pending and failed deliveries and
// its latest failure, by endpoint id; endpoints with neither are absent.
func (s *Store) WebhookHealth(ctx context.Context) (map[string]WebhookHealth, error) {
	health := map[string]WebhookHealth{}
	rows, err := s.reader.QueryContext(ctx, `SELECT endpoint_id, state, count(*) FROM webhook_deliveries
		WHERE state IN ('pending', 'failed') GROUP BY endpoint_id, state`)
	if err != nil {
		return nil, fmt.Errorf("store: webhook health: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, state string
		var n int
		if err := rows.Scan(&id, &state, &n); err != nil {
			return nil, fmt.Errorf("store: webhook health: %w", err)
		}
		h := health[id]
		if state == WebhookFailed {
			h.Failed = n
		} else {
			h.Pending = n
		}
		health[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: webhook health: %w", err)
	}
	for id, h := range health {
		if h.Failed == 0 {
			continue
		}
		f := &WebhookFailure{}
		if err := s.reader.QueryRowContext(ctx, `SELECT event_seq, finished_at, attempts, last_status, last_error
			FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'failed' ORDER BY finished_at DESC, id DESC LIMIT 1`, id).
			Scan(&f.EventSeq, (*millisTime)(&f.At), &f.Attempts, &f.LastStatus, &f.LastError); err != nil {
			return nil, fmt.Errorf("store: webhook health: %w", err)
		}
		h.LastFailure = f
		health[id] = h
	}
	return health, nil
}

// PruneWebhookDeliveries deletes deliveries done or given up before cutoff
// and returns how many. Prune calls it with the delivery log's age.
func (s *Store) PruneWebhookDeliveries(ctx context.Context, cutoff time.Time) (int, error) {
	return s.execCount(ctx, "prune webhook deliveries",
		`DELETE FROM webhook_deliveries WHERE finished_at IS NOT NULL AND finished_at < ?`, millis(cutoff))
}

// execEach runs query n times in tx, with args(i) the i-th time, prepared
// once.
func execEach(ctx context.Context, tx *sql.Tx, query string, n int, args func(i int) []any) error {
	if n == 0 {
		return nil
	}
	st, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range n {
		if _, err := st.ExecContext(ctx, args(i)...); err != nil {
			return err
		}
	}
	return nil
}

// millisTime scans an integer of epoch milliseconds into a time.Time.
type millisTime time.Time

func (m *millisTime) Scan(v any) error {
	ms, ok := v.(int64)
	if !ok {
		return fmt.Errorf("store: %T is not epoch milliseconds", v)
	}
	*m = millisTime(fromMillis(ms))
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cmpErr is err, or fallback when err is nil.
func cmpErr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}
