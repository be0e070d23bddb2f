// Package receipt mints and checks the per-push receipt tokens with which
// amsg's service worker reports that a push was shown, clicked or dismissed
// (issue 25). A token names the device the push went to and carries an
// HMAC-SHA256, under a key of the server's, over the user, the message and
// that device, so a report can only be about a push the server sent to the
// device that reports it: it needs no user key, it cannot be forged, and a
// token of one message or device does not pass for another. The courier
// stamps each push with its device's token (Stamp); the receipts endpoint
// parses reports (DecodeBatch) and checks their tokens (Signer.Check).
package receipt

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"
)

// Field is the member of a push's JSON object that carries its token.
const Field = "receiptToken"

// Bounds of a token.
const (
	// macBytes is the HMAC kept: 128 bits, as a session cookie's.
	macBytes = 16
	// MaxTokenBytes bounds a token: a device id of at most 19 digits, a
	// dot and the base64url MAC.
	MaxTokenBytes = 19 + 1 + 22
)

// ErrMalformed reports a token that is not one amsg mints.
var ErrMalformed = errors.New("receipt: malformed token")

// Signer mints and checks tokens under one key. It is safe for concurrent
// use.
type Signer struct {
	key []byte
	// macs holds keyed HMACs with their input buffers, reused: the
	// courier mints a token for every push.
	macs sync.Pool
}

// macState is one reusable HMAC under the signer's key.
type macState struct {
	h     hash.Hash
	input []byte
	sum   [sha256.Size]byte
}

// NewSigner returns a signer with key, which the server derives from its
// master key so that tokens stay valid across restarts and instances.
func NewSigner(key [32]byte) *Signer {
	s := &Signer{key: key[:]}
	s.macs.New = func() any { return &macState{h: hmac.New(sha256.New, s.key)} }
	return s
}

// String keeps the key out of logs.
func (s *Signer) String() string { return "receipt.Signer{redacted}" }

// Token is the token of userID's push messageID to device deviceID (a
// stored device's id, above 0).
func (s *Signer) Token(userID, messageID string, deviceID int64) string {
	var buf [MaxTokenBytes]byte
	return string(s.appendToken(buf[:0], userID, messageID, deviceID))
}

// appendToken appends Token's token to dst.
func (s *Signer) appendToken(dst []byte, userID, messageID string, deviceID int64) []byte {
	start := len(dst)
	dst = strconv.AppendInt(dst, deviceID, 10)
	id := dst[start:]
	m := s.macs.Get().(*macState)
	dst = append(dst, '.')
	dst = base64.RawURLEncoding.AppendEncode(dst, m.mac(userID, messageID, id))
	s.macs.Put(m)
	return dst
}

// Check reports whether token is the one Token gives for userID, messageID
// and deviceID, in constant time.
func (s *Signer) Check(token, userID, messageID string, deviceID int64) bool {
	_, mac, err := Parse(token)
	if err != nil {
		return false
	}
	var id [20]byte
	m := s.macs.Get().(*macState)
	defer s.macs.Put(m)
	return hmac.Equal(mac, m.mac(userID, messageID, strconv.AppendInt(id[:0], deviceID, 10)))
}

// mac is the HMAC over the three names, each length-prefixed so that no
// two triples share an input. The result is m's until its next use.
func (m *macState) mac(userID, messageID string, deviceID []byte) []byte {
	in := appendPart(m.input[:0], userID)
	in = appendPart(in, messageID)
	in = appendPart(in, deviceID)
	m.input = in
	m.h.Reset()
	m.h.Write(in)
	return m.h.Sum(m.sum[:0])[:macBytes]
}

// appendPart appends one name of a MAC's input, length-prefixed.
func appendPart[T string | []byte](in []byte, part T) []byte {
	in = strconv.AppendInt(in, int64(len(part)), 10)
	in = append(in, ':')
	return append(in, part...)
}

// Parse splits a token into the device it names and its MAC, or returns
// ErrMalformed.
func Parse(token string) (deviceID int64, mac []byte, err error) {
	if len(token) > MaxTokenBytes {
		return 0, nil, ErrMalformed
	}
	id, encoded, ok := strings.Cut(token, ".")
	if !ok || id == "" || id[0] == '0' || id[0] == '+' || id[0] == '-' {
		return 0, nil, ErrMalformed
	}
	deviceID, err = strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, nil, ErrMalformed
	}
	mac, err = base64.RawURLEncoding.Strict().DecodeString(encoded)
	if err != nil || len(mac) != macBytes {
		return 0, nil, ErrMalformed
	}
	return deviceID, mac, nil
}

// Stamp returns payload, a push's JSON object, with the token of userID's
// push messageID to device deviceID (Token) added as its last member, in
// one allocation. It does not check payload: the courier stamps pushes the
// builders made.
func (s *Signer) Stamp(payload []byte, userID, messageID string, deviceID int64) []byte {
	end := len(payload) - 1
	for end > 0 && payload[end] != '}' {
		end--
	}
	if end <= 0 {
		return payload
	}
	out := make([]byte, 0, len(payload)+len(Field)+MaxTokenBytes+6)
	out = append(out, payload[:end]...)
	if !isEmptyObject(payload[:end]) {
		out = append(out, ',')
	}
	out = append(out, `"`+Field+`":"`...)
	out = s.appendToken(out, userID, messageID, deviceID)
	return append(out, `"}`...)
}

// isEmptyObject reports whether head, an object up to its closing brace,
// has no member.
func isEmptyObject(head []byte) bool {
	return string(bytes.TrimSpace(head)) == "{"
}
