package store

import (
	"errors"
	"strings"
	"testing"

	"amsg/push"
	"amsg/push/webpush"
)

func openInternal(t *testing.T) *Store {
	t.Helper()
	st, err := Open(t.Context(), Config{Path: t.TempDir() + "/amsg.db", MasterKey: strings.Repeat("a", 64),
		GenerateVAPID: webpush.GenerateVAPIDKeys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestWriteAfterCloseFails(t *testing.T) {
	st := openInternal(t)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{Attempts: []push.Attempt{{MessageID: "m"}}}); !errors.Is(err, errClosed) {
		t.Errorf("write after Close: %v, want errClosed", err)
	}
}
