package usercrypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The wire envelope uses a 12-byte IV and emits a 16-byte tag; decoding
// accepts tags of 12 to 16 bytes, as upstream does.
const (
	envelopeIVLen     = 12
	envelopeTagLen    = 16
	envelopeMinTagLen = 12
)

// Errors of the encrypted-request gate. Each maps to one error code of the
// standard (§1.1 of the server contract), in the order the gate checks them.
var (
	// ErrMalformedEnvelope: the body is not a JSON object with string fields
	// iv, authTag and encryptedData (INVALID_ENCRYPTED_PAYLOAD).
	ErrMalformedEnvelope = errors.New("usercrypt: malformed encrypted envelope")
	// ErrDecrypt: bad base64, a wrong IV or tag length, a wrong key or a
	// tampered ciphertext (DECRYPTION_FAILED).
	ErrDecrypt = errors.New("usercrypt: decryption failed")
	// ErrPlaintextNotJSON: the decrypted bytes are not JSON
	// (INVALID_PAYLOAD_FORMAT).
	ErrPlaintextNotJSON = errors.New("usercrypt: decrypted payload is not JSON")
	// ErrPlaintextNotObject: the decrypted JSON is not an object
	// (INVALID_PAYLOAD_FORMAT).
	ErrPlaintextNotObject = errors.New("usercrypt: decrypted payload is not a JSON object")
)

// Envelope is the version-1 wire envelope. Fields hold base64 text; Seal
// emits standard padded base64, which the browser's atob requires.
type Envelope struct {
	IV            string `json:"iv"`
	AuthTag       string `json:"authTag"`
	EncryptedData string `json:"encryptedData"`
}

// ParseEnvelope decodes a request body into an envelope. Anything but a JSON
// object whose iv, authTag and encryptedData are strings is
// ErrMalformedEnvelope. Keys match exactly (encoding/json alone would also
// take "IV"); other keys are ignored.
func ParseEnvelope(body []byte) (Envelope, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return Envelope{}, fmt.Errorf("%w: %v", ErrMalformedEnvelope, err)
	}
	var env Envelope
	for _, f := range []struct {
		name string
		dst  *string
	}{{"iv", &env.IV}, {"authTag", &env.AuthTag}, {"encryptedData", &env.EncryptedData}} {
		raw := fields[f.name]
		if len(raw) == 0 || raw[0] != '"' {
			return Envelope{}, fmt.Errorf("%w: %s must be a string", ErrMalformedEnvelope, f.name)
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return Envelope{}, fmt.Errorf("%w: %s: %v", ErrMalformedEnvelope, f.name, err)
		}
	}
	return env, nil
}

// Seal encrypts plaintext under k with a fresh random IV.
func (k Key) Seal(plaintext []byte) Envelope {
	return k.sealWithIV(randomBytes(envelopeIVLen), plaintext)
}

func (k Key) sealWithIV(iv, plaintext []byte) Envelope {
	sealed := k.gcm(envelopeIVLen).Seal(nil, iv, plaintext, nil)
	ct, tag := sealed[:len(plaintext)], sealed[len(plaintext):]
	enc := base64.StdEncoding
	return Envelope{IV: enc.EncodeToString(iv), AuthTag: enc.EncodeToString(tag), EncryptedData: enc.EncodeToString(ct)}
}

// Open decrypts env under k. Every failure is ErrDecrypt.
func (k Key) Open(env Envelope) ([]byte, error) {
	iv, err := decodeBase64(env.IV)
	if err != nil {
		return nil, fmt.Errorf("%w: iv: %v", ErrDecrypt, err)
	}
	tag, err := decodeBase64(env.AuthTag)
	if err != nil {
		return nil, fmt.Errorf("%w: authTag: %v", ErrDecrypt, err)
	}
	ct, err := decodeBase64(env.EncryptedData)
	if err != nil {
		return nil, fmt.Errorf("%w: encryptedData: %v", ErrDecrypt, err)
	}
	if len(iv) != envelopeIVLen {
		return nil, fmt.Errorf("%w: iv is %d bytes, want %d", ErrDecrypt, len(iv), envelopeIVLen)
	}
	if len(tag) < envelopeMinTagLen || len(tag) > envelopeTagLen {
		return nil, fmt.Errorf("%w: authTag is %d bytes, want %d to %d", ErrDecrypt, len(tag), envelopeMinTagLen, envelopeTagLen)
	}
	block, err := aes.NewCipher(k.b[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	aead, err := cipher.NewGCMWithTagSize(block, len(tag))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	plaintext, err := aead.Open(nil, iv, append(ct, tag...), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	return plaintext, nil
}

// OpenRequest runs the standard's encrypted-request checks on a body, in its
// order: envelope shape (ErrMalformedEnvelope), decryption (ErrDecrypt),
// JSON (ErrPlaintextNotJSON), object (ErrPlaintextNotObject). It returns
// the decrypted JSON object.
func (k Key) OpenRequest(body []byte) (json.RawMessage, error) {
	env, err := ParseEnvelope(body)
	if err != nil {
		return nil, err
	}
	plaintext, err := k.Open(env)
	if err != nil {
		return nil, err
	}
	if !json.Valid(plaintext) {
		return nil, ErrPlaintextNotJSON
	}
	if trimmed := bytes.TrimLeft(plaintext, " \t\r\n"); trimmed[0] != '{' {
		return nil, ErrPlaintextNotObject
	}
	return plaintext, nil
}

// decodeBase64 accepts standard or URL-safe base64, padded or not. Padding,
// when present, must be complete; the two alphabets must not be mixed.
func decodeBase64(s string) ([]byte, error) {
	urlSafe := strings.ContainsAny(s, "-_")
	padded := strings.HasSuffix(s, "=")
	switch {
	case urlSafe && padded:
		return base64.URLEncoding.DecodeString(s)
	case urlSafe:
		return base64.RawURLEncoding.DecodeString(s)
	case padded:
		return base64.StdEncoding.DecodeString(s)
	default:
		return base64.RawStdEncoding.DecodeString(s)
	}
}
