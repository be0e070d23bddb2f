package batch_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"amsg/store/driver/batch"
)

// collector records the batches it is handed and signals started (when
// set) as each begins.
type collector struct {
	mu      sync.Mutex
	batches [][]int
	started chan struct{}
}

func (c *collector) handle(items []int) {
	if c.started != nil {
		c.started <- struct{}{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches = append(c.batches, slices.Clone(items))
}

func (c *collector) all() [][]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.batches)
}

// A busy batcher's batch ends at MaxItems, and every item is handled
// once, in order. Which items the first batch takes depends on how the
// adder and the batcher interleave (an idle batcher takes those already
// waiting); every batch after it is busy and full, but the last, which
// Close hands over without waiting out its hour.
func TestBatchIsBoundedInSize(t *testing.T) {
	c := &collector{}
	b := batch.New(batch.Options{MaxItems: 3, MaxWait: time.Hour, Gap: time.Hour}, c.handle)
	for i := range 7 {
		if err := b.Add(i); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	got := c.all()
	var items []int
	for i, batch := range got {
		items = append(items, batch...)
		if len(batch) > 3 || (i > 0 && i < len(got)-1 && len(batch) != 3) {
			t.Errorf("batches %v: want each of at most 3, the middle ones of exactly 3", got)
		}
	}
	if !slices.Equal(items, []int{0, 1, 2, 3, 4, 5, 6}) || len(got) < 3 {
		t.Errorf("batches %v, want 0 to 6 once, in order, in three batches or more", got)
	}
}

// A lone item on an idle batcher is handled without waiting for company:
// Add returns only once the handler has it, and then Close ends the
// batcher, after which Add refuses.
func TestLoneItemIsHandledAndCloseRefusesLaterItems(t *testing.T) {
	c := &collector{}
	b := batch.New(batch.Options{MaxItems: 100, MaxWait: time.Hour, Gap: time.Hour}, c.handle)
	if err := b.Add(7); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if got := c.all(); len(got) != 1 || !slices.Equal(got[0], []int{7}) {
		t.Errorf("batches %v, want [[7]]", got)
	}
	if err := b.Add(8); !errors.Is(err, batch.ErrClosed) {
		t.Errorf("Add after Close: %v, want ErrClosed", err)
	}
	b.Close() // a second Close does nothing
}

// A busy batcher (one that just handled a batch) waits for items that keep
// arriving within Gap and puts them in one batch.
func TestBusyBatcherWaitsForItemsArrivingWithinGap(t *testing.T) {
	c := &collector{started: make(chan struct{}, 10)}
	b := batch.New(batch.Options{MaxItems: 4, MaxWait: time.Hour, Gap: time.Hour}, c.handle)
	defer b.Close()
	if err := b.Add(0); err != nil {
		t.Fatal(err)
	}
	<-c.started
	// Busy now: the next batch waits (Gap an hour) until it holds MaxItems.
	for i := 1; i <= 4; i++ {
		if err := b.Add(i); err != nil {
			t.Fatal(err)
		}
	}
	<-c.started
	b.Close()
	got := c.all()
	if len(got) != 2 || !slices.Equal(got[1], []int{1, 2, 3, 4}) {
		t.Errorf("batches %v, want [[0] [1 2 3 4]]", got)
	}
}

// With MaxHandlers 2, a second batch is handled while the first still is,
// a third waits for one of them, and Close waits for all.
func TestHandlersRunBatchesAtOnceUpToMaxHandlers(t *testing.T) {
	started, release := make(chan int, 3), make(chan struct{})
	var mu sync.Mutex
	var handled []int
	b := batch.New(batch.Options{MaxItems: 10, MaxHandlers: 2}, func(items []int) {
		started <- items[0]
		<-release
		mu.Lock()
		handled = append(handled, items...)
		mu.Unlock()
	})
	for i := range 2 {
		if err := b.Add(i); err != nil {
			t.Fatal(err)
		}
		<-started // batch i is in a handler, the other still holds its own
	}
	if err := b.Add(2); err != nil { // taken, waiting for a free handler
		t.Fatal(err)
	}
	close(release)
	<-started
	b.Close()
	slices.Sort(handled)
	if !slices.Equal(handled, []int{0, 1, 2}) {
		t.Errorf("handled %v, want 0, 1, 2", handled)
	}
}

// On a busy batcher too, items handed over with Linger wait for company:
// records arriving evenly spaced (a trickle whose tasks each start at
// their time) would otherwise each find it just busy and go nearly alone.
func TestLingeringItemsWaitOnABusyBatcherToo(t *testing.T) {
	c := &collector{started: make(chan struct{}, 10)}
	// After its first batch the batcher is busy for an hour, and a busy
	// batch waits a nanosecond for each next item.
	b := batch.New(batch.Options{MaxItems: 3, MaxWait: time.Hour, Gap: time.Nanosecond, Linger: time.Hour}, c.handle)
	if err := b.Add(0); err != nil {
		t.Fatal(err)
	}
	<-c.started
	for i, add := range []func(int) error{b.Linger, b.Linger, b.Add} {
		if err := add(i + 1); err != nil {
			t.Fatal(err)
		}
	}
	<-c.started
	b.Close()
	if got := c.all(); !slices.EqualFunc(got, [][]int{{0}, {1, 2, 3}}, slices.Equal) {
		t.Errorf("batches %v, want [[0] [1 2 3]]", got)
	}
}

// On a batcher that is not busy, items handed over with Linger wait for
// company (a trickle shares a batch), until an item given to Add arrives,
// which is handled at once with them; a lingering batch also ends at
// MaxItems, and a lone lingering item once Linger has passed.
func TestLingeringItemsWaitForCompanyUntilAnItemThatMayNot(t *testing.T) {
	c := &collector{started: make(chan struct{}, 10)}
	// MaxWait 0: never busy, so only Linger makes a batch wait.
	b := batch.New(batch.Options{MaxItems: 3, Linger: time.Hour}, c.handle)
	for i, add := range []func(int) error{b.Linger, b.Linger, b.Add} { // 0 and 1 wait; 2 ends the batch
		if err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	<-c.started
	for i := 3; i < 6; i++ { // three lingering items fill a batch
		if err := b.Linger(i); err != nil {
			t.Fatal(err)
		}
	}
	<-c.started
	b.Close()
	lone := batch.New(batch.Options{MaxItems: 3, Linger: time.Millisecond}, c.handle)
	if err := lone.Linger(6); err != nil {
		t.Fatal(err)
	}
	<-c.started
	lone.Close()
	if got := c.all(); !slices.EqualFunc(got, [][]int{{0, 1, 2}, {3, 4, 5}, {6}}, slices.Equal) {
		t.Errorf("batches %v, want [[0 1 2] [3 4 5] [6]]", got)
	}
}
