package api

import (
	"amsg/push/errcode"
)

// MaxTaskPayloadBytes is the largest task amsg stores: its payload as
// stored, in plaintext UTF-8 bytes, upstream's MAX_TASK_PAYLOAD_BYTES (its
// D1 row limit, halved for hex, less room for the other columns). It is
// one contract on every backend, so a task moves between servers.
const MaxTaskPayloadBytes = 995_871

// taskRequestSlack is what a schedule or update request may carry beyond
// the payload it stores: a pushSubscription, whitespace, fields amsg does
// not keep.
const taskRequestSlack = 64 << 10

// taskBodyLimit bounds a schedule-message or update-message body: the
// encrypted envelope of a request holding the largest task (base64 of the
// ciphertext plus the envelope's members), or the global limit when that
// is larger.
func (s *Server) taskBodyLimit() int64 {
	const envelope = 4*((MaxTaskPayloadBytes+taskRequestSlack+2)/3) + 1024
	return max(s.cfg.MaxBodyBytes, envelope)
}

// checkTaskSize refuses a task payload over MaxTaskPayloadBytes, unless it
// is no larger than before (was: the stored payload's size, 0 for a new
// task), so a task stored before the limit can still be moved or shrunk.
func checkTaskSize(payload []byte, was int) error {
	n := len(payload)
	if n <= MaxTaskPayloadBytes || (was > 0 && n <= was) {
		return nil
	}
	return fail(errcode.TaskPayloadOver.With(n, MaxTaskPayloadBytes)).
		withDetails(map[string]int{"bytes": n, "maxBytes": MaxTaskPayloadBytes})
}
