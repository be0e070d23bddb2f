package store_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// benchCloudUser fills a SQLite store with one user holding n tasks, n
// client-state values and n outbox rows, half of each owned by rei.
func benchCloudUser(b *testing.B, n int) *store.Store {
	b.Helper()
	st := storetest.Open(b, store.Config{Path: filepath.Join(b.TempDir(), "amsg.db")})
	ctx := b.Context()
	owner := func(i int) *store.OwnerClaim {
		if i%2 == 0 {
			return &store.OwnerClaim{Owner: &rei}
		}
		return nil
	}
	for i := range n {
		if _, _, err := st.InsertTask(ctx, store.NewTask{UserID: cloudUser, UUID: fmt.Sprintf("task-%d", i), MessageType: push.TypeFixed,
			NextSendAt: cloudEpoch.Add(time.Hour), Payload: json.RawMessage(`{"userMessage":"hello"}`), Owner: owner(i)}); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < n; i += store.MaxStateEntries {
		var batch []store.ClientStateEntry
		for j := i; j < min(i+store.MaxStateEntries, n); j++ {
			batch = append(batch, store.ClientStateEntry{Namespace: "ns", Key: fmt.Sprintf("k%d", j), Value: "value", UpdatedAt: 1, Owner: owner(j)})
		}
		if _, err := st.PutClientState(ctx, cloudUser, batch); err != nil {
			b.Fatal(err)
		}
	}
	var outbox []store.OutboxMessage
	for i := range n {
		outbox = append(outbox, store.OutboxMessage{MessageID: fmt.Sprintf("m%d", i), TaskUUID: fmt.Sprintf("task-%d", i), Payload: json.RawMessage(`{"message":"hi"}`)})
	}
	if err := st.AppendOutbox(ctx, cloudUser, outbox); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkCloudInventory reads the whole inventory of a user holding
// 3 000 resources.
func BenchmarkCloudInventory(b *testing.B) {
	st := benchCloudUser(b, 1000)
	for b.Loop() {
		inv, err := st.CloudInventory(b.Context(), cloudUser)
		if err != nil || len(inv.Resources) != 3000 {
			b.Fatalf("%d resources, %v", len(inv.Resources), err)
		}
	}
}

// BenchmarkRetireOwner plans and carries out the retirement of an owner of
// 1 500 of a user's 3 000 resources, one transaction deleting them all.
func BenchmarkRetireOwner(b *testing.B) {
	for i := range b.N {
		b.StopTimer()
		st := benchCloudUser(b, 1000)
		b.StartTimer()
		plan, err := st.CreateCleanupPlan(b.Context(), cloudUser, store.PlanRequest{Mode: store.ModeRetireOwner, Owner: &rei})
		if err != nil {
			b.Fatal(err)
		}
		op, err := st.StartCleanup(b.Context(), cloudUser, plan.ID, fmt.Sprint(i))
		if err != nil || op.Status != store.OperationCompleted {
			b.Fatalf("%+v, %v", op, err)
		}
	}
}
