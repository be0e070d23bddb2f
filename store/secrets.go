package store

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"amsg/store/usercrypt"
)

// Rows of the secrets table.
const (
	secretMasterKey       = "master_key"
	secretMasterKeyCheck  = "master_key_check"
	secretVAPIDPublicKey  = "vapid_public_key"
	secretVAPIDPrivateKey = "vapid_private_key"
)

// ErrInvalidSecret reports a master key or VAPID key that cannot be used,
// given or stored. Open's error wraps it.
var ErrInvalidSecret = errors.New("invalid secret")

// Errors of the master key check; both match ErrInvalidSecret too.
var (
	// ErrMasterKeyMismatch: the given master key is not the one the stored
	// data was sealed with. Starting anyway would make every row unreadable.
	ErrMasterKeyMismatch = fmt.Errorf("%w: the master key is not the one this database was sealed with (amsg rekey changes it)", ErrInvalidSecret)
	// ErrMasterKeyRequired: the database holds only the check value of its
	// master key, which must be given.
	ErrMasterKeyRequired = fmt.Errorf("%w: this database keeps only its master key's check value; give the key (AMSG_MASTER_KEY or AMSG_MASTER_KEY_FILE)", ErrInvalidSecret)
)

// masterKeyCheck is the check value stored for a master key: an HMAC under
// the key of a fixed label, which tells whether a key is the right one
// without revealing it.
func masterKeyCheck(masterKey string) string {
	m := hmac.New(sha256.New, []byte(masterKey))
	m.Write([]byte("amsg master key check v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// resolveMasterKey picks the master key: the given one, which must pass the
// stored check, else the stored one, else a new one. stored is the secrets
// table.
func resolveMasterKey(given string, stored map[string]string) (key string, generated bool, err error) {
	old, check := stored[secretMasterKey], stored[secretMasterKeyCheck]
	switch {
	case given != "":
		if check != "" && !hmac.Equal([]byte(check), []byte(masterKeyCheck(given))) || check == "" && old != "" && old != given {
			return "", false, ErrMasterKeyMismatch
		}
		return given, false, nil
	case old != "":
		if check != "" && !hmac.Equal([]byte(check), []byte(masterKeyCheck(old))) {
			return "", false, fmt.Errorf("%w: the stored master key does not match its check value", ErrInvalidSecret)
		}
		return old, false, nil
	case check != "":
		return "", false, ErrMasterKeyRequired
	}
	return usercrypt.GenerateMasterKey(), true, nil
}

// Secrets are the server's long-lived keys, as Open resolved them.
type Secrets struct {
	MasterKey       string // 64 hex characters
	VAPIDPublicKey  string // base64url, 65-byte uncompressed P-256 point
	VAPIDPrivateKey string // base64url, 32 bytes
}

// String prints fingerprints only, so a logged Secrets leaks nothing.
func (sec Secrets) String() string {
	return fmt.Sprintf("store.Secrets{master:%s vapid:%s}", fingerprint(sec.MasterKey), fingerprint(sec.VAPIDPublicKey))
}

// LogValue prints fingerprints only.
func (sec Secrets) LogValue() slog.Value {
	return slog.GroupValue(slog.String("master", fingerprint(sec.MasterKey)), slog.String("vapid", fingerprint(sec.VAPIDPublicKey)))
}

// Secrets returns the keys Open loaded, generated or was given.
func (s *Store) Secrets() Secrets { return s.secrets }

// MasterKeyStored reports whether the database keeps the master key itself
// (generated, or given with StoreMasterKey) rather than only its check
// value, so the server starts from the database alone.
func (s *Store) MasterKeyStored() bool { return s.masterKeyStored }

// Keyring derives user keys from the master key.
func (s *Store) Keyring() *usercrypt.Keyring { return s.keyring }

// fingerprint identifies a secret in logs without revealing it: the first
// 4 bytes of its SHA-256, in hex.
func fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:4])
}

// validateGivenSecrets checks the keys an operator gave before anything is
// opened, so a typo fails fast with a clear message.
func validateGivenSecrets(cfg Config) error {
	if cfg.MasterKey != "" {
		if err := usercrypt.ValidateMasterKey(cfg.MasterKey); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidSecret, err)
		}
	}
	if (cfg.VAPIDPublicKey == "") != (cfg.VAPIDPrivateKey == "") {
		return fmt.Errorf("%w: the VAPID public and private keys must be given together", ErrInvalidSecret)
	}
	if cfg.VAPIDPublicKey != "" {
		return validateVAPID(cfg.VAPIDPublicKey, cfg.VAPIDPrivateKey)
	}
	return nil
}

