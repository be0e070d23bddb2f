package api

import (
	"errors"
	"net/http"

	"amsg/loop"
	"amsg/push/errcode"
)

var errSessionNotFound = fail(errcode.SessionNotFound)

// handleContinue resumes a loop paused on a tool request. The body is the
// standard's /continue body; its messages may be the whole history ending
// with the tool results (upstream's way) or only the role "tool" results,
// the history then restored from the transcript. Of two requests for the
// same session and iteration exactly one proceeds; the other gets 409
// CONCURRENT_CONTINUE before any LLM call.
func (s *Server) handleContinue(w http.ResponseWriter, r *http.Request) error {
	c, err := s.readInstantCall(w, r, decodeContinue)
	if err != nil {
		return err
	}
	rd, err := s.rounds.admit(w, r, s.roundOwner(r, c), s.callerAddress(r))
	if err != nil {
		return err
	}
	defer rd.end()
	ctx := rd.ctx
	run, err := s.deps.Instant.Agent.Resume(ctx, loop.Resume{
		Owner: c.owner, SessionID: c.req.sessionID, Iteration: c.req.iteration, Call: c.req.call(),
		Presentation: c.req.presentation(r),
	})
	var ce *loop.ContinueError
	switch {
	case errors.Is(err, loop.ErrSessionNotFound):
		return errSessionNotFound.withDetails(map[string]any{"sessionId": c.req.sessionID})
	case errors.As(err, &ce) && ce.Conflict:
		details := map[string]any{"sessionId": c.req.sessionID, "reason": ce.Reason}
		if ce.Expected >= 0 {
			details["expectedIteration"] = ce.Expected
		}
		return fail(errcode.ConcurrentContinue).
			withDetails(details)
	case errors.As(err, &ce):
		return invalidPayload(errcode.ToolResultsMismatch, map[string]any{"invalidFields": []string{"messages"}, "reason": ce.Reason})
	case err != nil:
		return err
	}
	return s.respondRound(ctx, w, r, run, c.round)
}
