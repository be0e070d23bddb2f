package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// BenchmarkPendingTasks is schedule-message's task-quota check for a user
// with 1 000 pending tasks beside another user's 500
// (on PostgreSQL too with AMSG_TEST_STORE_BACKEND=postgres and
// AMSG_TEST_DATABASE_URL):
//
//	go test -run '^$' -bench PendingTasks ./store/
func BenchmarkPendingTasks(b *testing.B) {
	st := storetest.New(b)
	payload := json.RawMessage(`{"contactName":"Rei","messageType":"fixed","userMessage":"hi"}`)
	due := time.Now().Add(time.Hour)
	for i := range 1500 {
		user, next := alice, due
		if i%3 == 1 {
			user = bob
		}
		if _, _, err := st.InsertTask(b.Context(), store.NewTask{UserID: user, UUID: push.NewUUID(), MessageType: push.TypeFixed,
			NextSendAt: next, Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if n, err := st.PendingTasks(b.Context(), alice); err != nil || n != 1000 {
			b.Fatalf("PendingTasks = %d, %v; want 1000", n, err)
		}
	}
}
