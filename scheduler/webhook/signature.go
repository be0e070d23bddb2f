package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Secrets and signatures as the Standard Webhooks specification has them: a
// secret is "whsec_" and the base64 of 24 to 64 random bytes; a webhook
// carries webhook-id, webhook-timestamp (Unix seconds) and
// webhook-signature, "v1," and the base64 HMAC-SHA256 under the secret's
// bytes of "<id>.<timestamp>.<body>".

const (
	secretPrefix = "whsec_"
	// secretBytes is what GenerateSecret draws: 32 bytes, the middle of
	// the specification's 24 to 64.
	secretBytes                    = 32
	minSecretBytes, maxSecretBytes = 24, 64
)

// ErrInvalidSecret reports a secret that is not whsec_<base64 of 24 to 64
// bytes>.
var ErrInvalidSecret = errors.New("a webhook secret must be whsec_ followed by the base64 of 24 to 64 bytes")

// GenerateSecret returns a new secret.
func GenerateSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ParseSecret returns the key bytes of a whsec_ secret.
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, secretPrefix)
	if !ok {
		return nil, ErrInvalidSecret
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, ErrInvalidSecret
	}
	return key, nil
}

// Sign returns the webhook-signature header of body sent as id at ts.
func Sign(key []byte, id string, ts time.Time, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts.Unix())
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// timestampHeader is the webhook-timestamp header of ts.
func timestampHeader(ts time.Time) string { return strconv.FormatInt(ts.Unix(), 10) }
