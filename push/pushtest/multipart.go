package pushtest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"amsg/push"
)

// The receiving side of `_multipart`: amsg only sends chunks (the service
// worker puts them together), so decoding and reassembly live here, where
// the fake push service and the tests use them.

// Errors of DecodeMultipartChunk. A payload that does not have the shape of
// a chunk is an ordinary push to the service worker; one that has the shape
// but breaks a rule is dropped.
var (
	ErrNotMultipart          = errors.New("not a _multipart chunk")
	ErrInvalidMultipartChunk = errors.New("invalid _multipart chunk")
)

// MultipartPart is one chunk as a receiver accepts it.
type MultipartPart struct {
	// Meta is normalised the service worker's way: CreatedAt is 0 when the
	// chunk's was missing or not a finite number, TTLMs is 0 when it was not
	// a positive integer, and OriginalMessageKind is nil unless a string.
	Meta  push.MultipartMeta
	Bytes []byte // the decoded slice
}

// DecodeMultipartChunk reads one push payload as a `_multipart` chunk with
// the rules of @rei-standard/amsg-sw: messageKind "_multipart", an object
// `multipart` and a string `chunk` make a chunk (else ErrNotMultipart);
// version 1, encoding json-utf8-base64url, a non-empty id, integers with
// 0 < total <= maxChunks and 1 <= index <= total, and a chunk that decodes
// as base64url with or without padding make it valid (else
// ErrInvalidMultipartChunk). maxChunks <= 0 means the default, 128.
func DecodeMultipartChunk(data []byte, maxChunks int) (MultipartPart, error) {
	if maxChunks <= 0 {
		maxChunks = push.DefaultMultipartMaxChunks
	}
	meta, chunk, ok := chunkShape(data)
	if !ok {
		return MultipartPart{}, ErrNotMultipart
	}
	var p MultipartPart
	var err error
	if p.Meta, err = requiredMeta(meta, maxChunks); err != nil {
		return MultipartPart{}, err
	}
	if p.Bytes, err = decodeBase64URL(chunk); err != nil {
		return MultipartPart{}, fmt.Errorf("%w: chunk is not base64url", ErrInvalidMultipartChunk)
	}
	optionalMeta(meta, &p.Meta)
	return p, nil
}

// chunkShape reports whether data has a chunk's shape: messageKind
// "_multipart", an object `multipart` and a string `chunk`.
func chunkShape(data []byte) (meta map[string]json.RawMessage, chunk string, ok bool) {
	// Maps, not structs: encoding/json matches struct keys case-insensitively
	// and the service worker does not.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil, "", false
	}
	var kind string
	if json.Unmarshal(top["messageKind"], &kind) != nil || push.Kind(kind) != push.KindMultipart ||
		json.Unmarshal(top["multipart"], &meta) != nil || meta == nil ||
		!isJSONString(top["chunk"]) || json.Unmarshal(top["chunk"], &chunk) != nil {
		return nil, "", false
	}
	return meta, chunk, true
}

// requiredMeta checks the members a valid chunk must have.
func requiredMeta(meta map[string]json.RawMessage, maxChunks int) (push.MultipartMeta, error) {
	invalid := func(format string, a ...any) (push.MultipartMeta, error) {
		return push.MultipartMeta{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidMultipartChunk}, a...)...)
	}
	var m push.MultipartMeta
	if v, ok := jsonInteger(meta["version"]); !ok || v != push.MultipartVersion {
		return invalid("version is not %d", push.MultipartVersion)
	}
	m.Version = push.MultipartVersion
	if json.Unmarshal(meta["encoding"], &m.Encoding) != nil || m.Encoding != push.MultipartEncoding {
		return invalid("encoding is not %q", push.MultipartEncoding)
	}
	if !isJSONString(meta["id"]) || json.Unmarshal(meta["id"], &m.ID) != nil || m.ID == "" {
		return invalid("id is not a non-empty string")
	}
	total, ok := jsonInteger(meta["total"])
	if !ok || total <= 0 || total > float64(maxChunks) {
		return invalid("total is not an integer in 1..%d", maxChunks)
	}
	index, ok := jsonInteger(meta["index"])
	if !ok || index < 1 || index > total {
		return invalid("index is not an integer in 1..total")
	}
	m.Total, m.Index = int(total), int(index)
	return m, nil
}

// optionalMeta normalises the members the service worker tolerates.
func optionalMeta(meta map[string]json.RawMessage, m *push.MultipartMeta) {
	var original string
	if isJSONString(meta["originalMessageKind"]) && json.Unmarshal(meta["originalMessageKind"], &original) == nil {
		k := push.Kind(original)
		m.OriginalMessageKind = &k
	}
	var createdAt float64
	if json.Unmarshal(meta["createdAt"], &createdAt) == nil && isJSONNumber(meta["createdAt"]) &&
		math.Abs(createdAt) < math.MaxInt64/2 {
		m.CreatedAt = int64(createdAt)
	}
	if ttl, ok := jsonInteger(meta["ttlMs"]); ok && ttl > 0 && ttl < math.MaxInt64/2 {
		m.TTLMs = int64(ttl)
	}
}

// isJSONString reports whether raw is a JSON string (json.Unmarshal would
// also accept null into a string and leave it empty).
func isJSONString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }

func isJSONNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// jsonInteger reads raw as JavaScript's Number.isInteger would see it: 1,
// 1.0 and 1e0 are the integer 1.
func jsonInteger(raw json.RawMessage) (float64, bool) {
	var f float64
	if !isJSONNumber(raw) || json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) {
		return 0, false
	}
	return f, true
}

// decodeBase64URL decodes unpadded or padded base64url.
func decodeBase64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// Reasons MultipartReassembler.Add drops a chunk.
var (
	ErrMultipartExpired   = errors.New("multipart set expired")
	ErrMultipartDuplicate = errors.New("duplicate multipart chunk")
	ErrMultipartConflict  = errors.New("multipart chunk disagrees with its set")
	ErrMultipartOverflow  = errors.New("multipart set exceeds its byte limit")
)

// MultipartReassembler puts chunks back together the way the service worker
// does, for one receiver: per-id sets that expire at the sender's createdAt
// plus the smaller of the chunk's ttlMs and the receiver's cap, done markers
// against redelivery, and a byte cap. It is safe for concurrent use.
type MultipartReassembler struct {
	MaxChunks     int              // default push.DefaultMultipartMaxChunks
	MaxTotalBytes int              // default push.DefaultMultipartMaxTotalBytes
	TTL           time.Duration    // receiver cap on a set's lifetime; default push.DefaultMultipartTTL
	Now           func() time.Time // default time.Now

	mu      sync.Mutex
	pending map[string]*multipartSet
	done    map[string]time.Time // id → when the done marker expires
}

type multipartSet struct {
	total     int
	encoding  string
	expiresAt time.Time
	bytes     int
	parts     map[int][]byte
}

// Add takes one decoded chunk. It returns the original push's JSON when the
// chunk completes its set, nil and nil while the set is incomplete, and an
// error when the chunk is dropped.
func (r *MultipartReassembler) Add(p MultipartPart) ([]byte, error) {
	maxTotal := r.MaxTotalBytes
	if maxTotal <= 0 {
		maxTotal = push.DefaultMultipartMaxTotalBytes
	}
	maxChunks := r.MaxChunks
	if maxChunks <= 0 {
		maxChunks = push.DefaultMultipartMaxChunks
	}
	if p.Meta.Total > maxChunks {
		return nil, fmt.Errorf("%w: total %d over %d", ErrMultipartConflict, p.Meta.Total, maxChunks)
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	ttl := r.TTL
	if ttl <= 0 {
		ttl = push.DefaultMultipartTTL
	}
	if p.Meta.TTLMs > 0 {
		ttl = min(ttl, time.Duration(p.Meta.TTLMs)*time.Millisecond)
	}
	createdAt := now
	if p.Meta.CreatedAt != 0 {
		createdAt = time.UnixMilli(p.Meta.CreatedAt)
	}
	expiresAt := createdAt.Add(ttl)

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = make(map[string]*multipartSet)
		r.done = make(map[string]time.Time)
	}
	r.sweep(now)
	id := p.Meta.ID
	if !now.Before(expiresAt) {
		return nil, fmt.Errorf("%w: chunk %d/%d of %s", ErrMultipartExpired, p.Meta.Index, p.Meta.Total, id)
	}
	if _, ok := r.done[id]; ok {
		return nil, fmt.Errorf("%w: set %s already complete", ErrMultipartDuplicate, id)
	}
	set := r.pending[id]
	if set != nil && (set.total != p.Meta.Total || set.encoding != p.Meta.Encoding) {
		delete(r.pending, id)
		return nil, fmt.Errorf("%w: total or encoding changed in set %s", ErrMultipartConflict, id)
	}
	if set == nil {
		set = &multipartSet{total: p.Meta.Total, encoding: p.Meta.Encoding, expiresAt: expiresAt,
			parts: make(map[int][]byte, p.Meta.Total)}
		r.pending[id] = set
	}
	if _, dup := set.parts[p.Meta.Index]; dup {
		return nil, fmt.Errorf("%w: chunk %d/%d of %s", ErrMultipartDuplicate, p.Meta.Index, p.Meta.Total, id)
	}
	set.bytes += len(p.Bytes)
	if set.bytes > maxTotal {
		delete(r.pending, id)
		return nil, fmt.Errorf("%w: set %s over %d bytes", ErrMultipartOverflow, id, maxTotal)
	}
	set.parts[p.Meta.Index] = p.Bytes
	if len(set.parts) < set.total {
		return nil, nil
	}
	delete(r.pending, id)
	out := make([]byte, 0, set.bytes)
	for i := 1; i <= set.total; i++ {
		out = append(out, set.parts[i]...)
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("%w: set %s does not reassemble to JSON", ErrInvalidMultipartChunk, id)
	}
	r.done[id] = now.Add(max(2*ttl, ttl+time.Millisecond))
	return out, nil
}

// sweep forgets expired sets and done markers, as the service worker's
// housekeeping does, so a long-lived receiver does not grow without bound.
func (r *MultipartReassembler) sweep(now time.Time) {
	for id, set := range r.pending {
		if !now.Before(set.expiresAt) {
			delete(r.pending, id)
		}
	}
	for id, until := range r.done {
		if !now.Before(until) {
			delete(r.done, id)
		}
	}
}
