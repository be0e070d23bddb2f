package usercrypt

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

var masterA = strings.Repeat("a", 64)

func TestUserKeyVectors(t *testing.T) {
	tests := []struct {
		source, master, userID, want string
	}{
		{"server contract §2.1", masterA, "550e8400-e29b-41d4-a716-446655440000", "b215834307fb91ecea33c56e4dd9e847276828ce9ffff480ee32c947614a651e"},
		{"sw-and-client §2.3", masterA, "123e4567-e89b-42d3-a456-426614174000", "669ddd456e1c07d092181fd639f9da7f652b76aa463dfbc5e8d4c59877364a48"},
	}
	for _, tt := range tests {
		t.Run(tt.source, func(t *testing.T) {
			ring, err := NewKeyring(tt.master)
			if err != nil {
				t.Fatal(err)
			}
			if got := ring.UserKey(tt.userID).Hex(); got != tt.want {
				t.Errorf("UserKey(%q) = %s, want %s", tt.userID, got, tt.want)
			}
		})
	}
}

func TestUserKeyUsesRawUserID(t *testing.T) {
	ring, err := NewKeyring(masterA)
	if err != nil {
		t.Fatal(err)
	}
	lower := ring.UserKey("550e8400-e29b-41d4-a716-446655440000")
	upper := ring.UserKey("550E8400-E29B-41D4-A716-446655440000")
	if lower == upper {
		t.Error("upper- and lower-case spellings of a user id derived the same key; upstream treats them as different users")
	}
}

func TestNewKeyringValidates(t *testing.T) {
	tests := []struct {
		name, key string
		ok        bool
	}{
		{"lowercase hex", masterA, true},
		{"uppercase hex", strings.Repeat("AB", 32), true},
		{"empty", "", false},
		{"63 characters", masterA[:63], false},
		{"65 characters", masterA + "a", false},
		{"not hex", strings.Repeat("g", 64), false},
		{"32 raw bytes as text", strings.Repeat("k", 32), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ring, err := NewKeyring(tt.key)
			if tt.ok && (err != nil || ring == nil) {
				t.Fatalf("NewKeyring: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidMasterKey) {
				t.Fatalf("NewKeyring error = %v, want ErrInvalidMasterKey", err)
			}
			if err != nil && tt.key != "" && strings.Contains(err.Error(), tt.key) {
				t.Errorf("error %q repeats the key", err)
			}
		})
	}
}

func TestGenerateMasterKey(t *testing.T) {
	a, b := GenerateMasterKey(), GenerateMasterKey()
	if err := ValidateMasterKey(a); err != nil {
		t.Fatal(err)
	}
	if a != strings.ToLower(a) {
		t.Errorf("generated key %q is not lowercase", a)
	}
	if a == b {
		t.Error("two generated master keys are equal")
	}
}

func TestKeysAreNeverPrinted(t *testing.T) {
	ring, err := NewKeyring(masterA)
	if err != nil {
		t.Fatal(err)
	}
	key := ring.UserKey("550e8400-e29b-41d4-a716-446655440000")
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("k", "key", key, "ring", ring)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("k", "key", key, "ring", ring)
	out := logs.String() + fmt.Sprintf("%v %+v %s %x %v %+v", key, key, key, key, ring, ring)
	for _, secret := range []string{key.Hex(), masterA} {
		if strings.Contains(out, secret) {
			t.Fatalf("formatted output contains key material: %s", out)
		}
	}
	if !strings.Contains(out, "redacted") {
		t.Fatalf("formatted output does not say the key was redacted: %s", out)
	}
}

// A user's key comes back with the AEAD made the first time, shared by
// concurrent seals and opens; the keys kept stay bounded whatever user ids
// callers send.
func TestKeyringKeepsARecentUsersAEADBounded(t *testing.T) {
	r, err := NewKeyring(masterA)
	if err != nil {
		t.Fatal(err)
	}
	first, again := r.UserKey("alice"), r.UserKey("alice")
	if first.atRest == nil || first.atRest != again.atRest || first.Hex() != again.Hex() {
		t.Fatal("UserKey made a new AEAD for a user it had seen")
	}
	done := make(chan error)
	for i := range 8 {
		go func() {
			plaintext := []byte(fmt.Sprintf(`{"n":%d}`, i))
			got, err := first.OpenAtRest(again.SealAtRest(plaintext))
			if err == nil && !bytes.Equal(got, plaintext) {
				err = fmt.Errorf("opened %s, want %s", got, plaintext)
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	for i := range maxCachedKeys + 10 {
		r.UserKey(fmt.Sprintf("user-%d", i))
	}
	if n := len(r.keys); n > maxCachedKeys {
		t.Errorf("the keyring keeps %d keys, bound %d", n, maxCachedKeys)
	}
	if got, err := (Key{b: first.b}).OpenAtRest(first.SealAtRest([]byte("x"))); err != nil || string(got) != "x" {
		t.Errorf("a Key without its AEAD opened %q, %v", got, err)
	}
}
