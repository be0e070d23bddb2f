// Package usercrypt holds the per-user keys of ReiStandard Active Messaging
// and its two AES-256-GCM formats: the wire envelope {iv, authTag,
// encryptedData} that encrypted requests and responses carry, and the
// hex(iv):hex(tag):hex(ct) string that sealed columns hold at rest.
//
// A user key is SHA-256 of the master key's hex string followed by the raw
// X-User-Id string, so "550E…" and "550e…" are different users, exactly as
// upstream and the browser client compute it.
package usercrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
)

// MasterKeyLen is the length of a master key: 32 bytes written as hex.
const MasterKeyLen = 64

// ErrInvalidMasterKey reports a master key that is not 64 hex characters.
var ErrInvalidMasterKey = errors.New("usercrypt: master key must be exactly 64 hex characters")

// Keyring holds the master key and derives user keys from it. It keeps the
// keys of recent users with their at-rest AEAD, since the store seals and
// opens a user's columns several times a push.
type Keyring struct {
	master string
	mu     sync.Mutex
	keys   map[string]Key // at most maxCachedKeys; X-User-Id is the caller's to choose
}

// maxCachedKeys bounds the keys a Keyring keeps; past it they are all
// dropped and derived again as used.
const maxCachedKeys = 4096

// NewKeyring returns a keyring for masterKey, which must be 64 hex
// characters. The string is used as given (not decoded, not case-folded):
// that string is what user keys are derived from.
func NewKeyring(masterKey string) (*Keyring, error) {
	if err := ValidateMasterKey(masterKey); err != nil {
		return nil, err
	}
	return &Keyring{master: masterKey, keys: make(map[string]Key)}, nil
}

// ValidateMasterKey reports whether s can be a master key.
func ValidateMasterKey(s string) error {
	if len(s) != MasterKeyLen {
		return fmt.Errorf("%w (got %d characters)", ErrInvalidMasterKey, len(s))
	}
	if _, err := hex.DecodeString(s); err != nil {
		return fmt.Errorf("%w (not hex)", ErrInvalidMasterKey)
	}
	return nil
}

// GenerateMasterKey returns a new master key: 32 random bytes, lowercase hex.
func GenerateMasterKey() string {
	return hex.EncodeToString(randomBytes(32))
}

// UserKey derives the key of userID, the raw X-User-Id header value.
func (r *Keyring) UserKey(userID string) Key {
	r.mu.Lock()
	k, ok := r.keys[userID]
	r.mu.Unlock()
	if ok {
		return k
	}
	k = Key{b: sha256.Sum256([]byte(r.master + userID))}
	k.atRest = k.gcm(atRestIVLen)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.keys) >= maxCachedKeys {
		clear(r.keys)
	}
	r.keys[userID] = k
	return k
}

// String keeps the master key out of logs and error messages.
func (r *Keyring) String() string { return "usercrypt.Keyring{redacted}" }

// Key is one user's AES-256 key. Its String method never prints the key;
// use Hex where the key must leave the process (GET /get-user-key).
type Key struct {
	b [32]byte
	// atRest is AES-256-GCM under b with the at-rest IV size, made once
	// (an AEAD is safe for concurrent use); nil in a zero Key.
	atRest cipher.AEAD
}

// Hex returns the key as 64 lowercase hex characters, the userKey that
// GET /get-user-key hands to the browser.
func (k Key) Hex() string { return hex.EncodeToString(k.b[:]) }

// String keeps the key out of logs and error messages.
func (k Key) String() string { return "usercrypt.Key{redacted}" }

// atRestAEAD returns AES-256-GCM under k for the at-rest format.
func (k Key) atRestAEAD() cipher.AEAD {
	if k.atRest != nil {
		return k.atRest
	}
	return k.gcm(atRestIVLen)
}

// gcm returns AES-256-GCM under k with the given nonce size and a 16-byte tag.
func (k Key) gcm(nonceSize int) cipher.AEAD {
	block, err := aes.NewCipher(k.b[:])
	if err != nil {
		panic(err) // unreachable: the key is always 32 bytes
	}
	aead, err := cipher.NewGCMWithNonceSize(block, nonceSize)
	if err != nil {
		panic(err) // unreachable: nonce sizes are the package's constants
	}
	return aead
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails; it crashes the program instead
	return b
}
