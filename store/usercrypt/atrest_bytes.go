package usercrypt

import (
	"bytes"
	"crypto/rand"
	"fmt"
)

// SealAtRestBytes is SealAtRest's value as bytes, iv||tag||ciphertext: the
// same three parts without their hex and colons, half the size, for a
// column that holds bytes (the outbox's payload). It allocates once.
func (k Key) SealAtRestBytes(plaintext []byte) []byte {
	const head = atRestIVLen + atRestTagLen
	out := make([]byte, head+len(plaintext)+atRestTagLen)
	iv := out[:atRestIVLen]
	_, _ = rand.Read(iv) // crypto/rand.Read never fails; it crashes the program instead
	// Seal writes ciphertext||tag after the room for the tag, then the tag
	// moves into that room.
	k.atRestAEAD().Seal(out[head:head], iv, plaintext, nil)
	copy(out[atRestIVLen:head], out[head+len(plaintext):])
	return out[:head+len(plaintext)]
}

// OpenAtRestBytes decrypts a value SealAtRestBytes produced (or the
// migration converted from SealAtRest's hex), or SealAtRest's hex text
// stored as bytes: what a build from before the conversion, still running
// when it ran, writes into the column (docs/upgrading.md). A value too
// short to hold an IV and a tag is ErrMalformedSealed; a wrong key or
// tampered value is ErrDecrypt.
func (k Key) OpenAtRestBytes(sealed []byte) ([]byte, error) {
	plaintext, err := k.openAtRestBytes(sealed)
	if err != nil && bytes.Count(sealed, []byte(":")) == 2 {
		if fromText, textErr := k.OpenAtRest(string(sealed)); textErr == nil {
			return fromText, nil
		}
	}
	return plaintext, err
}

func (k Key) openAtRestBytes(sealed []byte) ([]byte, error) {
	const head = atRestIVLen + atRestTagLen
	if len(sealed) < head {
		return nil, fmt.Errorf("%w: %d bytes, under an IV and a tag", ErrMalformedSealed, len(sealed))
	}
	ctTag := make([]byte, 0, len(sealed)-atRestIVLen)
	ctTag = append(append(ctTag, sealed[head:]...), sealed[atRestIVLen:head]...)
	plaintext, err := k.atRestAEAD().Open(ctTag[:0], sealed[:atRestIVLen], ctTag, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	return plaintext, nil
}
