package webpush

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestGenerateVAPIDKeys(t *testing.T) {
	public, private, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := base64.RawURLEncoding.DecodeString(public)
	if err != nil || len(pub) != 65 || pub[0] != 4 {
		t.Fatalf("public key %q is not base64url of a 65-byte uncompressed point", public)
	}
	priv, err := base64.RawURLEncoding.DecodeString(private)
	if err != nil || len(priv) != 32 {
		t.Fatalf("private key is not base64url of 32 bytes")
	}
	if _, _, err := parseVAPIDKeys(public, private); err != nil {
		t.Errorf("the generated keys are not one pair: %v", err)
	}
	public2, _, err := GenerateVAPIDKeys()
	if err != nil || public2 == public {
		t.Errorf("two calls gave the same key")
	}
}

func TestParseVAPIDKeys(t *testing.T) {
	public, private, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	otherPublic, _, err := GenerateVAPIDKeys()
	if err != nil {
		t.Fatal(err)
	}
	std := func(s string) string {
		b, _ := base64.RawURLEncoding.DecodeString(s)
		return base64.StdEncoding.EncodeToString(b)
	}
	tests := []struct {
		name, public, private, wantErr string
	}{
		{"generated", public, private, ""},
		{"standard padded base64", std(public), std(private), ""},
		{"keys of two pairs", otherPublic, private, "does not belong"},
		{"swapped", private, public, "public key must be"},
		{"empty", "", "", "public key must be"},
		{"short private", public, private[:20], "private key must be"},
		{"zero scalar", public, base64.RawURLEncoding.EncodeToString(make([]byte, 32)), "not a valid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub, priv, err := parseVAPIDKeys(tt.public, tt.private)
			if tt.wantErr == "" {
				if err != nil || pub != public || priv != private {
					t.Fatalf("got %q %q %v, want the keys in unpadded base64url", pub, priv, err)
				}
				return
			}
			if !errors.Is(err, ErrVAPIDConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}

func TestNormalizeSubject(t *testing.T) {
	tests := []struct {
		in, want string // want "" means an error
	}{
		{"ops@example.org", "mailto:ops@example.org"},
		{"mailto:ops@example.org", "mailto:ops@example.org"},
		{"  MAILTO:ops@example.org ", "mailto:ops@example.org"},
		{"Mailto: ops@example.org", "mailto:ops@example.org"},
		{"https://amsg.example.org/contact", "https://amsg.example.org/contact"},
		{"HTTPS://amsg.example.org", "https://amsg.example.org"},
		{"", ""},
		{"   ", ""},
		{"http://amsg.example.org", ""},
		{"https://", ""},
		{"mailto:", ""},
		{"mailto:mailto:ops@example.org", ""},
		{"Ops <ops@example.org>", ""},
		{"not an address", ""},
	}
	for _, tt := range tests {
		got, err := NormalizeSubject(tt.in)
		if tt.want == "" {
			if err == nil || !errors.Is(err, ErrVAPIDConfig) {
				t.Errorf("NormalizeSubject(%q) = %q, %v; want an error", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeSubject(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestPlaceholderSubject(t *testing.T) {
	for sub, want := range map[string]bool{
		"mailto:ops@push-ops.net":     false,
		"mailto:admin@example.org":    true, // the compose file's default
		"mailto:ops@example.com":      true,
		"mailto:ops@mail.example.net": true,
		"mailto:ops@myexample.org":    false,
		"mailto:x@localhost":          true,
		"mailto:x@box.local":          true,
		"mailto:x@push.invalid":       true,
		"mailto:x@intranet":           true,
		"https://localhost/contact":   false, // a URL is not mailed
	} {
		if got := placeholderSubject(sub); got != want {
			t.Errorf("placeholderSubject(%q) = %v, want %v", sub, got, want)
		}
	}
}
