package store_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// A namespace of more roots than a page, with values short enough to ride
// in the page, values read alone and chunked values, walks back whole and in
// key order, each piece no larger than a slice.
func TestWalkClientStateReadsEveryValueInPieces(t *testing.T) {
	st := storetest.Open(t, store.Config{})
	var want []store.ClientStateEntry
	for i := range 150 {
		value := fmt.Sprint("v", i)
		switch i % 50 {
		case 7:
			value = strings.Repeat("记", 3000) // over a page's inline bound, one row
		case 9:
			value = strings.Repeat("x😀", store.StateSliceBytes/2) // chunked
		}
		e := store.ClientStateEntry{Namespace: "ns", Key: fmt.Sprintf("k%03d", i), Value: value, UpdatedAt: int64(i + 1)}
		putState(t, st, alice, e)
		want = append(want, e)
	}
	var got []store.ClientStateEntry
	err := st.WalkClientState(t.Context(), alice, "ns", func(key string, updatedAt int64, text store.StateValueText) error {
		var value strings.Builder
		err := text(func(piece []byte) error {
			if len(piece) > store.StateSliceBytes {
				t.Errorf("%s: a piece of %d bytes", key, len(piece))
			}
			value.Write(piece)
			return nil
		})
		got = append(got, store.ClientStateEntry{Namespace: "ns", Key: key, Value: value.String(), UpdatedAt: updatedAt})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("walked %d values, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("value %d: %s (%d bytes, updated %d), want %s (%d bytes, updated %d)",
				i, got[i].Key, len(got[i].Value), got[i].UpdatedAt, want[i].Key, len(want[i].Value), want[i].UpdatedAt)
		}
	}
}

// A chunked value rewritten between the walk finding it and reading its
// text ends the walk with ErrStateChanged, never a torn value.
func TestWalkClientStateReportsAValueChangedUnderIt(t *testing.T) {
	st := storetest.Open(t, store.Config{})
	big := strings.Repeat("a", store.StateSliceBytes*2)
	putState(t, st, alice, store.ClientStateEntry{Namespace: "ns", Key: "k", Value: big, UpdatedAt: 1})
	err := st.WalkClientState(t.Context(), alice, "ns", func(key string, _ int64, text store.StateValueText) error {
		putState(t, st, alice, store.ClientStateEntry{Namespace: "ns", Key: "k", Value: strings.Repeat("b", len(big)), UpdatedAt: 2})
		return text(func([]byte) error { return nil })
	})
	if !errors.Is(err, store.ErrStateChanged) {
		t.Fatalf("walk over a rewritten value: %v, want ErrStateChanged", err)
	}
	// ClientState reads it again and gets the new value whole.
	if got := getState(t, st, alice, "ns"); len(got) != 1 || got[0].Value != strings.Repeat("b", len(big)) {
		t.Fatalf("read again: %d entries", len(got))
	}
}
