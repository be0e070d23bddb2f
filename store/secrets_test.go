package store_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
	"amsg/store/usercrypt"
)

// generator is a GenerateVAPID that counts its calls.
type generator struct{ calls int }

func (g *generator) generate() (string, string, error) {
	g.calls++
	return storetest.GenerateVAPID()
}

func vapidPair(t *testing.T) (public, private string) {
	t.Helper()
	public, private, err := storetest.GenerateVAPID()
	if err != nil {
		t.Fatal(err)
	}
	return public, private
}

func openStore(t *testing.T, cfg store.Config) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSecretsGeneratedOnceThenKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	gen := &generator{}
	first := openStore(t, store.Config{Path: path, GenerateVAPID: gen.generate}).Secrets()
	if err := usercrypt.ValidateMasterKey(first.MasterKey); err != nil || first.MasterKey != strings.ToLower(first.MasterKey) {
		t.Errorf("generated master key %q is not 64 lowercase hex: %v", first.MasterKey, err)
	}
	if pub, err := base64.RawURLEncoding.DecodeString(first.VAPIDPublicKey); err != nil || len(pub) != 65 || pub[0] != 4 {
		t.Errorf("VAPID public key decodes to %d bytes, %v; want a 65-byte point starting 0x04", len(pub), err)
	}
	for range 2 {
		again := openStore(t, store.Config{Path: path, GenerateVAPID: gen.generate}).Secrets()
		if again != first {
			t.Fatalf("reopened secrets %+v differ from the first %+v", again, first)
		}
	}
	if gen.calls != 1 {
		t.Errorf("GenerateVAPID called %d times over three opens, want 1", gen.calls)
	}
	// The keyring is the stored master key's.
	st := openStore(t, store.Config{Path: path})
	ring, err := usercrypt.NewKeyring(first.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Keyring().UserKey(alice).Hex(), ring.UserKey(alice).Hex(); got != want {
		t.Errorf("Keyring derives %s, want %s", got, want)
	}
}

func TestGivenVAPIDPairOverridesAndIsLoggedLoudly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	old := openStore(t, store.Config{Path: path, GenerateVAPID: storetest.GenerateVAPID}).Secrets()

	newPublic, newPrivate := vapidPair(t)
	given := store.Secrets{MasterKey: old.MasterKey, VAPIDPublicKey: newPublic, VAPIDPrivateKey: newPrivate}
	logger, logs := logBuffer()
	cfg := store.Config{Path: path, MasterKey: given.MasterKey, VAPIDPublicKey: given.VAPIDPublicKey, VAPIDPrivateKey: given.VAPIDPrivateKey, Logger: logger}
	if got := openStore(t, cfg).Secrets(); got != given {
		t.Fatalf("Secrets = %+v, want the given ones", got)
	}
	out := logs.String()
	if n := strings.Count(out, "level=ERROR"); n != 1 {
		t.Errorf("%d error lines, want 1 (the VAPID pair):\n%s", n, out)
	}
	for _, want := range []string{"VAPID key pair changed", "orphaned"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, sec := range []store.Secrets{old, given} {
		for _, material := range []string{sec.MasterKey, sec.VAPIDPublicKey, sec.VAPIDPrivateKey} {
			if strings.Contains(out, material) || strings.Contains(out, material[:16]) {
				t.Fatalf("log contains key material:\n%s", out)
			}
		}
	}

	// Giving the stored values again is no change.
	logger, logs = logBuffer()
	if got := openStore(t, store.Config{Path: path, Logger: logger, MasterKey: given.MasterKey, VAPIDPublicKey: newPublic, VAPIDPrivateKey: newPrivate}).Secrets(); got != given {
		t.Fatalf("Secrets = %+v, want the given ones", got)
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("reopening with unchanged secrets logged an error:\n%s", logs)
	}
}

// Finding 9: a changed master key used to be accepted and made every row
// unreadable. Now Open refuses it; a given key is kept out of the database,
// which holds only its check value.
func TestMasterKeyCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	generated := openStore(t, store.Config{Path: path, GenerateVAPID: storetest.GenerateVAPID}).Secrets()
	other := strings.Repeat("c", 64)
	if _, err := store.Open(t.Context(), store.Config{Path: path, MasterKey: other}); !errors.Is(err, store.ErrMasterKeyMismatch) || !errors.Is(err, store.ErrInvalidSecret) {
		t.Fatalf("Open with another master key = %v, want ErrMasterKeyMismatch", err)
	}
	if got := openStore(t, store.Config{Path: path, MasterKey: generated.MasterKey}).Secrets(); got != generated {
		t.Fatalf("Secrets = %+v", got)
	}
	db := rawDB(t, path)
	if n := queryInt(t, db, `SELECT count(*) FROM secrets WHERE name = 'master_key'`); n != 0 {
		t.Error("a given master key is stored in the database")
	}
	if n := queryInt(t, db, `SELECT count(*) FROM secrets WHERE name = 'master_key_check' AND value != ''`); n != 1 {
		t.Error("no check value stored")
	}
	if _, err := store.Open(t.Context(), store.Config{Path: path}); !errors.Is(err, store.ErrMasterKeyRequired) {
		t.Fatalf("Open without the key = %v, want ErrMasterKeyRequired", err)
	}
	if _, err := store.Open(t.Context(), store.Config{Path: path, MasterKey: other}); !errors.Is(err, store.ErrMasterKeyMismatch) {
		t.Fatalf("Open with another key after = %v", err)
	}
}

