package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/scheduler"
	"amsg/store"
)

// preferencesFeature holds what protects a person from a proactive bot:
// PUT and GET /preferences keep the user's time zone, quiet hours (during
// which scheduled pushes, operator sends and broadcasts wait; see
// scheduler/quiet.go) and daily limit of proactive pushes by Web Push.
func (s *Server) preferencesFeature() feature {
	return feature{
		capabilities: []string{"quiet-hours", "daily-limit"},
		routes: []route{
			{http.MethodPut, "preferences", authClient, s.handlePutPreferences},
			{http.MethodGet, "preferences", authClient, s.handleGetPreferences},
		},
	}
}

// The preferences' error codes, amsg's own.
var (
	errUnknownPreference = fail(errcode.UnknownPreference)
	errInvalidTimeZone   = fail(errcode.InvalidTimeZone)
	errInvalidQuietHours = fail(errcode.InvalidQuietHours)
	errEmptyQuietHours   = fail(errcode.QuietHoursEmpty)
	errInvalidDailyLimit = fail(errcode.InvalidDailyLimit.With(store.MaxDailyLimit))
)

// preferencesJSON is the preferences on the wire; null for what is unset.
type preferencesJSON struct {
	TimeZone   *string         `json:"timeZone"`
	QuietHours *quietHoursJSON `json:"quietHours"`
	DailyLimit *int            `json:"dailyLimit"`
}

type quietHoursJSON struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

func toPreferencesJSON(p store.Preferences) preferencesJSON {
	var out preferencesJSON
	if p.TimeZone != "" {
		out.TimeZone = &p.TimeZone
	}
	if q := p.QuietHours; q != nil {
		out.QuietHours = &quietHoursJSON{Start: clockTime(q.Start), End: clockTime(q.End)}
	}
	out.DailyLimit = p.DailyLimit
	return out
}

