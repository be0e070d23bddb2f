package store_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

func TestMessageEventsTimelineAndFollow(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	at := clk.now.Add(-time.Minute)
	if err := st.AppendMessageEvents(ctx,
		store.MessageEvent{At: at, UserID: alice, MessageID: "m1", Type: store.EventQueued},
		store.MessageEvent{UserID: alice, MessageID: "m1", DeviceID: "7", Type: store.EventAccepted, Detail: json.RawMessage(`{"status":201}`)},
		store.MessageEvent{UserID: bob, MessageID: "m1", Type: store.EventQueued},
	); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, DeviceID: "7", Type: store.EventDeviceGone}); err != nil {
		t.Fatal(err)
	}

	got, err := st.MessageTimeline(ctx, alice, "m1")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.MessageEvent{
		{At: at, UserID: alice, MessageID: "m1", Type: store.EventQueued},
		{At: clk.now, UserID: alice, MessageID: "m1", DeviceID: "7", Type: store.EventAccepted, Detail: json.RawMessage(`{"status":201}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("MessageTimeline(alice, m1) = %+v, want %d events", got, len(want))
	}
	for i := range want {
		want[i].Seq = got[i].Seq
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("event %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if got[0].Seq >= got[1].Seq {
		t.Errorf("seqs %d, %d do not follow the order of recording", got[0].Seq, got[1].Seq)
	}
	if none, err := st.MessageTimeline(ctx, bob, "m2"); err != nil || none == nil || len(none) != 0 {
		t.Errorf("MessageTimeline of a message bob never had = %#v, %v; want an empty list", none, err)
	}

	all, err := st.MessageEventsAfter(ctx, 0, 3)
	if err != nil || len(all) != 3 {
		t.Fatalf("MessageEventsAfter(0, 3) = %+v, %v; want the first three", all, err)
	}
	if all[2].UserID != bob || all[0].Seq != got[0].Seq {
		t.Errorf("MessageEventsAfter(0, 3) = %+v; want alice's two then bob's", all)
	}
	rest, err := st.MessageEventsAfter(ctx, all[2].Seq, store.MaxMessageEventsPage)
	if err != nil || len(rest) != 1 || rest[0].Type != store.EventDeviceGone || rest[0].MessageID != "" {
		t.Errorf("MessageEventsAfter(cursor) = %+v, %v; want only the device.gone", rest, err)
	}
	if end, err := st.MessageEventsAfter(ctx, rest[0].Seq, 10); err != nil || len(end) != 0 {
		t.Errorf("MessageEventsAfter(last) = %+v, %v; want none", end, err)
	}
}

func TestMessageEventsRefuseInvalidInput(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	valid := store.MessageEvent{UserID: alice, MessageID: "m1", Type: store.EventShown}
	for name, bad := range map[string]store.MessageEvent{
		"unknown type":     {UserID: alice, MessageID: "m1", Type: "delivered"},
		"no user":          {MessageID: "m1", Type: store.EventShown},
		"long message id":  {UserID: alice, MessageID: strings.Repeat("m", 1025), Type: store.EventShown},
		"detail not JSON":  {UserID: alice, MessageID: "m1", Type: store.EventShown, Detail: json.RawMessage(`{"a":`)},
		"detail an array":  {UserID: alice, MessageID: "m1", Type: store.EventShown, Detail: json.RawMessage(`[1]`)},
		"detail too large": {UserID: alice, MessageID: "m1", Type: store.EventShown, Detail: json.RawMessage(`{"a":"` + strings.Repeat("x", store.MaxMessageEventDetailBytes) + `"}`)},
	} {
		if err := st.AppendMessageEvents(ctx, valid, bad); !errors.Is(err, store.ErrInvalidMessageEvent) {
			t.Errorf("%s: AppendMessageEvents = %v, want ErrInvalidMessageEvent", name, err)
		}
	}
	if got, err := st.MessageTimeline(ctx, alice, "m1"); err != nil || len(got) != 0 {
		t.Errorf("after refused batches the timeline is %+v, %v; want nothing written", got, err)
	}
	for _, bounds := range [][2]int{{-1, 10}, {0, 0}, {0, store.MaxMessageEventsPage + 1}} {
		if _, err := st.MessageEventsAfter(ctx, int64(bounds[0]), bounds[1]); !errors.Is(err, store.ErrInvalidMessageEvent) {
			t.Errorf("MessageEventsAfter(%d, %d) = %v, want ErrInvalidMessageEvent", bounds[0], bounds[1], err)
		}
	}
}

func TestMessageTimelineIsBounded(t *testing.T) {
	st := storetest.New(t)
	events := make([]store.MessageEvent, store.MaxTimelineEvents+5)
	for i := range events {
		events[i] = store.MessageEvent{UserID: alice, MessageID: "m1", DeviceID: "1", Type: store.EventShown}
	}
	events[0].Type = store.EventQueued
	if err := st.AppendMessageEvents(t.Context(), events...); err != nil {
		t.Fatal(err)
	}
	got, err := st.MessageTimeline(t.Context(), alice, "m1")
	if err != nil || len(got) != store.MaxTimelineEvents || got[0].Type != store.EventQueued {
		t.Errorf("MessageTimeline = %d events (%v), want the oldest %d starting with queued", len(got), err, store.MaxTimelineEvents)
	}
}

func TestPruneMessageEventsWithTheOutboxRetention(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now, OutboxMaxAge: time.Hour, MessageEventsMaxRows: 2})
	ctx := t.Context()
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: "old", Type: store.EventQueued}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour + time.Millisecond)
	for _, id := range []string{"a", "b", "c"} {
		if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: id, Type: store.EventQueued}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := st.Prune(ctx, clk.now, store.Retention{})
	if err != nil || p.MessageEvents != 2 {
		t.Fatalf("Prune = %+v, %v; want 2 message events deleted (one aged, one over the cap)", p, err)
	}
	left, err := st.MessageEventsAfter(ctx, 0, 10)
	if err != nil || len(left) != 2 || left[0].MessageID != "b" || left[1].MessageID != "c" {
		t.Errorf("after pruning the events are %+v, %v; want the newest two, b and c", left, err)
	}
}

func TestDeleteUserDeletesItsMessageEvents(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	if err := st.AppendMessageEvents(ctx,
		store.MessageEvent{UserID: alice, MessageID: "m1", Type: store.EventQueued},
		store.MessageEvent{UserID: bob, MessageID: "m1", Type: store.EventQueued}); err != nil {
		t.Fatal(err)
	}
	d, err := st.DeleteUser(ctx, alice)
	if err != nil || d.Events != 1 {
		t.Fatalf("DeleteUser = %+v, %v; want one message event deleted", d, err)
	}
	if got, _ := st.MessageTimeline(ctx, bob, "m1"); len(got) != 1 {
		t.Errorf("bob's timeline = %+v, want his event kept", got)
	}
}
