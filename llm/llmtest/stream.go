package llmtest

import (
	"io"
	"net/http"
)

// Stream is a streamed answer the test sends piece by piece. Each method
// returns once the piece has been written and flushed to the client (or the
// client has gone away), so after Send the test can wait for the client to
// react, with no sleeping.
type Stream struct {
	pieces chan streamPiece
	done   chan struct{}
}

type streamPiece struct {
	raw     string // written verbatim
	end     bool   // close the answer after writing raw
	written chan struct{}
}

// Stream queues a hand-driven streamed answer for the next request. Its
// headers (200, text/event-stream) go out when the first piece is sent.
func (s *Server) Stream() *Stream {
	st := &Stream{pieces: make(chan streamPiece), done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, answer{stream: st})
	s.mu.Unlock()
	return st
}

func (st *Stream) serve(w http.ResponseWriter, r *http.Request) {
	defer close(st.done)
	started := false
	for {
		select {
		case <-r.Context().Done():
			return
		case p := <-st.pieces:
			if !started {
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				started = true
			}
			_, _ = io.WriteString(w, p.raw)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			close(p.written)
			if p.end {
				return
			}
		}
	}
}

func (st *Stream) send(raw string, end bool) {
	p := streamPiece{raw: raw, end: end, written: make(chan struct{})}
	select {
	case st.pieces <- p:
		<-p.written
	case <-st.done:
	}
}

// Send writes one chunk as a data event.
func (st *Stream) Send(c Chunk) {
	st.send(eventOf(c), false)
}

// Content sends a chunk with delta.content.
func (st *Stream) Content(s string) { st.Send(Chunk{Content: s}) }

// Reasoning sends a chunk with delta.reasoning_content.
func (st *Stream) Reasoning(s string) { st.Send(Chunk{ReasoningContent: s}) }

// Raw writes bytes verbatim: comments, CRLF line ends, broken JSON.
func (st *Stream) Raw(s string) { st.send(s, false) }

// Done sends data: [DONE] and ends the answer.
func (st *Stream) Done() { st.send("data: [DONE]\n\n", true) }

// End ends the answer without [DONE].
func (st *Stream) End() { st.send("", true) }
