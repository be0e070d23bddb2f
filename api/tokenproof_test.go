package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/loop"
)

// proveClientToken makes an ordinary authenticated call as userID, which
// records the user's proof of token.
func proveClientToken(t *testing.T, h http.Handler, userID, token string) {
	t.Helper()
	got := do(t, h, http.MethodGet, "/api/v1/get-user-key", map[string]string{"X-User-Id": userID, "X-Client-Token": token})
	if got.status != http.StatusOK {
		t.Fatalf("get-user-key with the token: %d %s", got.status, got.body)
	}
}

// Finding 7: an encrypted /instant skipped the token, so rotating it revoked
// nothing. Now the old token's holders are cut off as soon as the server
// runs with the new token; a client with the new token gets in after its
// next ordinary call; a proof older than its maximum age lets nobody in.
func TestRotatedClientToken(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	f := newInstantFixture(t, Config{ClientToken: "old", Now: clock, Limits: Limits{TokenProofMaxAge: time.Hour}}, loop.AgentConfig{})
	encrypted := func(h http.Handler) response {
		// "{" is not an envelope: 400 INVALID_ENCRYPTED_PAYLOAD means the
		// request got past authorization.
		return post(h, "/api/v1/instant", "{", withHeaders(jsonHeaders, encryptedHeaders(testUserID)))
	}
	passed := func(got response) bool { return got.status == http.StatusBadRequest }

	if got := encrypted(f.s); got.status != http.StatusUnauthorized {
		t.Fatalf("before any proof: %d %s", got.status, got.body)
	}
	proveClientToken(t, f.s, testUserID, "old")
	if got := encrypted(f.s); !passed(got) {
		t.Fatalf("with a proof of the token: %d %s", got.status, got.body)
	}

	// The operator rotates the token: the same database, a server with the
	// new token.
	rotated := newTestServer(t, Config{ClientToken: "new", Now: clock, Limits: Limits{TokenProofMaxAge: time.Hour}},
		Deps{Store: f.store, Instant: f.s.deps.Instant})
	if got := encrypted(rotated); got.status != http.StatusUnauthorized || !strings.Contains(got.body, "INVALID_CLIENT_TOKEN") {
		t.Fatalf("the old token's holder after rotation: %d %s", got.status, got.body)
	}
	if got := do(t, rotated, http.MethodGet, "/api/v1/get-user-key", map[string]string{"X-User-Id": testUserID, "X-Client-Token": "old"}); got.status != http.StatusUnauthorized {
		t.Fatalf("the old token proves nothing: %d", got.status)
	}
	proveClientToken(t, rotated, testUserID, "new")
	if got := encrypted(rotated); !passed(got) {
		t.Fatalf("after proving the new token: %d %s", got.status, got.body)
	}

	now = now.Add(time.Hour + time.Second)
	if got := encrypted(rotated); got.status != http.StatusUnauthorized {
		t.Fatalf("with a proof past its maximum age: %d %s", got.status, got.body)
	}
}
