package api

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"amsg/push"
)

// fields is a decoded request object, read with JavaScript's rules: the
// standard's checks are written in terms of presence, null and truthiness.
type fields map[string]json.RawMessage

func decodeFields(raw json.RawMessage) fields {
	var f fields
	_ = json.Unmarshal(raw, &f) // the gate has checked it is a JSON object
	return f
}

// has reports whether key is present, null included (`key in payload`).
func (f fields) has(key string) bool {
	_, ok := f[key]
	return ok
}

// given reports whether key is present and not null.
func (f fields) given(key string) bool {
	v, ok := f[key]
	return ok && string(v) != "null"
}

// truthy is JavaScript's truthiness of the member: absent, null, false, 0
// and "" are false; objects and arrays are true.
func (f fields) truthy(key string) bool { return push.JSTruthy(f[key]) }

// str returns the member as a string, and whether it is one.
func (f fields) str(key string) (string, bool) { return push.JSONString(f[key]) }

// number returns the member as a finite number, and whether it is one.
func (f fields) number(key string) (float64, bool) {
	v := f[key]
	if len(v) == 0 || !(v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return 0, false
	}
	n, err := strconv.ParseFloat(string(v), 64)
	return n, err == nil && !math.IsInf(n, 0)
}

// positiveInt returns the member as a positive integer (JavaScript's
// Number.isInteger(v) && v > 0), and whether it is one.
func (f fields) positiveInt(key string) (int, bool) {
	n, ok := f.number(key)
	if !ok || n <= 0 || n != math.Trunc(n) || n > math.MaxInt32 {
		return 0, false
	}
	return int(n), true
}

// optionalNumber reads a member that may be absent or null (nil) and is
// otherwise a finite number; ok is false for anything else.
func (f fields) optionalNumber(key string) (n *float64, ok bool) {
	if !f.given(key) {
		return nil, true
	}
	v, ok := f.number(key)
	if !ok {
		return nil, false
	}
	return &v, true
}

// optionalString reads a member that may be absent or null ("") and is
// otherwise a string; ok is false for anything else.
func (f fields) optionalString(key string) (string, bool) {
	if !f.given(key) {
		return "", true
	}
	return f.str(key)
}

// recurrence reads recurrenceType as the standard checks it: a truthy value
// must name a recurrence.
func (f fields) recurrence() (push.Recurrence, bool) {
	rec, _ := f.str("recurrenceType")
	return push.Recurrence(rec), !f.truthy("recurrenceType") || push.Recurrence(rec).Valid()
}

// stringPtr returns the member as a *string: nil unless it is a string.
func (f fields) stringPtr(key string) *string {
	if s, ok := f.str(key); ok {
		return &s
	}
	return nil
}

// raw returns the member, nil when absent or null.
func (f fields) raw(key string) json.RawMessage {
	if !f.given(key) {
		return nil
	}
	return f[key]
}

// objectKeys returns the keys of a JSON object in the order they first
// appear, as JavaScript's Object.keys does.
func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	keys := []string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		key, _ := t.(string)
		if !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// anyUUID is the standard's uuid and supersedesUuid rule: any version, any
// case.
var anyUUID = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// Layouts parseTime accepts after RFC 3339: the forms without seconds,
// fraction or offset that clients send (offset-less ones read as UTC, as on
// the standard's Workers), and a bare date, which JavaScript reads as UTC.
var timeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// parseTime reads a time the way the standard's `new Date(value)` check
// does, leniently: RFC 3339 with or without fraction and offset (a lower-case
// t or z too), a date alone, or a number of epoch milliseconds. Times outside
// the years 0001–9999 are refused: the wire format cannot write them.
func parseTime(raw json.RawMessage) (time.Time, bool) {
	var t time.Time
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		s = strings.ToUpper(strings.TrimSpace(s))
		ok := false
		for _, layout := range timeLayouts {
			if v, err := time.Parse(layout, s); err == nil {
				t, ok = v, true
				break
			}
		}
		if !ok {
			return time.Time{}, false
		}
	} else {
		var ms float64
		if json.Unmarshal(raw, &ms) != nil || ms != math.Trunc(ms) || math.Abs(ms) > 8.64e15 {
			return time.Time{}, false
		}
		t = time.UnixMilli(int64(ms))
	}
	t = t.UTC().Truncate(time.Millisecond)
	if y := t.Year(); y < 1 || y > 9999 {
		return time.Time{}, false
	}
	return t, true
}
