package api

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"amsg/store"
)

// DefaultTokenProofMaxAge is how long a user's proof of the client token
// lets amsg-client's encrypted /instant and /continue in without the token.
const DefaultTokenProofMaxAge = 30 * 24 * time.Hour

// tokenProofs answer for the one request amsg-client sends without
// X-Client-Token: its encrypted /instant (and /continue). Every request that
// does carry the right token and names a user records a proof, the MAC of
// the token under a key derived from the master key; an encrypted request
// without the token is let in only for a user whose proof is of the current
// token and younger than maxAge. Rotating the token therefore cuts off
// every holder of the old one at once, while a client given the new token
// proves it with its next ordinary call (docs/security.md).
type tokenProofs struct {
	store  *store.Store
	key    []byte
	maxAge time.Duration
	now    func() time.Time
	log    *slog.Logger

	mu      sync.Mutex
	written map[string]store.TokenProof // the last proof written per user, to skip rewrites
}

// maxRecentProofs bounds tokenProofs.written.
const maxRecentProofs = 100_000

func newTokenProofs(st *store.Store, maxAge time.Duration, now func() time.Time, log *slog.Logger) *tokenProofs {
	k := sha256.Sum256([]byte("amsg client token proof\x00" + st.Secrets().MasterKey))
	return &tokenProofs{store: st, key: k[:], maxAge: maxAge, now: now, log: log, written: map[string]store.TokenProof{}}
}

func (p *tokenProofs) mac(token string) string {
	m := hmac.New(sha256.New, p.key)
	m.Write([]byte(token))
	return hex.EncodeToString(m.Sum(nil))
}

// proofUser is the user a request names, if it names one plausibly.
func proofUser(r *http.Request) string {
	if u := strings.TrimSpace(r.Header.Get("X-User-Id")); len(u) <= 128 {
		return u
	}
	return ""
}

// record notes that userID authenticated with token now. A proof is
// rewritten only when its token changed or a tenth of maxAge has passed.
func (p *tokenProofs) record(ctx context.Context, userID, token string) {
	if userID == "" {
		return
	}
	proof := store.TokenProof{TokenMAC: p.mac(token), SeenAt: p.now()}
	p.mu.Lock()
	last, ok := p.written[userID]
	p.mu.Unlock()
	if ok && last.TokenMAC == proof.TokenMAC && proof.SeenAt.Sub(last.SeenAt) < p.maxAge/10 {
		return
	}
	if err := p.store.PutTokenProof(ctx, userID, proof); err != nil {
		p.log.WarnContext(ctx, "could not record a client token proof", "err", err)
		return
	}
	p.mu.Lock()
	if len(p.written) >= maxRecentProofs {
		clear(p.written)
	}
	p.written[userID] = proof
	p.mu.Unlock()
}

// holds reports whether userID proved the current token within maxAge.
func (p *tokenProofs) holds(ctx context.Context, userID, token string) (bool, error) {
	if userID == "" {
		return false, nil
	}
	proof, ok, err := p.store.TokenProof(ctx, userID)
	if err != nil || !ok {
		return false, err
	}
	fresh := p.now().Sub(proof.SeenAt) <= p.maxAge
	return fresh && hmac.Equal([]byte(proof.TokenMAC), []byte(p.mac(token))), nil
}
