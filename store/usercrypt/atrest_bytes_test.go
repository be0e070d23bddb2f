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
	ring := freshKeyring(t)
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

// A build from before the outbox's payload became bytes, still running
// after the migration, stores its hex text as the text's bytes: they open.
func TestOpenAtRestBytesOpensTheHexTextOfAnEarlierBuild(t *testing.T) {
	ring := freshKeyring(t)
	k := ring.UserKey("alice")
	plaintext := []byte(`{"message":"written by an earlier build"}`)
	if got, err := k.OpenAtRestBytes([]byte(k.SealAtRest(plaintext))); err != nil || !bytes.Equal(got, plaintext) {
		t.Fatalf("hex text as bytes opens to %q, %v; want the plaintext", got, err)
	}
	other := ring.UserKey("bob").SealAtRest(plaintext)
	if _, err := k.OpenAtRestBytes([]byte(other)); !errors.Is(err, ErrDecrypt) {
		t.Errorf("another user's hex text: %v, want ErrDecrypt", err)
	}
}

// freshKeyring is a keyring under a new master key.
func freshKeyring(t testing.TB) *Keyring {
	t.Helper()
	ring, err := NewKeyring(GenerateMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

func FuzzOpenAtRestBytes(f *testing.F) {
	ring := freshKeyring(f)
	k := ring.UserKey("alice")
	f.Add(k.SealAtRestBytes([]byte(`{}`)))
	f.Add([]byte{})
	f.Add(make([]byte, 32))
	f.Add([]byte(k.SealAtRest([]byte(`{}`))))
	f.Add([]byte("00:11:22"))
	f.Fuzz(func(t *testing.T, sealed []byte) {
		if _, err := k.OpenAtRestBytes(sealed); err != nil && !errors.Is(err, ErrMalformedSealed) && !errors.Is(err, ErrDecrypt) {
			t.Errorf("unexpected error %v", err)
		}
	})
}
