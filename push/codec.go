package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxDecodeBytes bounds what Decode reads: the largest push multipart
// delivery can carry, so no push amsg can send is refused.
const MaxDecodeBytes = DefaultMultipartMaxTotalBytes

// Errors of Decode and Encode. Every error they return matches one of these
// with errors.Is.
var (
	// ErrTooLarge: the input is over MaxDecodeBytes.
	ErrTooLarge = errors.New("push: payload too large to decode")
	// ErrMalformed: not UTF-8 JSON, not an object, or a known member of the
	// wrong type (a *FieldError says which).
	ErrMalformed = errors.New("push: malformed payload")
	// ErrMissingKind: messageKind is absent, null or "" (*MessageKindError).
	ErrMissingKind = errors.New("push: messageKind is missing")
	// ErrUnknownKind: messageKind is not one of the four business kinds
	// (*MessageKindError).
	ErrUnknownKind = errors.New("push: unknown messageKind")
	// ErrMultipartChunk: the payload is a `_multipart` transport chunk, not a
	// business push; hand it to the multipart decoder (*MessageKindError).
	ErrMultipartChunk = errors.New("push: payload is a _multipart transport chunk")
)

// MessageKindError reports a payload whose messageKind does not name a business
// push. Match it with errors.Is against ErrMissingKind, ErrUnknownKind or
// ErrMultipartChunk, or take it with errors.As to read the kind.
type MessageKindError struct {
	// Kind is the messageKind string; "" when absent, null or empty; the
	// JSON text of the value when it is not a string.
	Kind string
}

func (e *MessageKindError) sentinel() error {
	switch Kind(e.Kind) {
	case "":
		return ErrMissingKind
	case KindMultipart:
		return ErrMultipartChunk
	}
	return ErrUnknownKind
}

func (e *MessageKindError) Error() string {
	if s := e.sentinel(); s != ErrUnknownKind {
		return s.Error()
	}
	return fmt.Sprintf("%v %q", ErrUnknownKind, snippet(e.Kind))
}

// Is matches the sentinel for the kind of failure.
func (e *MessageKindError) Is(target error) bool { return target == e.sentinel() }

// FieldError reports a known member whose value does not fit its type, on
// decode, or cannot be written, on encode. It matches ErrMalformed.
type FieldError struct {
	// Field is the member's key; a member of notification is
	// "notification.<key>", an unknown member its own key.
	Field string
	Err   error
}

func (e *FieldError) Error() string { return fmt.Sprintf("push: %s: %v", e.Field, e.Err) }

// Unwrap returns ErrMalformed and the cause.
func (e *FieldError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

// Decode reads one business push. Its concrete type follows messageKind:
// *ContentPush, *ReasoningPush, *ToolRequestPush or *ErrorPush. See the
// package documentation for what it keeps and what it refuses.
func Decode(data []byte) (Push, error) {
	members, kind, err := parsePush(data)
	if err != nil {
		return nil, err
	}
	var p Push
	switch kind {
	case KindContent:
		p = new(ContentPush)
	case KindReasoning:
		p = new(ReasoningPush)
	case KindToolRequest:
		p = new(ToolRequestPush)
	case KindError:
		p = new(ErrorPush)
	default:
		return nil, &MessageKindError{Kind: string(kind)}
	}
	if err := decodePush(p, members); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeInto is UnmarshalJSON of one concrete kind. It decodes into a fresh
// value, so members absent from data are absent afterwards, and assigns it
// to p only on success. Another business kind is a *FieldError.
func decodeInto[P any, PP interface {
	*P
	Push
}](p PP, data []byte) error {
	members, kind, err := parsePush(data)
	if err != nil {
		return err
	}
	var fresh P
	if want := PP(&fresh).Kind(); kind != want {
		if !isBusiness(kind) {
			return &MessageKindError{Kind: string(kind)}
		}
		return &FieldError{Field: "messageKind", Err: fmt.Errorf("want %q, not %q", want, kind)}
	}
	if err := decodePush(PP(&fresh), members); err != nil {
		return err
	}
	*p = fresh
	return nil
}

func isBusiness(k Kind) bool {
	switch k {
	case KindContent, KindReasoning, KindToolRequest, KindError:
		return true
	}
	return false
}

// parsePush bounds and parses a push payload and reads its messageKind. It
// returns a *MessageKindError when messageKind is absent, null, empty or not a
// string.
func parsePush(data []byte) ([]Member, Kind, error) {
	if len(data) > MaxDecodeBytes {
		return nil, "", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxDecodeBytes)
	}
	members, err := parseObject(data)
	if err != nil {
		return nil, "", err
	}
	for _, m := range members {
		if m.Key != "messageKind" {
			continue
		}
		var s string
		if err := json.Unmarshal(m.Value, &s); err != nil {
			return nil, "", &MessageKindError{Kind: string(CompactJSON(m.Value))}
		}
		if s == "" {
			break
		}
		return members, Kind(s), nil
	}
	return nil, "", &MessageKindError{}
}

func decodePush(p Push, members []Member) error {
	unknown, err := decodeMembers(p.bindings(), members, "messageKind")
	p.CommonFields().Unknown = unknown
	return err
}

// Encode writes p as compact JSON without HTML escaping, members in the
// documented order.
func Encode(p Push) ([]byte, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil push", ErrMalformed)
	}
	return appendObject(make([]byte, 0, 512), p.Kind(), p.bindings(), p.CommonFields().Unknown)
}

