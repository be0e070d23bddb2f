package api

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"

	"amsg/push"
	"amsg/store"
	"amsg/store/usercrypt"
)

// GET /client-state answers the standard's one AES-GCM envelope,
// {"success":true,"encrypted":true,"version":1,"data":{"iv","authTag",
// "encryptedData"}}, byte for byte what writeEncrypted writes, without ever
// holding the namespace: the plaintext is made a value at a time from the
// store's walk (store.WalkClientState) and sealed as it goes
// (usercrypt.SealStream). The authTag comes before the ciphertext, so the
// answer is sealed twice: a first pass over the database learns the tag,
// the second sends the ciphertext. If the namespace changed between the
// two, the second pass's tag differs; the answer is then cut off before its
// closing bytes, so a client never gets a whole answer that does not open
// (it sees a dropped connection and reads again). A reader that never reads
// holds one answer's working set (streamedAnswerBytes) until the write
// deadline drops it (issue 22 §2: ten unread answers of a 30 MiB namespace
// took the server from 248 MB to 2.4 GB).

// streamedAnswerBytes bounds what one answer holds in memory: a page of
// short values (64 × 4 KiB stored), one value read alone (a sealed row of
// up to store.StateSliceBytes: about 400 KiB, opened 200 KiB), its JSON
// (escaped a run of stateRunBytes at a time), the sealed run and the
// writers' buffers (the compressor's included).
const streamedAnswerBytes = 2 << 20

// stateRunBytes is the longest run of a value escaped into JSON at once.
const stateRunBytes = 16 << 10

// errAnswerChanged reports a namespace that changed between the two passes.
var errAnswerChanged = errors.New("api: the client state changed while its answer was sent")

func (s *Server) handleGetClientState(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	namespace := r.URL.Query().Get("namespace")
	if !s.stateReads.take(streamedAnswerBytes) {
		return stateReadsBusy(w)
	}
	defer s.stateReads.give(streamedAnswerBytes)
	key := s.deps.Store.Keyring().UserKey(userID)
	iv := usercrypt.NewEnvelopeIV()
	var tag []byte
	// A value replaced while the first pass read it is read again.
	for range 3 {
		if tag, err = s.sealState(r.Context(), key, iv, userID, namespace, nil); !errors.Is(err, store.ErrStateChanged) {
			break
		}
	}
	if err := stateNamespaceError(err); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	enc := base64.StdEncoding
	out := &answerWriter{w: w}
	_, err = io.WriteString(out, `{"success":true,"encrypted":true,"version":1,"data":{"iv":"`+enc.EncodeToString(iv)+
		`","authTag":"`+enc.EncodeToString(tag)+`","encryptedData":"`)
	data := base64.NewEncoder(enc, out)
	if err == nil {
		var sent []byte
		if sent, err = s.sealState(r.Context(), key, iv, userID, namespace, data); err == nil && subtle.ConstantTimeCompare(sent, tag) != 1 {
			err = errAnswerChanged
		}
	}
	if err == nil {
		err = data.Close()
	}
	if err == nil {
		_, err = io.WriteString(out, `"}}`+"\n")
	}
	switch {
	case err == nil, out.failed:
		// A client that stopped reading or went away: its connection is
		// broken already (deadlines logs it).
		return nil
	default:
		// The status is sent and the connection sound: all that is left is
		// to cut the answer short, before its closing bytes.
		s.log.DebugContext(r.Context(), "client-state answer cut off", "err", err)
		panic(http.ErrAbortHandler)
	}
}

// answerWriter notes whether a write to the client failed.
type answerWriter struct {
	w      io.Writer
	failed bool
}

func (a *answerWriter) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	a.failed = a.failed || err != nil
	return n, err
}

// sealState makes the plaintext of userID's answer for namespace, seals it
// under key and iv, writes the ciphertext to out (when not nil) and returns
// the tag.
func (s *Server) sealState(ctx context.Context, key usercrypt.Key, iv []byte, userID, namespace string, out io.Writer) ([]byte, error) {
	sealer, err := key.SealStream(iv)
	if err != nil {
		return nil, err
	}
	var sealed []byte
	write := func(plaintext []byte) error {
		if sealed, err = sealer.Seal(sealed[:0], plaintext); err != nil || out == nil {
			return err
		}
		_, err = out.Write(sealed)
		return err
	}
	if err := s.writeStatePlaintext(ctx, userID, namespace, write); err != nil {
		return nil, err
	}
	return sealer.Tag(), nil
}

// writeStatePlaintext gives write, in order, the bytes marshalJSON makes of
// {"namespace", "entries": [{"namespace", "key", "value", "updatedAt"}]}.
func (s *Server) writeStatePlaintext(ctx context.Context, userID, namespace string, write func([]byte) error) error {
	quotedNS := push.MustMarshalNoEscape(namespace)
	if err := write([]byte(`{"namespace":` + string(quotedNS) + `,"entries":[`)); err != nil {
		return err
	}
	first := true
	err := s.deps.Store.WalkClientState(ctx, userID, namespace, func(key string, updatedAt int64, text store.StateValueText) error {
		head := `{"namespace":` + string(quotedNS) + `,"key":` + string(push.MustMarshalNoEscape(key)) + `,"value":"`
		if !first {
			head = "," + head
		}
		first = false
		if err := write([]byte(head)); err != nil {
			return err
		}
		if err := text(func(piece []byte) error { return writeJSONStringBody(piece, write) }); err != nil {
			return err
		}
		return write([]byte(`","updatedAt":` + strconv.FormatInt(updatedAt, 10) + `}`))
	})
	if err != nil {
		return err
	}
	return write([]byte("]}\n"))
}

// writeJSONStringBody writes text as encoding/json writes it inside a string
// (no HTML escaping, as marshalJSON), without the quotes, a run of at most
// stateRunBytes at a time. Runs are cut where a code point starts, and the
// store cuts a value's pieces there too, so the escaping (which reads a
// code point at a time) is that of the whole value.
func writeJSONStringBody(text []byte, write func([]byte) error) error {
	for len(text) > 0 {
		cut := min(len(text), stateRunBytes)
		for back := 0; cut < len(text) && back < utf8.UTFMax-1 && !utf8.RuneStart(text[cut]); back++ {
			cut--
		}
		quoted := push.MustMarshalNoEscape(string(text[:cut]))
		if err := write(quoted[1 : len(quoted)-1]); err != nil {
			return err
		}
		text = text[cut:]
	}
	return nil
}
