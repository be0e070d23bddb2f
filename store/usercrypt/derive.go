package usercrypt

import (
	"crypto/hmac"
	"crypto/sha256"
)

// DerivedKey is a key of the server's own for purpose (such as "receipts"),
// HMAC-SHA256 of purpose under the master key: stable across restarts and
// instances, and unrelated to every user key and to every other purpose's.
func (r *Keyring) DerivedKey(purpose string) [32]byte {
	h := hmac.New(sha256.New, []byte(r.master))
	h.Write([]byte("amsg derived key\x00" + purpose))
	var key [32]byte
	copy(key[:], h.Sum(nil))
	return key
}
