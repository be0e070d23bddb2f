package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"amsg/push/errcode"
)

// authMode says which credentials a route requires.
type authMode int

const (
	// authClient routes need X-Client-Token when AMSG_CLIENT_TOKEN is set,
	// as the standard's single-user server does. It is the zero value, so a
	// route that names no mode is protected. Health checks and the PWA's
	// files are served outside the route table and need nothing.
	authClient authMode = iota
	// authInstant routes (/instant, /continue) need a Bearer token when
	// AMSG_TOKEN_SIGNING_KEY is set, then X-Client-Token when
	// AMSG_CLIENT_TOKEN is set, with amsg-instant's codes and messages.
	authInstant
	// authDecisionToken routes check a credential of their own, an
	// interrupt's decision token or a push's receipt token, and nothing
	// else: a service worker answering a notification has only that.
	authDecisionToken
)

// tokenComparer compares secrets in constant time, lengths included: both
// sides are MACed under a key drawn at start-up and the digests compared.
type tokenComparer struct{ key []byte }

func newTokenComparer() tokenComparer {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return tokenComparer{key: key}
}

func (c tokenComparer) equal(a, b string) bool {
	return hmac.Equal(c.mac([]byte(a)), c.mac([]byte(b)))
}

func (c tokenComparer) mac(b []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	m.Write(b)
	return m.Sum(nil)
}

// authorize checks the credentials mode requires. It runs before anything
// else in a handler. provenUser is the user a Bearer token was minted for
// when the request names that user (see bearerProvesUser).
func (s *Server) authorize(mode authMode, r *http.Request) (provenUser string, err error) {
	switch mode {
	case authClient:
		if s.cfg.ClientToken == "" {
			return "", nil
		}
		got := strings.TrimSpace(r.Header.Get("X-Client-Token"))
		if got == "" || !s.tokens.equal(got, s.cfg.ClientToken) {
			return "", errInvalidClientToken
		}
		s.proofs.record(r.Context(), proofUser(r), s.cfg.ClientToken)
	case authInstant:
		if s.cfg.TokenSigningKey != "" {
			subject, err := verifyBearer(r.Header.Get("Authorization"), s.cfg.TokenSigningKey, s.now())
			if err != nil {
				return "", err
			}
			provenUser = bearerProvesUser(subject, r)
		}
		if s.cfg.ClientToken != "" {
			got := strings.TrimSpace(r.Header.Get("X-Client-Token"))
			if got == "" && strings.TrimSpace(r.Header.Get("X-Payload-Encrypted")) == "true" {
				// amsg-client's encrypted instant mode sends no token. It is
				// let in for a user who proved the current token recently
				// (tokenproof.go); a user key fetched with a token since
				// rotated no longer suffices.
				ok, err := s.proofs.holds(r.Context(), proofUser(r), s.cfg.ClientToken)
				if err != nil {
					return "", err
				}
				if ok {
					return provenUser, nil
				}
			}
			if got == "" {
				return "", fail(errcode.ClientTokenMissing)
			}
			if !s.tokens.equal(got, s.cfg.ClientToken) {
				return "", fail(errcode.ClientTokenWrong)
			}
			s.proofs.record(r.Context(), proofUser(r), s.cfg.ClientToken)
		}
	}
	return provenUser, nil
}

// bearerProvesUser is the request's X-User-Id when the Bearer token that
// checked out was minted for that user (its tid, amsg token --subject): the
// operator signed it, so the request proved it is that user, as an
// envelope opened under the user key does. A token for a tenant or for
// nobody proves no user: charging the id it names would let any holder of
// a shared token lock that user out (issue 22 §4).
func bearerProvesUser(subject string, r *http.Request) string {
	if user := proofUser(r); subject != "" && subject == user {
		return user
	}
	return ""
}

// requiresCredential reports whether mode asks a request for a credential
// on this server (a client token or a Bearer token), so that a request
// authorize let in proved one.
func (s *Server) requiresCredential(mode authMode) bool {
	return s.cfg.ClientToken != "" || mode == authInstant && s.cfg.TokenSigningKey != ""
}

// MaxTokenTTL is the longest lifetime SignToken (amsg token --ttl) gives a
// Bearer token, and so the furthest exp verifyBearer accepts: a token that
// claims more was not minted by amsg, and one leaked would never expire.
const MaxTokenTTL = 366 * 24 * time.Hour

// tokenAlg is the one algorithm amsg signs Bearer tokens with.
const tokenAlg = "HS256"

// verifyBearer checks an amsg-instant HMAC bearer token: three base64url
// parts, a header naming HS256, an HS256 signature over "<header>.<payload>"
// with the signing key, and claims v == 1 and exp in the future but no
// further than MaxTokenTTL. Like upstream it ignores iat, nbf, aud and typ;
// unlike upstream it reads the header's alg. It returns the token's tid
// (its subject; empty when absent or not a string).
func verifyBearer(header, signingKey string, now time.Time) (subject string, err error) {
	header = strings.TrimSpace(header)
	if len(header) < 7 || !strings.EqualFold(header[:7], "bearer ") {
		return "", fail(errcode.BearerMissing)
	}
	token := strings.TrimSpace(header[7:])
	if token == "" {
		return "", fail(errcode.BearerEmpty)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", fail(errcode.TokenMalformed)
	}
	sig, err := decodeBase64URL(parts[2])
	if err != nil {
		return "", fail(errcode.SignatureMalformed)
	}
	m := hmac.New(sha256.New, []byte(signingKey))
	m.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(sig, m.Sum(nil)) {
		return "", fail(errcode.SignatureInvalid)
	}
	var head struct {
		Alg string `json:"alg"`
	}
	if b, err := decodeBase64URL(parts[0]); err != nil || json.Unmarshal(b, &head) != nil || head.Alg != tokenAlg {
		return "", fail(errcode.TokenMalformed)
	}
	payload, err := decodeBase64URL(parts[1])
	if err != nil {
		return "", fail(errcode.TokenUnreadable)
	}
	// Numbers only: upstream compares with ===, so the string "1" fails.
	var claims struct {
		V   any `json:"v"`
		Exp any `json:"exp"`
		TID any `json:"tid"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", fail(errcode.TokenUnreadable)
	}
	v, _ := claims.V.(float64)
	exp, _ := claims.Exp.(float64)
	if v != 1 || exp <= float64(now.Unix()) || exp > float64(now.Add(MaxTokenTTL).Unix()) {
		return "", fail(errcode.Unauthorized)
	}
	subject, _ = claims.TID.(string)
	return subject, nil
}

// SignToken mints a Bearer token for /instant and /continue that
// verifyBearer accepts until now+ttl: the format amsg-server's tenant tokens
// use (an HS256 header, then {tid, typ, iat, exp, v:1}), signed with key
// (AMSG_TOKEN_SIGNING_KEY).
func SignToken(key, subject string, now time.Time, ttl time.Duration) (string, error) {
	if key == "" {
		return "", errors.New("api: no token signing key")
	}
	if ttl <= 0 || ttl > MaxTokenTTL {
		return "", fmt.Errorf("api: a token's lifetime must be positive and at most %s", MaxTokenTTL)
	}
	claims, err := json.Marshal(struct {
		TID string `json:"tid"`
		Typ string `json:"typ"`
		IAT int64  `json:"iat"`
		Exp int64  `json:"exp"`
		V   int    `json:"v"`
	}{subject, "instant", now.Unix(), now.Add(ttl).Unix(), 1})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString([]byte(`{"alg":"`+tokenAlg+`","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(m.Sum(nil)), nil
}

// decodeBase64URL accepts base64url with or without padding.
func decodeBase64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
