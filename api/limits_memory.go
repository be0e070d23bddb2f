package api

import (
	"net/http"
	"sync"
	"time"
)

// DefaultClientStateReadBudget bounds the memory all GET /client-state
// answers in flight may take together: each holds at most
// streamedAnswerBytes, so 128 answers at once.
const DefaultClientStateReadBudget = 256 << 20

// byteBudget admits work weighing bytes while their sum stays within the
// budget; one piece of work is always admitted alone, whatever its weight,
// so a budget set below one answer's weight still serves one at a time.
// A reader that never reads holds its answer's working set until the write
// deadline drops it, so the budget, not the readers, bounds the memory.
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

func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// stateReadsBusy answers a read the budget cannot hold now.
func stateReadsBusy(w http.ResponseWriter) *Error {
	return rateLimited(w, time.Second, "clientStateReadBytes")
}