// clockTime writes minutes after midnight as HH:MM.
func clockTime(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

// preferencesChange is a validated PUT /preferences: each member given
// replaces the stored one (null clears it); members not given stay.
type preferencesChange struct {
	timeZone   *string
	quietHours **store.QuietHours
	dailyLimit **int
}

func (c preferencesChange) apply(p store.Preferences) store.Preferences {
	if c.timeZone != nil {
		p.TimeZone = *c.timeZone
	}
	if c.quietHours != nil {
		p.QuietHours = *c.quietHours
	}
	if c.dailyLimit != nil {
		p.DailyLimit = *c.dailyLimit
	}
	return p
}

// decodePreferences reads a PUT /preferences body, refusing it whole at the
// first member that is unknown or malformed, in the order unknown members,
// timeZone, quietHours, dailyLimit.
func decodePreferences(payload []byte) (preferencesChange, error) {
	var members map[string]json.RawMessage
	if !json.Valid(payload) || bytes.TrimSpace(payload)[0] != '{' || json.Unmarshal(payload, &members) != nil {
		return preferencesChange{}, invalidPayload(errcode.PayloadNotObject, nil)
	}
	for name := range members {
		if name != "timeZone" && name != "quietHours" && name != "dailyLimit" {
			return preferencesChange{}, errUnknownPreference.withDetails(map[string]string{"member": name})
		}
	}
	var c preferencesChange
	var err error
	if raw, ok := members["timeZone"]; ok {
		if c.timeZone, err = decodeTimeZone(raw); err != nil {
			return preferencesChange{}, err
		}
	}
	if raw, ok := members["quietHours"]; ok {
		q, err := decodeQuietHours(raw)
		if err != nil {
			return preferencesChange{}, err
		}
		c.quietHours = &q
	}
	if raw, ok := members["dailyLimit"]; ok {
		l, err := decodeDailyLimit(raw)
		if err != nil {
			return preferencesChange{}, err
		}
		c.dailyLimit = &l
	}
	return c, nil
}

// decodeTimeZone reads an IANA zone name (its canonical spelling is kept)
// or null ("").
func decodeTimeZone(raw json.RawMessage) (*string, error) {
	var zone *string
	if json.Unmarshal(raw, &zone) != nil {
		return nil, errInvalidTimeZone
	}
	if zone == nil {
		return new(""), nil
	}
	loc, err := scheduler.LoadZone(*zone)
	if err != nil {
		return nil, errInvalidTimeZone
	}
	return new(loc.String()), nil
}

// decodeQuietHours reads {start, end} of HH:MM times, or null.
func decodeQuietHours(raw json.RawMessage) (*store.QuietHours, error) {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var q struct{ Start, End *string }
	if dec.Decode(&q) != nil || q.Start == nil || q.End == nil {
		return nil, errInvalidQuietHours
	}
	start, okStart := parseClockTime(*q.Start)
	end, okEnd := parseClockTime(*q.End)
	switch {
	case !okStart || !okEnd:
		return nil, errInvalidQuietHours
	case start == end:
		return nil, errEmptyQuietHours
	}
	return &store.QuietHours{Start: start, End: end}, nil
}

// parseClockTime reads HH:MM, 00:00 to 23:59, as minutes after midnight.
func parseClockTime(s string) (int, bool) {
	hh, mm, ok := strings.Cut(s, ":")
	if !ok || len(hh) != 2 || len(mm) != 2 {
		return 0, false
	}
	h, okH := twoDigits(hh)
	m, okM := twoDigits(mm)
	if !okH || !okM || h > 23 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

func twoDigits(s string) (int, bool) {
	if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// decodeDailyLimit reads an integer from 0 to store.MaxDailyLimit, or null.
func decodeDailyLimit(raw json.RawMessage) (*int, error) {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil, nil
	}
	// A JSON number (a quoted one would decode into json.Number too).
	var limit json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &limit) != nil {
		return nil, errInvalidDailyLimit
	}
	n, err := limit.Int64()
	if err != nil || n < 0 || n > store.MaxDailyLimit {
		return nil, errInvalidDailyLimit
	}
	return new(int(n)), nil
}

// handlePutPreferences changes the user's preferences and answers with all
// of them, encrypted. The body is the standard's encrypted envelope
// (X-Payload-Encrypted: true) or plain JSON; either way it is checked whole
// before anything is stored.
func (s *Server) handlePutPreferences(w http.ResponseWriter, r *http.Request) error {
	userID, body, err := s.readUserBody(w, r)
	if err != nil {
		return err
	}
	change, err := decodePreferences(body)
	if err != nil {
		return err
	}
	stored, err := s.deps.Store.UpdatePreferences(r.Context(), userID, change.apply)
	if err != nil {
		return err
	}
	return s.writeEncrypted(w, userID, toPreferencesJSON(stored))
}

func (s *Server) handleGetPreferences(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	p, err := s.deps.Store.Preferences(r.Context(), userID)
	if err != nil {
		return err
	}
	return s.writeEncrypted(w, userID, toPreferencesJSON(p))
}

// readUserBody reads a body of the user's: the encrypted envelope when the
// request says X-Payload-Encrypted: true, otherwise plain JSON from the
// user X-User-Id names.
func (s *Server) readUserBody(w http.ResponseWriter, r *http.Request) (userID string, body []byte, err error) {
	if strings.TrimSpace(r.Header.Get("X-Payload-Encrypted")) == "true" {
		return s.decryptRequest(w, r)
	}
	if userID, err = requireUserID(r); err != nil {
		return "", nil, err
	}
	body, err = readBody(w, r, s.cfg.MaxBodyBytes)
	return userID, body, err
}

var errInvalidPriority = fail(errcode.InvalidPriority)

// decodePriority reads a task's or a send's priority: "" for normal (absent,
// null or "normal"), scheduler.PriorityCritical for one that passes quiet
// hours and the daily limit.
func decodePriority(raw json.RawMessage) (string, *Error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var p string
	if json.Unmarshal(raw, &p) != nil || (p != scheduler.PriorityNormal && p != scheduler.PriorityCritical) {
		return "", errInvalidPriority.withDetails(map[string]any{"allowed": []string{scheduler.PriorityNormal, scheduler.PriorityCritical}})
	}
	if p == scheduler.PriorityNormal {
		return "", nil
	}
	return p, nil
}

// markDeferred sets deferredUntil on the views of tasks that wait for the
// end of the user's quiet hours.
func (s *Server) markDeferred(ctx context.Context, userID string, views []taskView) error {
	deferred, err := s.deps.Store.DeferredTasks(ctx, userID)
	if err != nil {
		return err
	}
	for i := range views {
		if until, ok := deferred[views[i].ID]; ok {
			views[i].DeferredUntil = push.FormatTimestamp(until)
		}
	}
	return nil
}