// binding ties a wire key to the Go field holding its value. Decoding hands
// the raw value to encoding/json with ptr as the target; encoding switches on
// ptr's type (objectWriter.member).
type binding struct {
	key string
	ptr any
}

// requiredString marks a string member written even when empty, because the
// standard requires the key (the message of content and error pushes). Other
// plain string members are left out when empty.
type requiredString string

// parseObject reads a JSON object into its members, in order of first
// appearance; a repeated key keeps its first position and its last value.
// The values are slices of one copy of data.
func parseObject(data []byte) ([]Member, error) {
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: not UTF-8", ErrMalformed)
	}
	if !json.Valid(data) {
		err := json.Unmarshal(data, new(json.RawMessage)) // for the syntax error's text
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	// From here on data is one valid JSON value, so the scan below needs no
	// error handling of its own.
	i := skipSpace(data, 0)
	if data[i] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	data = bytes.Clone(data)
	var members []Member
	var seen map[string]int
	for i = skipSpace(data, i+1); data[i] != '}'; i = skipSpace(data, i) {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := skipString(data, i)
		key := string(data[i+1 : end-1])
		if bytes.IndexByte(data[i:end], '\\') >= 0 {
			_ = json.Unmarshal(data[i:end], &key) // valid JSON: cannot fail
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		end = skipValue(data, i)
		value := json.RawMessage(data[i:end:end])
		i = end
		if j, dup := seen[key]; dup {
			members[j].Value = value
			continue
		}
		if seen == nil {
			seen = make(map[string]int)
		}
		seen[key] = len(members)
		members = append(members, Member{Key: key, Value: value})
	}
	return members, nil
}

// The skip functions scan JSON already known to be valid.

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at data[i].
func skipString(data []byte, i int) int {
	for i++; data[i] != '"'; i++ {
		if data[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the index just past the value starting at data[i].
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for {
			switch data[i] {
			case '"':
				i = skipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for ; i < len(data); i++ { // a number, true, false or null
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// decodeMembers stores each member in its binding and returns the members
// no binding claims, except skip (messageKind, which the type itself
// carries).
func decodeMembers(bindings []binding, members []Member, skip string) ([]Member, error) {
	var unknown []Member
next:
	for _, m := range members {
		if m.Key == skip {
			continue
		}
		for _, b := range bindings {
			if b.key != m.Key {
				continue
			}
			if err := json.Unmarshal(m.Value, b.ptr); err != nil {
				return nil, fieldError(m.Key, err)
			}
			continue next
		}
		unknown = append(unknown, m)
	}
	return unknown, nil
}

// fieldError wraps err for member key; a *FieldError from inside a nested
// object (notification) gets its key prefixed.
func fieldError(key string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: key + "." + fe.Field, Err: fe.Err}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		err = fmt.Errorf("want %s, not a JSON %s", te.Type, te.Value)
	}
	return &FieldError{Field: key, Err: err}
}

// appendObject writes one object: messageKind when kind is not empty, the
// bound members in order, then the unknown members.
func appendObject(buf []byte, kind Kind, bindings []binding, unknown []Member) ([]byte, error) {
	w := objectWriter{buf: append(buf, '{')}
	if kind != "" {
		w.key("messageKind")
		w.buf = appendString(w.buf, string(kind))
	}
	for _, b := range bindings {
		if err := w.member(b); err != nil {
			return nil, fieldError(b.key, err)
		}
	}
	if err := w.unknown(kind != "", bindings, unknown); err != nil {
		return nil, err
	}
	return append(w.buf, '}'), nil
}

type objectWriter struct {
	buf     []byte
	written int
}

func (w *objectWriter) key(k string) {
	if w.written > 0 {
		w.buf = append(w.buf, ',')
	}
	w.written++
	w.buf = appendString(w.buf, k)
	w.buf = append(w.buf, ':')
}

// member writes one bound member, or nothing when it is absent.
func (w *objectWriter) member(b binding) error {
	switch v := b.ptr.(type) {
	case *string:
		writeString(w, b.key, *v)
	case *requiredString:
		w.key(b.key)
		w.buf = appendString(w.buf, string(*v))
	case *MessageType:
		writeString(w, b.key, *v)
	case *Source:
		writeString(w, b.key, *v)
	case *json.RawMessage:
		if *v == nil {
			return nil
		}
		w.key(b.key)
		return w.raw(*v)
	case **Notification:
		if *v == nil {
			return nil
		}
		w.key(b.key)
		var err error
		w.buf, err = appendObject(w.buf, "", (*v).bindings(), (*v).Unknown)
		return err
	case *Optional[string]:
		writeOptional(w, b.key, *v, appendString)
	case *Optional[int]:
		writeOptional(w, b.key, *v, func(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) })
	case *Optional[int64]:
		writeOptional(w, b.key, *v, func(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) })
	case *Optional[bool]:
		writeOptional(w, b.key, *v, strconv.AppendBool)
	case *Optional[TaskID]:
		writeOptional(w, b.key, *v, func(b []byte, t TaskID) []byte { return t.appendJSON(b) })
	case *Optional[Recurrence]:
		writeOptional(w, b.key, *v, func(b []byte, r Recurrence) []byte { return appendString(b, string(r)) })
	case *Optional[Show]:
		if s, ok := v.Get(); ok && !s.Valid() {
			return s.invalid()
		}
		writeOptional(w, b.key, *v, func(b []byte, s Show) []byte { return s.appendJSON(b) })
	case *Optional[Silent]:
		if s, ok := v.Get(); ok && !s.Valid() {
			return s.invalid()
		}
		writeOptional(w, b.key, *v, func(b []byte, s Silent) []byte { out, _ := s.MarshalJSON(); return append(b, out...) })
	default:
		return fmt.Errorf("no encoder for %T (add a case to objectWriter.member)", b.ptr)
	}
	return nil
}

func writeString[S ~string](w *objectWriter, key string, s S) {
	if s == "" {
		return
	}
	w.key(key)
	w.buf = appendString(w.buf, string(s))
}

func writeOptional[T any](w *objectWriter, key string, o Optional[T], appendValue func([]byte, T) []byte) {
	if o.IsAbsent() {
		return
	}
	w.key(key)
	if v, ok := o.Get(); ok {
		w.buf = appendValue(w.buf, v)
	} else {
		w.buf = append(w.buf, "null"...)
	}
}

// raw appends a raw JSON value with insignificant whitespace removed; it
// refuses values that are not UTF-8 JSON.
func (w *objectWriter) raw(v json.RawMessage) error {
	if !utf8.Valid(v) {
		return errors.New("raw value is not UTF-8")
	}
	out := bytes.NewBuffer(w.buf)
	if err := json.Compact(out, v); err != nil {
		return fmt.Errorf("raw value is not JSON: %w", err)
	}
	w.buf = out.Bytes()
	return nil
}

// unknown appends the unknown members, refusing a key that a binding (or
// messageKind, on a push) owns or that repeats.
func (w *objectWriter) unknown(isPush bool, bindings []binding, unknown []Member) error {
	if len(unknown) == 0 {
		return nil
	}
	taken := make(map[string]bool, len(bindings)+len(unknown)+1)
	if isPush {
		taken["messageKind"] = true
	}
	for _, b := range bindings {
		taken[b.key] = true
	}
	for _, m := range unknown {
		if taken[m.Key] {
			return &FieldError{Field: m.Key, Err: errors.New("unknown member repeats a key already written")}
		}
		taken[m.Key] = true
		w.key(m.Key)
		if err := w.raw(m.Value); err != nil {
			return &FieldError{Field: m.Key, Err: err}
		}
	}
	return nil
}

// snippet shortens s for an error message; outside input can be long.
func snippet(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	for i := limit; i > limit-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return s[:limit] + "…"
}

// appendString appends s as a JSON string the way JavaScript's
// JSON.stringify writes it: only '"', '\\' and control characters are
// escaped (\b \f \n \r \t, else \u00xx); <, >, &, U+2028 and U+2029 stay as
// they are. Invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = utf8.AppendRune(b, utf8.RuneError)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