// validateVAPID checks that public is the base64url uncompressed P-256 point
// of the base64url 32-byte private key.
func validateVAPID(public, private string) error {
	pub, err := decodeBase64URL(public)
	if err != nil {
		return fmt.Errorf("%w: VAPID public key is not base64url: %w", ErrInvalidSecret, err)
	}
	if len(pub) != 65 || pub[0] != 0x04 {
		return fmt.Errorf("%w: VAPID public key must be a 65-byte uncompressed P-256 point starting 0x04 (got %d bytes)", ErrInvalidSecret, len(pub))
	}
	if _, err := ecdh.P256().NewPublicKey(pub); err != nil {
		return fmt.Errorf("%w: VAPID public key is not a P-256 point", ErrInvalidSecret)
	}
	priv, err := decodeBase64URL(private)
	if err != nil {
		return fmt.Errorf("%w: VAPID private key is not base64url", ErrInvalidSecret)
	}
	if len(priv) != 32 {
		return fmt.Errorf("%w: VAPID private key must be 32 bytes (got %d)", ErrInvalidSecret, len(priv))
	}
	key, err := ecdh.P256().NewPrivateKey(priv)
	if err != nil {
		return fmt.Errorf("%w: VAPID private key is not a P-256 scalar", ErrInvalidSecret)
	}
	if !bytes.Equal(key.PublicKey().Bytes(), pub) {
		return fmt.Errorf("%w: the VAPID public key does not belong to the private key", ErrInvalidSecret)
	}
	return nil
}

// decodeBase64URL accepts base64url with or without padding.
func decodeBase64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// loadSecrets resolves each secret (given, else stored, else generated),
// persists what changed and, once that is committed, logs changes that break
// existing data.
func (s *Store) loadSecrets(ctx context.Context, cfg Config) error {
	var notices []func()
	err := s.write(ctx, func(tx *sql.Tx) error {
		notices = nil // a rerun of a transaction that lost a conflict
		stored, err := s.readSecrets(ctx, tx)
		if err != nil {
			return err
		}
		sec := Secrets{MasterKey: cfg.MasterKey, VAPIDPublicKey: cfg.VAPIDPublicKey, VAPIDPrivateKey: cfg.VAPIDPrivateKey}

		var generated bool
		if sec.MasterKey, generated, err = resolveMasterKey(cfg.MasterKey, stored); err != nil {
			return err
		}
		if generated {
			notices = append(notices, func() {
				s.log.Info("store: generated a master key", "fingerprint", fingerprint(sec.MasterKey))
			})
		}

		oldPublic, oldPrivate := stored[secretVAPIDPublicKey], stored[secretVAPIDPrivateKey]
		switch {
		case sec.VAPIDPublicKey == "" && oldPublic != "":
			sec.VAPIDPublicKey, sec.VAPIDPrivateKey = oldPublic, oldPrivate
		case sec.VAPIDPublicKey == "":
			if cfg.GenerateVAPID == nil {
				return errors.New("no VAPID key pair given or stored, and no GenerateVAPID to make one")
			}
			if sec.VAPIDPublicKey, sec.VAPIDPrivateKey, err = cfg.GenerateVAPID(); err != nil {
				return fmt.Errorf("generate VAPID key pair: %w", err)
			}
			notices = append(notices, func() {
				s.log.Info("store: generated a VAPID key pair", "publicFingerprint", fingerprint(sec.VAPIDPublicKey))
			})
		case oldPublic != "" && (oldPublic != sec.VAPIDPublicKey || oldPrivate != sec.VAPIDPrivateKey):
			notices = append(notices, func() {
				s.log.Error("store: the VAPID key pair changed; every existing browser push subscription is orphaned and pushes to it fail until the browser subscribes again",
					"old_public_fingerprint", fingerprint(oldPublic), "new_public_fingerprint", fingerprint(sec.VAPIDPublicKey))
			})
		}

		// Stored or generated values get the same checks as given ones.
		if err := usercrypt.ValidateMasterKey(sec.MasterKey); err != nil {
			return fmt.Errorf("stored master key: %w: %w", ErrInvalidSecret, err)
		}
		if err := validateVAPID(sec.VAPIDPublicKey, sec.VAPIDPrivateKey); err != nil {
			return fmt.Errorf("stored or generated VAPID key pair: %w", err)
		}
		// A master key given from outside stays outside, unless told
		// otherwise: the database keeps only its check value.
		storedKey := sec.MasterKey
		if cfg.MasterKey != "" && !cfg.StoreMasterKey {
			storedKey = ""
		}
		if err := s.putSecrets(ctx, tx, stored, map[string]string{
			secretMasterKey:       storedKey,
			secretMasterKeyCheck:  masterKeyCheck(sec.MasterKey),
			secretVAPIDPublicKey:  sec.VAPIDPublicKey,
			secretVAPIDPrivateKey: sec.VAPIDPrivateKey,
		}, millis(s.now())); err != nil {
			return err
		}
		s.secrets, s.masterKeyStored = sec, storedKey != ""
		return nil
	})
	if err != nil {
		return err
	}
	for _, notice := range notices {
		notice()
	}
	s.keyring, err = usercrypt.NewKeyring(s.secrets.MasterKey)
	return err
}

// putSecrets writes the values that differ from stored; an empty value
// deletes its row.
func (s *Store) putSecrets(ctx context.Context, tx *sql.Tx, stored, values map[string]string, now int64) error {
	for name, value := range values {
		var err error
		switch {
		case stored[name] == value:
		case value == "":
			_, err = s.txExec(ctx, tx, `DELETE FROM secrets WHERE name = ?`, name)
		default:
			_, err = s.txExec(ctx, tx, `INSERT INTO secrets (name, value, updated_at) VALUES (?, ?, ?)
				ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, name, value, now)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) readSecrets(ctx context.Context, tx *sql.Tx) (map[string]string, error) {
	rows, err := s.txQuery(ctx, tx, `SELECT name, value FROM secrets`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	stored := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		stored[name] = value
	}
	return stored, rows.Err()
}
