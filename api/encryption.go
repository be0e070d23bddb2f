package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"

	"amsg/push/errcode"
	"amsg/store/usercrypt"
)

// userIDPattern is the standard's X-User-Id rule: a UUID v4, any case. The
// header is used as sent (case preserved) everywhere, key derivation
// included, as upstream does.
var userIDPattern = regexp.MustCompile(`(?i)^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

var (
	errUserIDRequired      = fail(errcode.UserIDRequired)
	errInvalidUserIDFormat = fail(errcode.InvalidUserIDFormat)
	errEncryptionRequired  = fail(errcode.EncryptionRequired)
	errUnsupportedVersion  = fail(errcode.UnsupportedEncryption)
	errInvalidEnvelope     = fail(errcode.InvalidEnvelope)
	errDecryptionFailed    = fail(errcode.DecryptionFailed)
	errPlaintextNotJSON    = fail(errcode.PlaintextNotJSON)
	errPlaintextNotObject  = fail(errcode.PlaintextNotObject)
)

// requireUserID is the X-User-Id gate: present (after trimming) and a UUID v4.
func requireUserID(r *http.Request) (string, error) {
	id := strings.TrimSpace(r.Header.Get("X-User-Id"))
	switch {
	case id == "":
		return "", errUserIDRequired
	case !userIDPattern.MatchString(id):
		return "", errInvalidUserIDFormat
	}
	return id, nil
}

// requireEncryptionHeaders checks X-Payload-Encrypted: true and
// X-Encryption-Version: 1 around the user-id gate, in the standard's order.
func requireEncryptionHeaders(r *http.Request) (userID string, err error) {
	if strings.TrimSpace(r.Header.Get("X-Payload-Encrypted")) != "true" {
		return "", errEncryptionRequired
	}
	if userID, err = requireUserID(r); err != nil {
		return "", err
	}
	if strings.TrimSpace(r.Header.Get("X-Encryption-Version")) != "1" {
		return "", errUnsupportedVersion
	}
	return userID, nil
}

// decryptRequest is the encrypted-request gate of the standard's endpoints
// that take an encrypted body (push-subscription, schedule-message,
// client-state, outbox/ack): headers, then the envelope, then decryption,
// then "a JSON object", each with its own error code. The route's auth has
// already run.
func (s *Server) decryptRequest(w http.ResponseWriter, r *http.Request) (userID string, payload json.RawMessage, err error) {
	return s.decryptRequestWithin(w, r, s.cfg.MaxBodyBytes)
}

// decryptRequestWithin is decryptRequest for a route with its own body limit.
func (s *Server) decryptRequestWithin(w http.ResponseWriter, r *http.Request, maxBodyBytes int64) (userID string, payload json.RawMessage, err error) {
	if userID, err = requireEncryptionHeaders(r); err != nil {
		return "", nil, err
	}
	payload, err = s.openBody(w, r, userID, maxBodyBytes)
	return userID, payload, err
}

// openBody reads the body and opens it as an encrypted envelope of userID.
func (s *Server) openBody(w http.ResponseWriter, r *http.Request, userID string, maxBodyBytes int64) (json.RawMessage, error) {
	body, err := readBody(w, r, maxBodyBytes)
	if err != nil {
		return nil, err
	}
	payload, err := s.deps.Store.Keyring().UserKey(userID).OpenRequest(body)
	switch {
	case errors.Is(err, usercrypt.ErrMalformedEnvelope):
		return nil, errInvalidEnvelope
	case errors.Is(err, usercrypt.ErrPlaintextNotJSON):
		return nil, errPlaintextNotJSON
	case errors.Is(err, usercrypt.ErrPlaintextNotObject):
		return nil, errPlaintextNotObject
	case err != nil:
		return nil, errDecryptionFailed
	}
	if err := s.chargeUser(w, r, userID); err != nil {
		return nil, err
	}
	return payload, nil
}

// writeEncrypted writes an encrypted read response:
// {"success":true,"encrypted":true,"version":1,"data":<envelope>}, the data
// sealed with the user key. Errors are never encrypted.
func (s *Server) writeEncrypted(w http.ResponseWriter, userID string, data any) error {
	plaintext, err := marshalJSON(data)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Success   bool               `json:"success"`
		Encrypted bool               `json:"encrypted"`
		Version   int                `json:"version"`
		Data      usercrypt.Envelope `json:"data"`
	}{true, true, 1, s.deps.Store.Keyring().UserKey(userID).Seal(plaintext)})
	return nil
}

// userKeyFeature serves GET /get-user-key: the browser's copy of its user
// key, with which it encrypts requests and decrypts responses.
func (s *Server) userKeyFeature() feature {
	return feature{routes: []route{{http.MethodGet, "get-user-key", authClient, s.handleGetUserKey}}}
}

func (s *Server) handleGetUserKey(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, struct {
		UserKey string `json:"userKey"`
		Version int    `json:"version"`
	}{s.deps.Store.Keyring().UserKey(userID).Hex(), 1})
	return nil
}
