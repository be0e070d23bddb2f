package api

import (
	"errors"
	"io"
	"net/http"

	"amsg/push"
	"amsg/push/errcode"
)

// marshalJSON encodes v with a trailing newline and without HTML escaping,
// so `<`, `>` and `&` reach clients (and encrypted envelopes) as they were
// sent.
func marshalJSON(v any) ([]byte, error) {
	b, err := push.MarshalNoEscape(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// writeJSON writes v as the response body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshalJSON(v)
	if err != nil {
		// Only a programming error gets here: every response type is plain data.
		http.Error(w, `{"success":false,"error":{"code":"`+errcode.Internal.Code()+`","message":"`+errcode.Internal.Chinese()+`"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeData writes the success envelope {"success":true,"data":data}.
func writeData(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, struct {
		Success bool `json:"success"`
		Data    any  `json:"data"`
	}{true, data})
}

// writeDeleted answers a delete with the number of rows it removed:
// {"success":true,"data":{"deleted":n}}.
func writeDeleted(w http.ResponseWriter, n int) error {
	writeData(w, http.StatusOK, struct {
		Deleted int `json:"deleted"`
	}{n})
	return nil
}

// readBody reads at most limit bytes of the request body (inflated, when it
// came gzipped). A larger body is refused with 413 before it is buffered; a
// body that is not valid gzip is 400 INVALID_CONTENT_ENCODING; a body that cannot be read at all
// (a dropped connection) is the standard's INVALID_PAYLOAD_FORMAT; one that
// did not arrive within the read deadline (see deadlines) is 408 and the
// connection closes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	var badEncoding *contentEncodingError
	switch {
	case errors.As(err, &badEncoding):
		return nil, errInvalidContentEncoding
	case errors.As(err, &tooLarge):
		return nil, fail(errcode.BodyTooLarge.With(limit)).withDetails(map[string]any{"maxBytes": limit})
	case isReadTimeout(err):
		w.Header().Set("Connection", "close")
		return nil, errRequestTimeout
	case err != nil:
		return nil, fail(errcode.BodyUnreadable)
	}
	return body, nil
}
