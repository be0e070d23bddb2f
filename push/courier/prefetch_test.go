package courier

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"amsg/push"
)

// prefetchStore serves devices from memory and counts its reads. DevicesOf
// waits for release, when set, and then fails with failMany.
type prefetchStore struct {
	Store // the rest: unused

	devices  map[string][]push.Device
	release  chan struct{}
	failMany error

	mu   sync.Mutex
	one  []string   // users read one at a time
	many [][]string // the users of each read of many
}

func (s *prefetchStore) Devices(_ context.Context, userID string) ([]push.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.one = append(s.one, userID)
	return s.devices[userID], nil
}

func (s *prefetchStore) DevicesOf(ctx context.Context, userIDs []string) (map[string][]push.Device, error) {
	s.mu.Lock()
	s.many = append(s.many, slices.Clone(userIDs))
	s.mu.Unlock()
	if s.release != nil {
		select {
		case <-s.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.failMany != nil {
		return nil, s.failMany
	}
	out := map[string][]push.Device{}
	for _, id := range userIDs {
		if d, ok := s.devices[id]; ok {
			out[id] = d
		}
	}
	return out, nil
}

func (s *prefetchStore) reads() (one []string, many [][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.one), slices.Clone(s.many)
}

func device(userID string, id int64) push.Device {
	return push.Device{UserID: userID, ID: id, Subscription: push.Subscription{Endpoint: "https://push.example/" + userID}}
}

// Prefetch reads the users without fresh devices once, each once, and the
// rounds that follow find them, a user without devices included.
func TestPrefetchReadsTheUsersWithoutFreshDevicesAtOnce(t *testing.T) {
	st := &prefetchStore{devices: map[string][]push.Device{
		"alice": {device("alice", 1), device("alice", 2)},
		"bob":   {device("bob", 3)},
	}}
	c := newDeviceCache(st, time.Minute, time.Now)
	if _, err := c.acquire(t.Context(), "bob"); err != nil { // bob's are fresh
		t.Fatal(err)
	}
	if err := c.prefetch(t.Context(), st, []string{"alice", "bob", "alice", "carol"}); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]int{"alice": 2, "bob": 1, "carol": 0} {
		u, err := c.acquire(t.Context(), user)
		if err != nil || len(u.list()) != want {
			t.Errorf("%s: %v, %v; want %d devices", user, u, err, want)
		}
	}
	one, many := st.reads()
	if !slices.Equal(one, []string{"bob"}) || len(many) != 1 || !slices.Equal(many[0], []string{"alice", "carol"}) {
		t.Errorf("read one at a time %v and many at once %v; want [bob] before, then [[alice carol]]", one, many)
	}
}

// A round that starts while a Prefetch reads its user's devices waits for
// that read; if it fails, the round reads them itself rather than fail.
func TestARoundWaitingOnAFailedPrefetchReadsItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &prefetchStore{devices: map[string][]push.Device{"alice": {device("alice", 1)}},
			release: make(chan struct{}), failMany: errors.New("connection reset")}
		c := newDeviceCache(st, time.Minute, time.Now)
		prefetched := make(chan error, 1)
		go func() { prefetched <- c.prefetch(t.Context(), st, []string{"alice"}) }()
		synctest.Wait() // the prefetch waits in DevicesOf
		var got *userDevices
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			got, err = c.acquire(t.Context(), "alice")
		}()
		synctest.Wait() // the round waits for the prefetch
		if one, _ := st.reads(); len(one) != 0 {
			t.Fatalf("the round read %v while the prefetch was reading", one)
		}
		close(st.release)
		if err := <-prefetched; !errors.Is(err, st.failMany) {
			t.Errorf("prefetch = %v, want its read's error", err)
		}
		<-done
		if err != nil || len(got.list()) != 1 {
			t.Fatalf("round after a failed prefetch: %v, %v; want alice's device", got, err)
		}
		if one, many := st.reads(); !slices.Equal(one, []string{"alice"}) || len(many) != 1 {
			t.Errorf("reads %v one at a time, %v at once; want the round's own after the failed one", one, many)
		}
	})
}
