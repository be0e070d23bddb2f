package store

import "amsg/push/tracing"

// traceWrite ends the span of a write (store.write) or of a write the store
// batches with others (store.batch), push/tracing: the wait for the writer
// or the batch, the transaction it shared with the writes committed
// together, and the commit. The error's kind only: its text may quote a row.
func (s *Store) traceWrite(span tracing.Span, err error) {
	if !span.Recording() {
		return
	}
	span.Str("db.system.name", s.dialect.Name)
	if err != nil {
		span.Fail("write failed")
	}
	span.End()
}
