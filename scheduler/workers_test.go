package scheduler

import (
	"bytes"
	"runtime"
	"testing"
)

// goroutineID is the calling goroutine's id, from its stack's header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

// A delivery runs on the goroutine an ended one left waiting, after which
// done is called; once the scheduler stops, the idle workers exit and a
// delivery still launched (Tick's, before Stop refuses them) runs on a
// goroutine of its own.
func TestADeliveryRunsOnTheWorkerTheLastOneLeft(t *testing.T) {
	quit := make(chan struct{})
	w := workers{jobs: make(chan job), quit: quit}
	ran := make(chan string, 1)
	done := make(chan struct{}, 1)
	deliver := job{fn: func() { ran <- goroutineID() }, done: func() { done <- struct{}{} }}

	w.run(deliver.fn, deliver.done)
	first := <-ran
	<-done
	w.jobs <- deliver // taken by the idle worker only
	if again := <-ran; again != first {
		t.Errorf("the second delivery ran on goroutine %s, want the idle worker %s", again, first)
	}
	<-done

	close(quit)
	w.run(deliver.fn, deliver.done)
	if id := <-ran; id == "" {
		t.Error("a delivery after quit did not run")
	}
	<-done
}
