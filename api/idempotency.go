package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"amsg/push/errcode"
	"amsg/store"
)

// Idempotency keys: POST /schedule-message, POST /admin/send and POST
// /admin/broadcasts honour an Idempotency-Key header (1 to 255 printable
// ASCII characters) per user (the operator is one) for 24 hours. The first
// request with a key runs and its answer (status and body) is stored; the
// same request again gets that answer back with Idempotent-Replayed: true
// and creates nothing; another request with the key is 422
// IDEMPOTENCY_KEY_REUSED; the same request while the first still runs is
// 409 IDEMPOTENCY_KEY_IN_USE. A request is the same when its route and its
// body's plaintext are (an encrypted body is compared decrypted, so a client
// that seals its retry afresh is still the same). An answer of 5xx is not
// stored: the next request with the key runs again.

const (
	idempotencyHeader  = "Idempotency-Key"
	replayedHeader     = "Idempotent-Replayed"
	maxIdempotencyKey  = 255
	operatorScope      = "\x1foperator" // no user id has a control character
	idempotencyTimeout = 10 * time.Second
)

var (
	errInvalidIdempotencyKey = fail(errcode.InvalidIdempotencyKey)
	errIdempotencyKeyTooLong = fail(errcode.IdempotencyKeyTooLong)
	errIdempotencyKeyReused  = fail(errcode.IdempotencyKeyReused)
	errIdempotencyKeyInUse   = fail(errcode.IdempotencyKeyInUse)
)

// idempotencyScope names whose keys a request's are: the user's, or the
// operator's; "" when the request names no valid user (the handler refuses
// it).
type idempotencyScope func(r *http.Request) string

func userScope(r *http.Request) string {
	id, err := requireUserID(r)
	if err != nil {
		return ""
	}
	return id
}

func adminScope(*http.Request) string { return operatorScope }

// idempotent wraps h so that it honours the Idempotency-Key header.
func (s *Server) idempotent(scope idempotencyScope, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		values, given := r.Header[http.CanonicalHeaderKey(idempotencyHeader)]
		if !given {
			return h(w, r)
		}
		key, err := checkIdempotencyKey(values)
		if err != nil {
			return err
		}
		owner := scope(r)
		if owner == "" {
			return h(w, r)
		}
		body, err := readBody(w, r, s.cfg.MaxBodyBytes)
		if err != nil {
			return err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		claim, stored, err := s.deps.Store.ClaimIdempotencyKey(r.Context(), owner, key, s.requestHash(r, owner, body))
		switch {
		case err != nil:
			return err
		case claim == store.IdempotencyMismatch:
			return errIdempotencyKeyReused
		case claim == store.IdempotencyInFlight:
			w.Header().Set("Retry-After", "1")
			return errIdempotencyKeyInUse
		case claim == store.IdempotencyReplay:
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set(replayedHeader, "true")
			w.WriteHeader(stored.Status)
			_, _ = w.Write(stored.Body)
			return nil
		}
		rec := &recordingWriter{ResponseWriter: w}
		herr := h(rec, r)
		if herr != nil {
			s.writeError(rec, r, herr)
		}
		s.keepAnswer(r.Context(), owner, key, rec)
		return nil
	}
}

// checkIdempotencyKey reads the one Idempotency-Key value.
func checkIdempotencyKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", errInvalidIdempotencyKey
	}
	key := values[0]
	switch {
	case len(key) > maxIdempotencyKey:
		return "", errIdempotencyKeyTooLong.withDetails(map[string]int{"length": len(key), "maxLength": maxIdempotencyKey})
	case key == "" || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e }):
		return "", errInvalidIdempotencyKey
	}
	return key, nil
}

// requestHash identifies a request for its key: its route and its body's
// plaintext (an encrypted body of the user's, opened; one that does not
// open stays as it is, and the handler refuses it).
func (s *Server) requestHash(r *http.Request, owner string, body []byte) string {
	plaintext := body
	if owner != operatorScope && strings.TrimSpace(r.Header.Get("X-Payload-Encrypted")) == "true" {
		if opened, err := s.deps.Store.Keyring().UserKey(owner).OpenRequest(body); err == nil {
			plaintext = opened
		}
	}
	h := sha256.New()
	h.Write([]byte(r.Method + " " + routeName(r.URL.Path) + "\n"))
	h.Write(plaintext)
	return hex.EncodeToString(h.Sum(nil))
}

// routeName is the last segment of a path: the route, whatever base URL
// reached it.
func routeName(path string) string {
	path = strings.TrimRight(path, "/")
	return path[strings.LastIndexByte(path, '/')+1:]
}

// keepAnswer stores the answer rec recorded for key, or frees the key when
// the answer was a server failure, which the same request may not meet
// again.
func (s *Server) keepAnswer(ctx context.Context, owner, key string, rec *recordingWriter) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), idempotencyTimeout)
	defer cancel()
	var err error
	if rec.status >= 500 {
		err = s.deps.Store.ReleaseIdempotencyKey(ctx, owner, key)
	} else {
		err = s.deps.Store.SaveIdempotentResponse(ctx, owner, key, store.IdempotentResponse{Status: rec.status, Body: rec.body.Bytes()})
	}
	if err != nil {
		s.log.ErrorContext(ctx, "idempotency: keeping a request's answer failed; a retry with its key runs again once the claim expires",
			"status", strconv.Itoa(rec.status), "err", err)
	}
}

// recordingWriter passes a response through and keeps its status and body.
type recordingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}
