package scheduler

// deliveryStack is about what a delivery takes of its goroutine's stack
// below the call that starts it: the build of its pushes, with the task and
// its payload passed by value at each step, then the courier, the sealing
// and the HTTP/2 request (grown past 8 KiB; within the 16 KiB the runtime
// caches per P).
const deliveryStack = 8 << 10

// growStack grows the calling goroutine's stack to take deliveryStack more
// in one step, while the goroutine is shallow. A delivery's goroutine starts
// with the runtime's average stack, which the goroutines waiting for their
// tasks' times keep small; grown on the way down instead, the stack was
// copied with every frame on it adjusted, deep in the build (the runtime's
// newstack: 3-4 % of amsg's CPU in a burst).
//
//go:noinline
func growStack() {
	var frame [deliveryStack]byte
	touch(frame[:])
}

// touch keeps growStack's frame from being optimized away.
//
//go:noinline
func touch(b []byte) { b[len(b)-1] = 0 }
