package push

import (
	"bytes"
	"encoding/json"
)

// Optional is a JSON member that may be absent, explicitly null, or hold a
// value. The zero Optional is absent. The standard often treats absent and
// null apart (avatarUrl: null is sent, an absent one is not), which a plain
// field or a pointer cannot express.
//
// With encoding/json, tag the field `omitzero` so an absent Optional writes
// no key; a null one writes null.
type Optional[T any] struct {
	value T
	state presence
}

type presence uint8

const (
	absent presence = iota
	null
	present
)

// Some returns an Optional holding v.
func Some[T any](v T) Optional[T] { return Optional[T]{value: v, state: present} }

// Null returns an explicitly null Optional.
func Null[T any]() Optional[T] { return Optional[T]{state: null} }

// Get returns the value and true, or the zero value and false when o is
// absent or null.
func (o Optional[T]) Get() (T, bool) { return o.value, o.state == present }

// IsAbsent reports whether the member is absent.
func (o Optional[T]) IsAbsent() bool { return o.state == absent }

// IsNull reports whether the member is an explicit null.
func (o Optional[T]) IsNull() bool { return o.state == null }

// IsZero reports whether the member is absent; encoding/json's omitzero
// calls it.
func (o Optional[T]) IsZero() bool { return o.state == absent }

// MarshalJSON writes null or the value. An absent Optional also writes null;
// omitzero is what leaves the key out. Like any encoding/json output it is
// HTML-escaped when it reaches json.Marshal; push.Encode writes pushes without
// that escaping.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if o.state != present {
		return []byte("null"), nil
	}
	return json.Marshal(o.value)
}

// UnmarshalJSON reads null or a value of type T.
func (o *Optional[T]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*o = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*o = Some(v)
	return nil
}
