package usercrypt

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// sealInPieces seals plaintext through a SealStream, cut where cuts say.
func sealInPieces(t testing.TB, key Key, iv, plaintext []byte, cuts []int) (ciphertext, tag []byte) {
	t.Helper()
	s, err := key.SealStream(iv)
	if err != nil {
		t.Fatal(err)
	}
	rest := plaintext
	for _, c := range cuts {
		c = min(c, len(rest))
		if ciphertext, err = s.Seal(ciphertext, rest[:c]); err != nil {
			t.Fatal(err)
		}
		rest = rest[c:]
	}
	if ciphertext, err = s.Seal(ciphertext, rest); err != nil {
		t.Fatal(err)
	}
	return ciphertext, s.Tag()
}

// checkStreamMatchesSeal holds a streamed seal to crypto/cipher's GCM (Seal)
// byte for byte.
func checkStreamMatchesSeal(t testing.TB, key Key, iv, plaintext []byte, cuts []int) {
	t.Helper()
	ct, tag := sealInPieces(t, key, iv, plaintext, cuts)
	want := key.sealWithIV(iv, plaintext)
	enc := base64.StdEncoding
	if got := enc.EncodeToString(ct); got != want.EncryptedData {
		t.Fatalf("%d bytes cut at %v: ciphertext differs from Seal's", len(plaintext), cuts)
	}
	if got := enc.EncodeToString(tag); got != want.AuthTag {
		t.Fatalf("%d bytes cut at %v: tag %s, Seal's %s", len(plaintext), cuts, got, want.AuthTag)
	}
	opened, err := key.Open(Envelope{IV: want.IV, AuthTag: enc.EncodeToString(tag), EncryptedData: enc.EncodeToString(ct)})
	if err != nil || !bytes.Equal(opened, plaintext) {
		t.Fatalf("the streamed envelope does not open: %v", err)
	}
}

func TestSealStreamIsSeal(t *testing.T) {
	key := vectorKey(t, envelopeVectors[0].userID)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 4096, 70_001} {
		plaintext := make([]byte, n)
		for i := range plaintext {
			plaintext[i] = byte(rng.UintN(256))
		}
		iv := NewEnvelopeIV()
		checkStreamMatchesSeal(t, key, iv, plaintext, nil)
		checkStreamMatchesSeal(t, key, iv, plaintext, []int{1, 1, 14, 3, 29, 1000})
		checkStreamMatchesSeal(t, key, iv, plaintext, []int{int(rng.UintN(uint(n) + 1)), int(rng.UintN(uint(n) + 1))})
	}
}

// The known-answer vectors of the standard, streamed a byte at a time.
func TestSealStreamVectors(t *testing.T) {
	for _, v := range envelopeVectors {
		key := vectorKey(t, v.userID)
		cuts := make([]int, len(v.plaintext))
		for i := range cuts {
			cuts[i] = 1
		}
		checkStreamMatchesSeal(t, key, mustHex(t, v.ivHex), []byte(v.plaintext), cuts)
	}
}

func TestSealStreamRefusesABadIV(t *testing.T) {
	key := vectorKey(t, envelopeVectors[0].userID)
	if _, err := key.SealStream(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte IV was taken")
	}
}

func FuzzSealStream(f *testing.F) {
	f.Add([]byte(`{"hello":"world","n":1}`), uint16(3), uint16(7))
	f.Add(make([]byte, 33), uint16(16), uint16(0))
	f.Add([]byte{}, uint16(0), uint16(0))
	key := vectorKey(f, envelopeVectors[1].userID)
	iv := mustHex(f, envelopeVectors[1].ivHex)
	f.Fuzz(func(t *testing.T, plaintext []byte, cut1, cut2 uint16) {
		checkStreamMatchesSeal(t, key, iv, plaintext, []int{int(cut1), int(cut2)})
	})
}
