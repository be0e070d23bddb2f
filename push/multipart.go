package push

import (
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"amsg/push/errcode"
)

// MultipartChunk is one `_multipart` transport push: a byte slice of an
// oversized push's JSON plus what the service worker needs to put the push
// back together. Field order is the wire order.
type MultipartChunk struct {
	MessageKind Kind          `json:"messageKind"` // always KindMultipart
	Multipart   MultipartMeta `json:"multipart"`
	Chunk       string        `json:"chunk"` // unpadded base64url of the slice
}

// MultipartMeta is the `multipart` object of a chunk.
type MultipartMeta struct {
	Version  int    `json:"version"`
	ID       string `json:"id"`    // "mp_<uuid v4>", the same on every chunk
	Index    int    `json:"index"` // 1-based
	Total    int    `json:"total"`
	Encoding string `json:"encoding"`
	// OriginalMessageKind is the messageKind of the split push, or null.
	OriginalMessageKind *Kind `json:"originalMessageKind"`
	// CreatedAt is the sender's clock in epoch milliseconds, identical on all
	// chunks; receivers expire a set at CreatedAt + TTLMs.
	CreatedAt int64 `json:"createdAt"`
	TTLMs     int64 `json:"ttlMs"`
}

// ErrPayloadTooLarge is what every *PayloadTooLargeError matches with errors.Is.
var ErrPayloadTooLarge = errors.New("push payload too large")

// PayloadTooLargeError reports a push that multipart delivery cannot carry.
// Its message names the limit that was hit.
type PayloadTooLargeError struct {
	Bytes  int    // UTF-8 bytes of the encoded push
	Reason string // which limit, in words
}

func (e *PayloadTooLargeError) Error() string { return e.Reason }

// Code returns the standard's error code, PAYLOAD_TOO_LARGE.
func (e *PayloadTooLargeError) Code() string { return errcode.PayloadTooLarge.Code() }

// Unwrap makes errors.Is(err, ErrPayloadTooLarge) hold.
func (e *PayloadTooLargeError) Unwrap() error { return ErrPayloadTooLarge }

// MultipartOptions tunes SplitMultipart. Zero values take the standard's
// defaults.
type MultipartOptions struct {
	ChunkBytes    int           // bytes of the original per chunk; default DefaultMultipartChunkBytes
	MaxChunks     int           // default DefaultMultipartMaxChunks
	MaxTotalBytes int           // default DefaultMultipartMaxTotalBytes
	TTL           time.Duration // carried as ttlMs; default DefaultMultipartTTL
	ID            string        // default NewMultipartID()
	CreatedAt     time.Time     // default time.Now()
}

func (o MultipartOptions) withDefaults() MultipartOptions {
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultMultipartChunkBytes
	}
	if o.MaxChunks <= 0 {
		o.MaxChunks = DefaultMultipartMaxChunks
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMultipartMaxTotalBytes
	}
	if o.TTL <= 0 {
		o.TTL = DefaultMultipartTTL
	}
	if o.ID == "" {
		o.ID = NewMultipartID()
	}
	if o.CreatedAt.IsZero() {
		o.CreatedAt = time.Now()
	}
	return o
}

// NewMultipartID returns a fresh set id, "mp_" and a lowercase UUID v4.
func NewMultipartID() string { return "mp_" + NewUUID() }

// SplitMultipart cuts the encoded JSON of a push into `_multipart` chunk
// payloads, each ready to be sent as one Web Push. Cuts fall on bytes, not
// characters: the receiver joins bytes before decoding. kind is the push's
// messageKind ("" sends null). The limits are checked in the standard's
// order; a push over them gets a *PayloadTooLargeError.
func SplitMultipart(payload []byte, kind Kind, opts MultipartOptions) ([][]byte, error) {
	opts = opts.withDefaults()
	if kind == KindMultipart {
		return nil, &PayloadTooLargeError{Bytes: len(payload),
			Reason: "a _multipart chunk cannot itself be split into chunks"}
	}
	if len(payload) > opts.MaxTotalBytes {
		return nil, &PayloadTooLargeError{Bytes: len(payload), Reason: fmt.Sprintf(
			"push payload is %d bytes; multipart delivery carries at most %d bytes",
			len(payload), opts.MaxTotalBytes)}
	}
	total := max(1, (len(payload)+opts.ChunkBytes-1)/opts.ChunkBytes)
	if total > opts.MaxChunks {
		return nil, &PayloadTooLargeError{Bytes: len(payload), Reason: fmt.Sprintf(
			"push payload of %d bytes needs %d chunks of %d bytes; multipart delivery allows at most %d chunks",
			len(payload), total, opts.ChunkBytes, opts.MaxChunks)}
	}
	var original *Kind
	if kind != "" {
		original = &kind
	}
	chunk := MultipartChunk{
		MessageKind: KindMultipart,
		Multipart: MultipartMeta{
			Version:             MultipartVersion,
			ID:                  opts.ID,
			Total:               total,
			Encoding:            MultipartEncoding,
			OriginalMessageKind: original,
			CreatedAt:           opts.CreatedAt.UnixMilli(),
			TTLMs:               opts.TTL.Milliseconds(),
		},
	}
	out := make([][]byte, 0, total)
	for i := range total {
		part := payload[i*opts.ChunkBytes : min((i+1)*opts.ChunkBytes, len(payload))]
		chunk.Multipart.Index = i + 1
		chunk.Chunk = base64.RawURLEncoding.EncodeToString(part)
		b, err := MarshalNoEscape(chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
