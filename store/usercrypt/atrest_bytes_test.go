package usercrypt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// A value sealed as bytes is the hex form's three parts without hex or
// colons: the outbox migration converts one to the other by unhex.
func TestSealAtRestBytesIsTheHexFormUnhexed(t *testing.T) {
	ring, err := NewKeyring(GenerateMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	k := ring.UserKey("alice")
	plaintext := []byte(`{"message":"hello"}`)
	sealed := k.SealAtRestBytes(plaintext)
	if got, err := k.OpenAtRestBytes(sealed); err != nil || !bytes.Equal(got, plaintext) {
		t.Fatalf("OpenAtRestBytes = %q, %v", got, err)
	}
	asText := hex.EncodeToString(sealed[:16]) + ":" + hex.EncodeToString(sealed[16:32]) + ":" + hex.EncodeToString(sealed[32:])
	if got, err := k.OpenAtRest(asText); err != nil || !bytes.Equal(got, plaintext) {
		t.Errorf("the bytes as hex text open to %q, %v", got, err)
	}
	fromText, err := hex.DecodeString(strings.ReplaceAll(k.SealAtRest(plaintext), ":", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.OpenAtRestBytes(fromText); err != nil || !bytes.Equal(got, plaintext) {
		t.Errorf("hex text unhexed opens to %q, %v", got, err)
	}
	if _, err := k.OpenAtRestBytes(sealed[:31]); !errors.Is(err, ErrMalformedSealed) {
		t.Errorf("a short value: %v, want ErrMalformedSealed", err)
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	if _, err := k.OpenAtRestBytes(tampered); !errors.Is(err, ErrDecrypt) {
		t.Errorf("a tampered value: %v, want ErrDecrypt", err)
	}
}

func FuzzOpenAtRestBytes(f *testing.F) {
	ring, err := NewKeyring(GenerateMasterKey())
	if err != nil {
		f.Fatal(err)
	}
	k := ring.UserKey("alice")
	f.Add(k.SealAtRestBytes([]byte(`{}`)))
	f.Add([]byte{})
	f.Add(make([]byte, 32))
	f.Fuzz(func(t *testing.T, sealed []byte) {
		if _, err := k.OpenAtRestBytes(sealed); err != nil && !errors.Is(err, ErrMalformedSealed) && !errors.Is(err, ErrDecrypt) {
			t.Errorf("unexpected error %v", err)
		}
	})
}
