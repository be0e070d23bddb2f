package push_test

import (
	"regexp"
	"testing"

	"amsg/push"
)

func TestNewMessageIDIsUUIDv4(t *testing.T) {
	// Lowercase, version 4, RFC 4122 variant: the form crypto.randomUUID()
	// prints and the standard's blob-key check accepts.
	v4 := regexp.MustCompile(`^msg_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id := push.NewMessageID()
		if !v4.MatchString(id) {
			t.Fatalf("%q is not msg_<uuid v4>", id)
		}
		if seen[id] {
			t.Fatalf("%q repeated", id)
		}
		seen[id] = true
	}
}
