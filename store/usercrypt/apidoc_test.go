package usercrypt

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The test vector docs/api.md gives client developers is what amsg
// computes: the user key, the envelope and the at-rest string.
func TestAPIDocTestVector(t *testing.T) {
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(doc), "## Test vector")
	_, block, _ = strings.Cut(block, "```text\n")
	block, _, _ = strings.Cut(block, "```")
	v := map[string]string{}
	for line := range strings.Lines(block) {
		name, value, _ := strings.Cut(line, ":")
		v[name] = strings.TrimSpace(value)
	}
	ring, err := NewKeyring(v["masterKey"])
	if err != nil {
		t.Fatalf("the doc's vector %v: %v", v, err)
	}
	key := ring.UserKey(v["X-User-Id"])
	if key.Hex() != v["userKey"] {
		t.Errorf("userKey %s, the doc says %s", key.Hex(), v["userKey"])
	}
	env := key.sealWithIV(mustHex(t, v["iv (hex)"]), []byte(v["plaintext"]))
	if want := (Envelope{IV: v["iv"], AuthTag: v["authTag"], EncryptedData: v["encryptedData"]}); env != want {
		t.Errorf("envelope %+v, the doc says %+v", env, want)
	}
	body, _ := json.Marshal(env)
	if plaintext, err := key.OpenRequest(body); err != nil || string(plaintext) != v["plaintext"] {
		t.Errorf("opening the doc's envelope: %q, %v", plaintext, err)
	}
	const atRest = "000102030405060708090a0b0c0d0e0f:06c6ce18d2688a9fda3e5dc8eee5b42b:3955f782bd21"
	if !strings.Contains(string(doc), "`"+atRest+"`") || key.sealAtRestWithIV(mustHex(t, "000102030405060708090a0b0c0d0e0f"), []byte("secret")) != atRest {
		t.Errorf("the doc's at-rest example is not %s", atRest)
	}
}
