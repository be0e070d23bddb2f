package usercrypt

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

const (
	atRestVectorUser   = "550e8400-e29b-41d4-a716-446655440000"
	atRestVectorSealed = "000102030405060708090a0b0c0d0e0f:1c66c8bf749e4f96c9bb59bdc468401f:b1ebd27c0847"
)

var atRestShape = regexp.MustCompile(`^[0-9a-f]{32}:[0-9a-f]{32}:([0-9a-f]{2})*$`)

func TestAtRestVector(t *testing.T) {
	key := vectorKey(t, atRestVectorUser)
	if got := key.sealAtRestWithIV(mustHex(t, "000102030405060708090a0b0c0d0e0f"), []byte("secret")); got != atRestVectorSealed {
		t.Errorf("sealed %s, want %s", got, atRestVectorSealed)
	}
	for _, sealed := range []string{atRestVectorSealed, strings.ToUpper(atRestVectorSealed)} {
		got, err := key.OpenAtRest(sealed)
		if err != nil || string(got) != "secret" {
			t.Errorf("OpenAtRest(%s) = %q, %v; want secret", sealed, got, err)
		}
	}
}

func TestAtRestRoundTrip(t *testing.T) {
	key := vectorKey(t, atRestVectorUser)
	for _, plaintext := range []string{"", "x", `{"endpoint":"https://push.example/abc"}`, strings.Repeat("é", 1000)} {
		sealed := key.SealAtRest([]byte(plaintext))
		if !atRestShape.MatchString(sealed) {
			t.Fatalf("sealed %q is not hex(iv16):hex(tag16):hex(ct)", sealed)
		}
		if plaintext == "" && !strings.HasSuffix(sealed, ":") {
			t.Errorf("empty plaintext sealed to %q, want an empty third part", sealed)
		}
		got, err := key.OpenAtRest(sealed)
		if err != nil || string(got) != plaintext {
			t.Fatalf("OpenAtRest = %q, %v; want %q", got, err, plaintext)
		}
	}
	if a, b := key.SealAtRest([]byte("x")), key.SealAtRest([]byte("x")); a == b {
		t.Error("two seals of the same plaintext are equal; IVs must be fresh")
	}
}

func TestOpenAtRestFailures(t *testing.T) {
	key := vectorKey(t, atRestVectorUser)
	iv, tag, ct := "000102030405060708090a0b0c0d0e0f", "1c66c8bf749e4f96c9bb59bdc468401f", "b1ebd27c0847"
	tests := []struct {
		name, sealed string
		key          Key
		want         error
	}{
		{"empty", "", key, ErrMalformedSealed},
		{"two parts", iv + ":" + tag, key, ErrMalformedSealed},
		{"four parts", atRestVectorSealed + ":00", key, ErrMalformedSealed},
		{"short iv", iv[:30] + ":" + tag + ":" + ct, key, ErrMalformedSealed},
		{"12-byte iv", iv[:24] + ":" + tag + ":" + ct, key, ErrMalformedSealed},
		{"short tag", iv + ":" + tag[:24] + ":" + ct, key, ErrMalformedSealed},
		{"odd ciphertext hex", iv + ":" + tag + ":" + ct[:5], key, ErrMalformedSealed},
		{"non-hex iv", strings.Replace(atRestVectorSealed, "00", "zz", 1), key, ErrMalformedSealed},
		{"wire envelope", `{"iv":"AAECAwQFBgcICQoL","authTag":"8blz0SLrrrIB7ePzzKFirw==","encryptedData":"eu2u"}`, key, ErrMalformedSealed},
		{"wrong key", atRestVectorSealed, vectorKey(t, "other"), ErrDecrypt},
		{"tampered ciphertext", iv + ":" + tag + ":" + "b0ebd27c0847", key, ErrDecrypt},
		{"tampered tag", iv + ":" + "0c66c8bf749e4f96c9bb59bdc468401f" + ":" + ct, key, ErrDecrypt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.key.OpenAtRest(tt.sealed)
			if !errors.Is(err, tt.want) {
				t.Fatalf("OpenAtRest = %q, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func FuzzOpenAtRest(f *testing.F) {
	key := vectorKey(f, atRestVectorUser)
	f.Add(atRestVectorSealed)
	f.Add(key.SealAtRest(nil))
	f.Add("::")
	f.Add("00:00:00")
	f.Add(strings.Repeat(":", 5))
	f.Fuzz(func(t *testing.T, sealed string) {
		got, err := key.OpenAtRest(sealed)
		if err != nil {
			if !errors.Is(err, ErrMalformedSealed) && !errors.Is(err, ErrDecrypt) {
				t.Fatalf("error %v is neither ErrMalformedSealed nor ErrDecrypt", err)
			}
			return
		}
		// Only a genuine seal under key opens; sealing the result again must round-trip.
		if again, err := key.OpenAtRest(key.SealAtRest(got)); err != nil || !bytes.Equal(again, got) {
			t.Fatalf("round trip of %q = %q, %v", got, again, err)
		}
	})
}

func FuzzSealRoundTrip(f *testing.F) {
	f.Add([]byte("secret"))
	f.Add([]byte{})
	f.Add([]byte(`{"hello":"world","n":1}`))
	key := vectorKey(f, atRestVectorUser)
	f.Fuzz(func(t *testing.T, plaintext []byte) {
		if got, err := key.OpenAtRest(key.SealAtRest(plaintext)); err != nil || !bytes.Equal(got, plaintext) {
			t.Fatalf("at rest: %q, %v; want %q", got, err, plaintext)
		}
		if got, err := key.Open(key.Seal(plaintext)); err != nil || !bytes.Equal(got, plaintext) {
			t.Fatalf("envelope: %q, %v; want %q", got, err, plaintext)
		}
	})
}
