package usercrypt

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Known-answer vectors of the reference (computed upstream with Node crypto).
var envelopeVectors = []struct {
	source, userID, ivHex, plaintext, envelope string
}{
	{
		"server contract §2.2", "550e8400-e29b-41d4-a716-446655440000", "000102030405060708090a0b", `{"hello":"world","n":1}`,
		`{"iv":"AAECAwQFBgcICQoL","authTag":"8blz0SLrrrIB7ePzzKFirw==","encryptedData":"eu2uLc5AOuXCYWp/g/JmHjxBXzzzFrI="}`,
	},
	{
		"sw-and-client §2.3", "123e4567-e89b-42d3-a456-426614174000", "000000000000000000000000", `{"a":1}`,
		`{"iv":"AAAAAAAAAAAAAAAA","authTag":"TaEAwMLMNwKiERAL7wQkvA==","encryptedData":"2bNvBRG79g=="}`,
	},
}

func vectorKey(t testing.TB, userID string) Key {
	t.Helper()
	ring, err := NewKeyring(masterA)
	if err != nil {
		t.Fatal(err)
	}
	return ring.UserKey(userID)
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEnvelopeVectors(t *testing.T) {
	for _, v := range envelopeVectors {
		t.Run(v.source, func(t *testing.T) {
			key := vectorKey(t, v.userID)
			env := key.sealWithIV(mustHex(t, v.ivHex), []byte(v.plaintext))
			got, err := json.Marshal(env)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != v.envelope {
				t.Errorf("sealed envelope\n got %s\nwant %s", got, v.envelope)
			}
			plaintext, err := key.OpenRequest([]byte(v.envelope))
			if err != nil {
				t.Fatal(err)
			}
			if string(plaintext) != v.plaintext {
				t.Errorf("opened %s, want %s", plaintext, v.plaintext)
			}
		})
	}
}

func TestSealUsesFreshIVs(t *testing.T) {
	key := vectorKey(t, "u")
	a, b := key.Seal([]byte("x")), key.Seal([]byte("x"))
	if a.IV == b.IV {
		t.Fatal("two seals used the same IV")
	}
	for _, env := range []Envelope{a, b} {
		if got, err := key.Open(env); err != nil || string(got) != "x" {
			t.Fatalf("Open = %q, %v", got, err)
		}
	}
}

// reencode rewrites a standard padded base64 field in another accepted form.
func reencode(s string, urlSafe, unpadded bool) string {
	if urlSafe {
		s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	}
	if unpadded {
		s = strings.TrimRight(s, "=")
	}
	return s
}

// stdB64 encodes b the way Seal emits base64.
func stdB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestOpen edits the §2.2 vector's envelope: the forms upstream accepts must
// open, everything else must be ErrDecrypt.
func TestOpen(t *testing.T) {
	v := envelopeVectors[0]
	key := vectorKey(t, v.userID)
	base, err := ParseEnvelope([]byte(v.envelope))
	if err != nil {
		t.Fatal(err)
	}
	fullTag, _ := decodeBase64(base.AuthTag)
	ct, _ := decodeBase64(base.EncryptedData)
	other := vectorKey(t, "someone else")
	reencodeAll := func(urlSafe, unpadded bool) func(Envelope) Envelope {
		return func(e Envelope) Envelope {
			return Envelope{reencode(e.IV, urlSafe, unpadded), reencode(e.AuthTag, urlSafe, unpadded), reencode(e.EncryptedData, urlSafe, unpadded)}
		}
	}
	tests := []struct {
		name string
		edit func(Envelope) Envelope
		key  *Key // nil: the vector's key
		ok   bool
	}{
		{"as emitted", func(e Envelope) Envelope { return e }, nil, true},
		{"url-safe padded", reencodeAll(true, false), nil, true},
		{"url-safe unpadded", reencodeAll(true, true), nil, true},
		{"standard unpadded", reencodeAll(false, true), nil, true},
		{"12-byte tag", func(e Envelope) Envelope { e.AuthTag = stdB64(fullTag[:12]); return e }, nil, true},
		{"15-byte tag", func(e Envelope) Envelope { e.AuthTag = stdB64(fullTag[:15]); return e }, nil, true},

		{"wrong key", func(e Envelope) Envelope { return e }, &other, false},
		{"tampered ciphertext", func(e Envelope) Envelope {
			c := bytes.Clone(ct)
			c[0] ^= 1
			e.EncryptedData = stdB64(c)
			return e
		}, nil, false},
		{"11-byte tag", func(e Envelope) Envelope { e.AuthTag = stdB64(fullTag[:11]); return e }, nil, false},
		{"17-byte tag", func(e Envelope) Envelope { e.AuthTag = stdB64(append(bytes.Clone(fullTag), 0)); return e }, nil, false},
		{"empty tag", func(e Envelope) Envelope { e.AuthTag = ""; return e }, nil, false},
		{"16-byte iv", func(e Envelope) Envelope { e.IV = stdB64(make([]byte, 16)); return e }, nil, false},
		{"empty iv", func(e Envelope) Envelope { e.IV = ""; return e }, nil, false},
		{"iv not base64", func(e Envelope) Envelope { e.IV = "AAEC*wQFBgcICQoL"; return e }, nil, false},
		{"mixed alphabets", func(e Envelope) Envelope { e.EncryptedData = "eu2uLc5AOuXCYWp/g_JmHjxBXzzzFrI="; return e }, nil, false},
		{"broken padding", func(e Envelope) Envelope { e.AuthTag = "8blz0SLrrrIB7ePzzKFirw="; return e }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := key
			if tt.key != nil {
				k = *tt.key
			}
			got, err := k.Open(tt.edit(base))
			if !tt.ok {
				if !errors.Is(err, ErrDecrypt) {
					t.Fatalf("Open = %q, %v; want ErrDecrypt", got, err)
				}
				return
			}
			if err != nil || string(got) != v.plaintext {
				t.Fatalf("Open = %q, %v; want %s", got, err, v.plaintext)
			}
		})
	}
}

