package api

import (
	"context"
	"errors"
	"mime"
	"net/http"

	"amsg/llm"
	"amsg/push/errcode"
)

// errUnsupportedMediaType refuses an /instant or /continue body that is
// not declared JSON: a cross-site page may send text/plain without a CORS
// preflight, and must not be able to start an LLM call.
var errUnsupportedMediaType = fail(errcode.UnsupportedMedia)

// requireJSONContent accepts only Content-Type: application/json (any
// parameters), which upstream clients send, the encrypted envelope
// included.
func requireJSONContent(r *http.Request) error {
	media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || media != "application/json" {
		return errUnsupportedMediaType
	}
	return nil
}

// checkAPIURL applies the LLM URL policy to a request-given apiUrl; ""
// (the operator's model) passes.
func (s *Server) checkAPIURL(ctx context.Context, apiURL string) error {
	if apiURL == "" {
		return nil
	}
	err := s.cfg.LLMPolicy.Check(ctx, apiURL)
	var le *llm.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &le) && errors.Is(err, llm.ErrInvalidAPIURL):
		return fail(errcode.InvalidAPIURL.Quoting(le.Error())).
			withDetails(map[string]any{"invalidFields": []string{"apiUrl"}})
	}
	return err
}

// roundOwner is whom a round counts against: the user the request proved
// it is (its body opened under the user key), else the client's address.
// A named but unproven id is a claim: counting it would let anyone take a
// user's rounds.
func (s *Server) roundOwner(r *http.Request, c *instantCall) string {
	if c.userID != "" && c.proven {
		return "user:" + c.userID
	}
	return "addr:" + s.callerAddress(r)
}
