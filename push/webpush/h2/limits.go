package h2

import "time"

// Bounds on what a server can make the client hold. docs/security.md
// lists them.
const (
	// maxResponseBody is the most of an answer's body read before the
	// stream is reset: the caller keeps a snippet of an error's body only,
	// and staying under the stream's initial window means a long body
	// never waits on a WINDOW_UPDATE of ours.
	maxResponseBody = 16 << 10
	// maxHeaderListSize is our SETTINGS_MAX_HEADER_LIST_SIZE: a larger
	// answer's header block fails its request (the Framer stops decoding
	// at the bound and closes a connection that sends far more).
	maxHeaderListSize = 16 << 10
	// maxStreamsPerConn caps the server's SETTINGS_MAX_CONCURRENT_STREAMS.
	maxStreamsPerConn = 1000
	// defaultMaxStreams is assumed until the server's SETTINGS say
	// otherwise (RFC 9113 §5.1.2 leaves it unlimited; net/http assumes 100).
	defaultMaxStreams = 100
	// maxOrigins bounds the pools (origins with connections) and the
	// memory of origins that negotiated no h2.
	maxOrigins = 10_000
	// maxUnprocessedRetries is how many times Do sends again a request the
	// server did not process.
	maxUnprocessedRetries = 1
	// writeTimeout bounds a write to a server that stopped reading.
	writeTimeout = 30 * time.Second
	// initialWindow is the window of HTTP/2's default SETTINGS, ours and
	// the server's until it says otherwise.
	initialWindow = 65535
	// maxWindow is the largest flow-control window (RFC 9113 §6.9.1).
	maxWindow = 1<<31 - 1
	// maxStreamID is the largest stream id; a connection that reached it
	// takes no new streams.
	maxStreamID = 1<<31 - 1
)
