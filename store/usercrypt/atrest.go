package usercrypt

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// The at-rest format uses a 16-byte IV and a 16-byte tag.
const (
	atRestIVLen  = 16
	atRestTagLen = 16
)

// ErrMalformedSealed reports a string that is not hex(iv16):hex(tag16):hex(ct).
var ErrMalformedSealed = errors.New("usercrypt: malformed sealed value")

// SealAtRest encrypts plaintext under k with a fresh random IV into the
// standard's storage format hex(iv):hex(tag):hex(ciphertext), lowercase.
func (k Key) SealAtRest(plaintext []byte) string {
	return k.sealAtRestWithIV(randomBytes(atRestIVLen), plaintext)
}

func (k Key) sealAtRestWithIV(iv, plaintext []byte) string {
	sealed := k.atRestAEAD().Seal(nil, iv, plaintext, nil)
	ct, tag := sealed[:len(plaintext)], sealed[len(plaintext):]
	return hex.EncodeToString(iv) + ":" + hex.EncodeToString(tag) + ":" + hex.EncodeToString(ct)
}

// OpenAtRest decrypts a value SealAtRest produced (or upstream stored). A
// string of the wrong shape is ErrMalformedSealed; a wrong key or tampered
// value is ErrDecrypt.
func (k Key) OpenAtRest(sealed string) ([]byte, error) {
	ivHex, rest, ok1 := strings.Cut(sealed, ":")
	tagHex, ctHex, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || strings.Contains(ctHex, ":") {
		return nil, fmt.Errorf("%w: want three colon-separated parts", ErrMalformedSealed)
	}
	iv, err := hex.DecodeString(ivHex)
	if err != nil || len(iv) != atRestIVLen {
		return nil, fmt.Errorf("%w: iv must be %d bytes of hex", ErrMalformedSealed, atRestIVLen)
	}
	tag, err := hex.DecodeString(tagHex)
	if err != nil || len(tag) != atRestTagLen {
		return nil, fmt.Errorf("%w: tag must be %d bytes of hex", ErrMalformedSealed, atRestTagLen)
	}
	ct, err := hex.DecodeString(ctHex)
	if err != nil {
		return nil, fmt.Errorf("%w: ciphertext is not hex", ErrMalformedSealed)
	}
	plaintext, err := k.atRestAEAD().Open(nil, iv, append(ct, tag...), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	return plaintext, nil
}