func TestParseEnvelope(t *testing.T) {
	tests := []struct {
		name, body string
		want       *Envelope
	}{
		{"three strings", `{"iv":"a","authTag":"b","encryptedData":"c"}`, &Envelope{"a", "b", "c"}},
		{"extra keys ignored", `{"iv":"a","authTag":"b","encryptedData":"","v":1}`, &Envelope{"a", "b", ""}},
		{"whitespace", " {\n\"iv\" : \"a\", \"authTag\":\"b\",\"encryptedData\":\"c\"}\n", &Envelope{"a", "b", "c"}},
		{"escaped strings", `{"iv":"\u0061","authTag":"b","encryptedData":"c"}`, &Envelope{"a", "b", "c"}},
		{"not JSON", `iv=a`, nil},
		{"empty body", ``, nil},
		{"array", `[{"iv":"a","authTag":"b","encryptedData":"c"}]`, nil},
		{"null", `null`, nil},
		{"string", `"x"`, nil},
		{"missing iv", `{"authTag":"b","encryptedData":"c"}`, nil},
		{"number field", `{"iv":1,"authTag":"b","encryptedData":"c"}`, nil},
		{"null field", `{"iv":"a","authTag":null,"encryptedData":"c"}`, nil},
		{"object field", `{"iv":"a","authTag":"b","encryptedData":{}}`, nil},
		{"keys in other case", `{"IV":"a","AuthTag":"b","EncryptedData":"c"}`, nil},
		{"trailing garbage", `{"iv":"a","authTag":"b","encryptedData":"c"}x`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnvelope([]byte(tt.body))
			if tt.want == nil {
				if !errors.Is(err, ErrMalformedEnvelope) {
					t.Fatalf("ParseEnvelope = %+v, %v; want ErrMalformedEnvelope", got, err)
				}
				return
			}
			if err != nil || got != *tt.want {
				t.Fatalf("ParseEnvelope = %+v, %v; want %+v", got, err, *tt.want)
			}
		})
	}
}