// fingerprintOf reads the master-key fingerprint the way operators see it:
// through Secrets' LogValue.
func fingerprintOf(t *testing.T, sec store.Secrets) string {
	t.Helper()
	v := sec.LogValue()
	for _, a := range v.Group() {
		if a.Key == "master" {
			return a.Value.String()
		}
	}
	t.Fatal("Secrets.LogValue has no master fingerprint")
	return ""
}

func TestSecretsNeverPrinted(t *testing.T) {
	public, private := vapidPair(t)
	sec := store.Secrets{MasterKey: strings.Repeat("d", 64), VAPIDPublicKey: public, VAPIDPrivateKey: private}
	logger, logs := logBuffer()
	logger.Info("secrets", "secrets", sec)
	slog.New(slog.NewJSONHandler(logs, nil)).Info("secrets", "secrets", sec)
	out := logs.String() + fmt.Sprint(sec) + fmt.Sprintf("%+v %s", sec, sec)
	for _, material := range []string{sec.MasterKey, public, private} {
		if strings.Contains(out, material) {
			t.Fatalf("printed secrets contain key material: %s", out)
		}
	}
	if !strings.Contains(out, fingerprintOf(t, sec)) {
		t.Errorf("printed secrets lack the fingerprint: %s", out)
	}
}

func TestOpenRejectsBadSecrets(t *testing.T) {
	public, private := vapidPair(t)
	otherPublic, _ := vapidPair(t)
	pub, _ := base64.RawURLEncoding.DecodeString(public)
	priv, _ := base64.RawURLEncoding.DecodeString(private)
	b64 := base64.RawURLEncoding.EncodeToString
	offCurve := append([]byte{4}, make([]byte, 64)...)
	offCurve[64] = 1
	compressed := append([]byte{2}, pub[1:33]...)
	tests := []struct {
		name             string
		master, pub, prv string
		generate         func() (string, string, error)
		want             string
	}{
		{"short master key", strings.Repeat("a", 63), "", "", storetest.GenerateVAPID, "64 hex"},
		{"master key not hex", strings.Repeat("z", 64), "", "", storetest.GenerateVAPID, "64 hex"},
		{"public without private", "", public, "", nil, "given together"},
		{"private without public", "", "", private, nil, "given together"},
		{"public not base64url", "", "+" + public[1:], private, nil, "not base64url"},
		{"public 33-byte compressed", "", b64(compressed), private, nil, "65-byte uncompressed"},
		{"public not on the curve", "", b64(offCurve), private, nil, "not a P-256 point"},
		{"private 31 bytes", "", public, b64(priv[:31]), nil, "32 bytes"},
		{"private zero", "", public, b64(make([]byte, 32)), nil, "not a P-256 scalar"},
		{"pair mismatch", "", otherPublic, private, nil, "does not belong"},
		{"generator returns garbage", "", "", "", func() (string, string, error) { return "x", "y", nil }, "VAPID public key"},
		{"generator fails", "", "", "", func() (string, string, error) { return "", "", errors.New("no entropy") }, "no entropy"},
		{"no generator and nothing stored", "", "", "", nil, "no VAPID key pair"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := store.Open(t.Context(), store.Config{
				Path: filepath.Join(t.TempDir(), "amsg.db"), MasterKey: tt.master,
				VAPIDPublicKey: tt.pub, VAPIDPrivateKey: tt.prv, GenerateVAPID: tt.generate,
			})
			if err == nil {
				st.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open error %q, want it to say %q", err, tt.want)
			}
			for _, material := range []string{tt.master, tt.pub, tt.prv} {
				if material != "" && strings.Contains(err.Error(), material) {
					t.Fatalf("error %q contains key material", err)
				}
			}
		})
	}
}

func TestOpenRejectsCorruptStoredSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	openStore(t, store.Config{Path: path, GenerateVAPID: storetest.GenerateVAPID})
	if _, err := rawDB(t, path).Exec("UPDATE secrets SET value = 'xyz' WHERE name = 'master_key'"); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(t.Context(), store.Config{Path: path})
	if !errors.Is(err, store.ErrInvalidSecret) {
		t.Fatalf("Open over a corrupt stored master key = %v, want ErrInvalidSecret", err)
	}
}
