package api

import (
	"net/http"
	"sync"
	"time"
)

// DefaultClientStateReadBudget bounds the memory all GET /client-state
// answers in flight may take together.
const DefaultClientStateReadBudget = 256 << 20

// answerWeight is what an answer for a namespace that takes stored bytes
// in the database holds in memory at its peak: the values (half the sealed
// size), their JSON, its ciphertext and the ciphertext's base64, about
// twice the stored size, plus room for a small answer's buffers.
func answerWeight(stored int64) int64 { return 2*stored + 64<<10 }

// byteBudget admits work weighing bytes while their sum stays within the
// budget; one piece of work is always admitted alone, whatever its weight,
// so a namespace over the budget can still be read when nothing else is.
// A reader that never reads holds its answer until the write deadline
// drops it, so the budget, not the reader, bounds the memory (issue 22:
// ten unread answers of a 30 MiB namespace took the server to 2.4 GB).
type byteBudget struct {
	max int64

	mu   sync.Mutex
	used int64
}

// take admits n bytes, or reports that the budget is spent.
func (b *byteBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

// spent is what the work admitted now weighs.
func (b *byteBudget) spent() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// stateAnswerWeight is answerWeight of the namespace's stored size.
func (s *Server) stateAnswerWeight(r *http.Request, userID, namespace string) (int64, error) {
	u, err := s.deps.Store.ClientStateUsage(r.Context(), userID, namespace, nil)
	if err != nil {
		return 0, err
	}
	return answerWeight(u.NamespaceBytes), nil
}

// stateReadsBusy answers a read the budget cannot hold now.
func stateReadsBusy(w http.ResponseWriter) *Error {
	return rateLimited(w, time.Second, "clientStateReadBytes")
}
