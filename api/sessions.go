package api

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"amsg/loop"

	"github.com/go-chi/chi/v5"
)

// handleSession returns the transcript of one of the user's sessions:
// every round as typed messages with their pushes and token usage. Like the
// standard's other reads of user data it needs X-User-Id and answers with
// the encrypted envelope (the transcript holds prompts and replies). With
// Accept: application/x-ndjson it answers the Timbal Messages/1.0 framing
// instead, in plaintext, for tools that read that format. Sessions started
// without a user (owned by their push subscription) cannot be read here.
func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	sessionID := chi.URLParam(r, "sessionId")
	if r.URL.RawPath != "" { // chi matched the escaped path
		if sessionID, err = url.PathUnescape(sessionID); err != nil {
			return errSessionNotFound
		}
	}
	tr, err := s.deps.Instant.Agent.Transcripts().Load(r.Context(), loop.UserOwner(userID), sessionID)
	if errors.Is(err, loop.ErrSessionNotFound) {
		return errSessionNotFound.withDetails(map[string]any{"sessionId": sessionID})
	}
	if err != nil {
		return err
	}
	if acceptsMedia(r, loop.TimbalContentType) {
		w.Header().Set("Content-Type", loop.TimbalContentType+"; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := tr.WriteTimbal(w); err != nil {
			s.log.WarnContext(r.Context(), "writing a transcript failed", "err", err)
		}
		return nil
	}
	return s.writeEncrypted(w, userID, tr)
}

// acceptsMedia reports whether Accept names media (parameters ignored).
func acceptsMedia(r *http.Request, media string) bool {
	for part := range strings.SplitSeq(strings.Join(r.Header.Values("Accept"), ","), ",") {
		m, _, _ := strings.Cut(part, ";")
		if strings.EqualFold(strings.TrimSpace(m), media) {
			return true
		}
	}
	return false
}
