package scheduler

// workers are the goroutines deliveries run on. A delivery that ends
// waits for the next one instead of exiting, so a trickle's deliveries run
// on goroutines whose stacks have grown already (growStack, newstack) and
// start with a hand-off rather than a new goroutine. Their number is what
// was under way at once at most (Concurrency and the tasks claimed ahead);
// they exit once the scheduler stops.
type workers struct {
	jobs chan job        // unbuffered: a send succeeds only to an idle worker
	quit <-chan struct{} // closed when Stop begins
}

// job is one delivery and what to call once it is over.
type job struct{ fn, done func() }

// run runs fn on an idle worker, or on a new one, then done.
func (w *workers) run(fn, done func()) {
	j := job{fn, done}
	select {
	case w.jobs <- j:
	default:
		go w.work(j)
	}
}

// work runs j, then the jobs handed to it, until the scheduler stops.
func (w *workers) work(j job) {
	for {
		j.fn()
		j.done()
		j = job{} // an idle worker keeps no task alive
		select {
		case j = <-w.jobs:
		case <-w.quit:
			return
		}
	}
}