func TestOpenRequestChecksInOrder(t *testing.T) {
	key := vectorKey(t, "550e8400-e29b-41d4-a716-446655440000")
	seal := func(plaintext string) []byte {
		body, err := json.Marshal(key.Seal([]byte(plaintext)))
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	tests := []struct {
		name    string
		body    []byte
		wantErr error
	}{
		{"object", seal(`{"subscription":{}}`), nil},
		{"object after whitespace", seal(" \n{}"), nil},
		{"malformed envelope", []byte(`{"iv":"a"}`), ErrMalformedEnvelope},
		{"undecryptable", []byte(`{"iv":"AAECAwQFBgcICQoL","authTag":"AAAAAAAAAAAAAAAAAAAAAA==","encryptedData":"AA=="}`), ErrDecrypt},
		{"plaintext not JSON", seal(`{"a":`), ErrPlaintextNotJSON},
		{"empty plaintext", seal(``), ErrPlaintextNotJSON},
		{"array", seal(`[1]`), ErrPlaintextNotObject},
		{"null", seal(`null`), ErrPlaintextNotObject},
		{"string", seal(`"{}"`), ErrPlaintextNotObject},
		{"number", seal(`1`), ErrPlaintextNotObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := key.OpenRequest(tt.body)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("OpenRequest = %q, %v; want %v", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(got, &obj); err != nil {
				t.Fatalf("OpenRequest returned %q, not an object: %v", got, err)
			}
		})
	}
}

func TestDecodeBase64(t *testing.T) {
	tests := []struct {
		in   string
		want string // hex; "!" means an error
	}{
		{"", ""},
		{"+/8=", "fbff"},
		{"+/8", "fbff"},
		{"-_8=", "fbff"},
		{"-_8", "fbff"},
		{"AAECAwQFBgcICQoL", "000102030405060708090a0b"},
		{"+_8", "!"},
		{"AA=", "!"},
		{"A", "!"},
		{"AA==AA==", "!"},
		{"A*==", "!"},
	}
	for _, tt := range tests {
		got, err := decodeBase64(tt.in)
		if tt.want == "!" {
			if err == nil {
				t.Errorf("decodeBase64(%q) = %x, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || hex.EncodeToString(got) != tt.want {
			t.Errorf("decodeBase64(%q) = %x, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseEnvelope(f *testing.F) {
	for _, v := range envelopeVectors {
		f.Add([]byte(v.envelope))
	}
	f.Add([]byte(`{"iv":1}`))
	f.Add([]byte(`{"iv":"a","authTag":"b","encryptedData":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		env, err := ParseEnvelope(body)
		if err != nil {
			if !errors.Is(err, ErrMalformedEnvelope) {
				t.Fatalf("error %v is not ErrMalformedEnvelope", err)
			}
			return
		}
		// Whatever parsed must survive our own encoding.
		again, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		if env2, err := ParseEnvelope(again); err != nil || env2 != env {
			t.Fatalf("re-parse = %+v, %v; want %+v", env2, err, env)
		}
	})
}

func FuzzOpenRequest(f *testing.F) {
	for _, v := range envelopeVectors {
		f.Add([]byte(v.envelope))
	}
	f.Add([]byte(`{"iv":"AAECAwQFBgcICQoL","authTag":"8blz0SLrrrIB","encryptedData":"eu2uLc5AOuXCYWp_g_JmHjxBXzzzFrI"}`))
	f.Add([]byte(`{"iv":"","authTag":"","encryptedData":""}`))
	key := vectorKey(f, envelopeVectors[0].userID)
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := key.OpenRequest(body)
		switch {
		case err == nil:
			if !json.Valid(got) || bytes.TrimLeft(got, " \t\r\n")[0] != '{' {
				t.Fatalf("accepted %q, which is not a JSON object", got)
			}
		case errors.Is(err, ErrMalformedEnvelope), errors.Is(err, ErrDecrypt),
			errors.Is(err, ErrPlaintextNotJSON), errors.Is(err, ErrPlaintextNotObject):
		default:
			t.Fatalf("error %v maps to no error code", err)
		}
	})
}

func FuzzDecodeBase64(f *testing.F) {
	for _, s := range []string{"", "AAECAwQFBgcICQoL", "8blz0SLrrrIB7ePzzKFirw==", "-_8", "+/8=", "+_8", "A", "AA=", "\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := decodeBase64(s)
		if err != nil {
			return
		}
		// Anything accepted decodes to the bytes its canonical form encodes.
		canonical := stdB64(got)
		again, err := decodeBase64(canonical)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("canonical %q of %q decodes to %x, %v; want %x", canonical, s, again, err, got)
		}
	})
}
