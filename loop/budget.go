package loop

import (
	"fmt"

	"amsg/push"
)

// DefaultMaxPushesPerRound is the default bound of CapPushes.
const DefaultMaxPushesPerRound = 64

// CapPushes wraps a round's emit so that the round fails instead of sending
// more than n pushes: each reaches every device of the user, so an
// unbounded round is a flood the caller aims. A request's round and a round
// resumed after an approval share the bound.
func CapPushes(n int, emit Emit) Emit {
	left := n
	return func(p push.Push) error {
		if left == 0 {
			return fmt.Errorf("this round would send more than %d pushes", n)
		}
		left--
		return emit(p)
	}
}
