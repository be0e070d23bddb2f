package pushtest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxTokenLifetime is RFC 8292 §2's limit on a VAPID token's exp.
const maxTokenLifetime = 24 * time.Hour

// verifyVAPID checks an `Authorization: vapid t=<jwt>, k=<key>` header as a
// push service does (RFC 8292): k is the application server key the
// subscription was made with, and the JWT is ES256-signed by it, addressed to
// the push service's origin, unexpired but not valid for more than 24 hours,
// and names a contact.
func verifyVAPID(header string, serverKey []byte, origin string, now time.Time) error {
	_, err := verifyVAPIDExpiry(header, serverKey, origin, now)
	return err
}

// verifyVAPIDExpiry is verifyVAPID that also returns the token's expiry.
func verifyVAPIDExpiry(header string, serverKey []byte, origin string, now time.Time) (time.Time, error) {
	token, err := vapidToken(header, serverKey)
	if err != nil {
		return time.Time{}, err
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, errors.New("t= is not a JWT of three parts")
	}
	if err := verifyJWTSignature(parts, serverKey); err != nil {
		return time.Time{}, err
	}
	return checkVAPIDClaims(parts[1], origin, now)
}

// vapidToken reads the JWT (t=) of a "vapid" Authorization header whose k=
// must be serverKey.
func vapidToken(header string, serverKey []byte) (string, error) {
	scheme, params, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "vapid") {
		return "", fmt.Errorf("authorization scheme is not vapid: %q", scheme)
	}
	var token, key string
	for _, p := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch strings.ToLower(name) {
		case "t":
			token = value
		case "k":
			key = value
		}
	}
	k, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(key, "="))
	if err != nil || !bytes.Equal(k, serverKey) {
		return "", fmt.Errorf("k= is not the application server key the subscription was made with")
	}
	return token, nil
}

// verifyJWTSignature checks a JWT's ES256 header and signature against the
// server key.
func verifyJWTSignature(parts []string, serverKey []byte) error {
	var head struct {
		Alg string `json:"alg"`
	}
	if err := decodeSegment(parts[0], &head); err != nil || head.Alg != "ES256" {
		return fmt.Errorf("JWT header alg is %q, want ES256", head.Alg)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return errors.New("JWT signature is not 64 bytes of r||s")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), serverKey)
	if err != nil {
		return fmt.Errorf("server key: %w", err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return errors.New("JWT signature does not verify with k")
	}
	return nil
}

// checkVAPIDClaims checks a JWT's claims segment: aud the push service's
// origin, exp within 24 hours after now, sub a contact. It returns exp.
func checkVAPIDClaims(segment, origin string, now time.Time) (time.Time, error) {
	var claims struct {
		Aud string          `json:"aud"`
		Exp json.RawMessage `json:"exp"`
		Sub json.RawMessage `json:"sub"`
	}
	if err := decodeSegment(segment, &claims); err != nil {
		return time.Time{}, fmt.Errorf("JWT claims: %w", err)
	}
	if claims.Aud != origin {
		return time.Time{}, fmt.Errorf("JWT aud is %q, want the push service origin %q", claims.Aud, origin)
	}
	exp, err := strconv.ParseFloat(string(claims.Exp), 64)
	if err != nil || exp < 0 || exp > math.MaxInt32*4 {
		return time.Time{}, fmt.Errorf("JWT exp %s is not a number of seconds", claims.Exp)
	}
	expiry := time.Unix(int64(exp), 0)
	if !expiry.After(now) || expiry.Sub(now) > maxTokenLifetime {
		return time.Time{}, fmt.Errorf("JWT exp %s is not within 24 hours after now (%s)", expiry.UTC(), now.UTC())
	}
	var sub string
	if json.Unmarshal(claims.Sub, &sub) != nil || sub == "" {
		return time.Time{}, errors.New("JWT sub is missing")
	}
	lower := strings.ToLower(sub)
	if strings.HasPrefix(lower, "mailto:mailto:") ||
		!strings.HasPrefix(lower, "mailto:") && !strings.HasPrefix(lower, "https:") {
		return time.Time{}, fmt.Errorf("JWT sub %q is not a mailto: or https: contact", sub)
	}
	return expiry, nil
}

// tokenCache remembers the VAPID headers that verified, until their
// expiry, as RFC 8292 §4 encourages push services to: a sender that reuses
// its token then costs the service one signature check, not one per push.
type tokenCache struct {
	mu       sync.Mutex
	verified map[string]time.Time // Authorization header → the token's exp
}

// maxCachedTokens bounds the cache; it starts over when full.
const maxCachedTokens = 4096

func (c *tokenCache) verify(header string, serverKey []byte, origin string, now time.Time) error {
	c.mu.Lock()
	expiry, ok := c.verified[header]
	c.mu.Unlock()
	if ok && now.Before(expiry) {
		return nil
	}
	expiry, err := verifyVAPIDExpiry(header, serverKey, origin, now)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.verified == nil || len(c.verified) >= maxCachedTokens {
		c.verified = make(map[string]time.Time)
	}
	c.verified[header] = expiry
	c.mu.Unlock()
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// decrypt opens an aes128gcm body (RFC 8188) with the Web Push key schedule
// (RFC 8291 §3.4) as the user agent does, and returns the plaintext and the
// record size. Web Push allows a single record only (RFC 8291 §4).
func decrypt(body []byte, ua *ecdh.PrivateKey, auth []byte) ([]byte, int, error) {
	const headerLen = 16 + 4 + 1
	if len(body) < headerLen {
		return nil, 0, errors.New("body shorter than the aes128gcm header")
	}
	salt, rs, idlen := body[:16], int(binary.BigEndian.Uint32(body[16:20])), int(body[20])
	if idlen != 65 || len(body) < headerLen+idlen {
		return nil, 0, fmt.Errorf("key id is %d bytes, want the 65-byte application server key", idlen)
	}
	keyID, ciphertext := body[headerLen:headerLen+idlen], body[headerLen+idlen:]
	switch {
	case rs < 18:
		return nil, 0, fmt.Errorf("record size %d is below 18", rs)
	case len(ciphertext) > rs:
		return nil, 0, fmt.Errorf("ciphertext of %d bytes spans more than one %d-byte record", len(ciphertext), rs)
	case len(ciphertext) < 17:
		return nil, 0, errors.New("ciphertext shorter than a tag and a delimiter")
	}
	asPublic, err := ecdh.P256().NewPublicKey(keyID)
	if err != nil {
		return nil, 0, fmt.Errorf("key id is not a P-256 point: %w", err)
	}
	secret, err := ua.ECDH(asPublic)
	if err != nil {
		return nil, 0, err
	}
	info := append(append([]byte("WebPush: info\x00"), ua.PublicKey().Bytes()...), keyID...)
	ikm, err := hkdf.Key(sha256.New, secret, auth, string(info), 32)
	if err != nil {
		return nil, 0, err
	}
	cek, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, 0, err
	}
	nonce, err := hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, 0, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, 0, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, 0, err
	}
	record, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, 0, errors.New("authentication failed: wrong keys or a corrupted body")
	}
	// Padding is zeros after a delimiter, 0x02 for the last (only) record.
	end := len(record) - 1
	for end >= 0 && record[end] == 0 {
		end--
	}
	if end < 0 || record[end] != 0x02 {
		return nil, 0, errors.New("record does not end with the last-record delimiter 0x02")
	}
	return record[:end], rs, nil
}
