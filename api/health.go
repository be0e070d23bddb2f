package api

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// healthTimeout bounds the health check's database probe.
const healthTimeout = 3 * time.Second

// healthCacheTTL is how long a passing probe answers for later checks: a
// probe opens a connection and commits a write, and /healthz is neither
// authenticated nor rate limited, so a flood of checks must not become a
// flood of writes. A failing probe is not reused.
const healthCacheTTL = time.Second

// healthCheck runs one probe at a time and remembers the last pass.
type healthCheck struct {
	mu       sync.Mutex
	passedAt time.Time
}

// handleHealth answers 200 when the database file can be read and written
// now, 503 otherwise (deleted, read-only, corrupt, disk full, or too slow).
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if err := s.probeHealth(r.Context()); err != nil {
		s.log.WarnContext(r.Context(), "health check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) probeHealth(ctx context.Context) error {
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if now := s.now(); !h.passedAt.IsZero() && now.Sub(h.passedAt) < healthCacheTTL && !now.Before(h.passedAt) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	if err := s.deps.Store.Probe(ctx); err != nil {
		h.passedAt = time.Time{}
		return err
	}
	h.passedAt = s.now()
	return nil
}
