package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/clocktest"
	"amsg/store"
	"amsg/store/storetest"
)

const cloudUser = "6f1c2f9e-5b0c-4d47-9a43-1d2e3f405162"

var (
	cloudEpoch = time.Date(2026, 10, 7, 8, 0, 0, 0, time.UTC)
	rei        = store.Owner{Type: "character", ID: "rei", Label: "Rei"}
)

// cloudFixture is a store holding one of everything for cloudUser: a
// device, a task and a state value owned by rei, its task's outbox row, a
// global state value, a transcript, delivery-log rows, preferences and an
// idempotency key.
type cloudFixture struct {
	st  *store.Store
	clk *clocktest.Clock
}

func newCloudFixture(t *testing.T) cloudFixture {
	t.Helper()
	f := cloudFixture{clk: clocktest.New(cloudEpoch)}
	f.st = storetest.Open(t, store.Config{Now: f.clk.Now})
	ctx := t.Context()
	device, err := f.st.PutSubscription(ctx, cloudUser, json.RawMessage(`{"endpoint":"https://push.example.org/secret-endpoint","keys":{"p256dh":"BAAA","auth":"AAAA"}}`), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.InsertTask(ctx, store.NewTask{UserID: cloudUser, UUID: "task-rei", MessageType: push.TypeFixed,
		NextSendAt: cloudEpoch.Add(time.Hour), Payload: json.RawMessage(`{"userMessage":"secret-task"}`),
		Owner: &store.OwnerClaim{Owner: &rei, Kind: "reminder"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.PutClientState(ctx, cloudUser, []store.ClientStateEntry{
		{Namespace: "character:rei", Key: "memory", Value: "secret-state", UpdatedAt: 1, Owner: &store.OwnerClaim{Owner: &rei}},
		{Namespace: "global", Key: "theme", Value: strings.Repeat("x", store.StateSliceBytes+1), UpdatedAt: 1},
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.AppendOutbox(ctx, cloudUser, []store.OutboxMessage{{MessageID: "msg_task_1@1_0", TaskUUID: "task-rei",
		Payload: json.RawMessage(`{"message":"secret-push"}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.AppendTranscript(ctx, store.TranscriptAppend{Owner: cloudUser, SessionID: "sess-1", After: store.AnySeq,
		Settings: json.RawMessage(`{"k":"secret-settings"}`)}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.RecordDeliveries(ctx, push.Bookkeeping{UserID: cloudUser, Attempts: []push.Attempt{{At: cloudEpoch,
		MessageID: "msg_task_1@1_0", UserID: cloudUser, DeviceID: device.ID, PushHost: "push.example.org", Try: 1, Status: 201, Outcome: push.OutcomeDelivered}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.UpdatePreferences(ctx, cloudUser, func(p store.Preferences) store.Preferences {
		p.TimeZone = "Asia/Tokyo"
		return p
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.st.ClaimIdempotencyKey(ctx, cloudUser, "idem-1", "hash"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.PutLLMCredentials(ctx, cloudUser, []store.CredentialEntry{{CredID: "char:rei/chat",
		Value: store.LLMCredential{APIURL: "https://llm.example.org/v1/chat/completions", APIKey: "secret-key", PrimaryModel: "m"},
		Owner: &store.OwnerClaim{Owner: &rei}}}); err != nil {
		t.Fatal(err)
	}
	return f
}

// byType counts an inventory's resources by type.
func byType(inv store.Inventory) map[string]int {
	counts := map[string]int{}
	for _, r := range inv.Resources {
		counts[r.Type]++
	}
	return counts
}

func TestCloudInventoryShowsEveryTypeWithoutContent(t *testing.T) {
	f := newCloudFixture(t)
	inv, err := f.st.CloudInventory(t.Context(), cloudUser)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"task": 1, "state": 2, "outbox": 1, "subscription": 1, "transcript": 1, "delivery-log": 1, "preference": 1, "idempotency-key": 1, "credential": 1}
	if got := byType(inv); !inv.Complete || len(got) != len(want) || func() bool {
		for k, v := range want {
			if got[k] != v {
				return true
			}
		}
		return false
	}() {
		t.Fatalf("inventory by type %v (complete %v), want %v", got, inv.Complete, want)
	}
	for _, r := range inv.Resources {
		owned := r.Type == "task" || r.Type == "outbox" || r.Type == "credential" || r.Label == "character:rei/memory"
		if owned != (r.Owner != nil && *r.Owner == rei) {
			t.Errorf("%s %s: owner %+v, owned by rei: %v", r.Type, r.Label, r.Owner, owned)
		}
		if r.Type == "state" && r.Label == "global/theme" && r.ByteSize <= store.StateSliceBytes {
			t.Errorf("the chunked value counts %d bytes, want its slices too", r.ByteSize)
		}
	}
	raw, err := json.Marshal(inv.Resources)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"secret", "endpoint", "llm.example.org"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the inventory shows %q: %s", secret, raw)
		}
	}
	again, err := f.st.CloudInventory(t.Context(), cloudUser)
	if err != nil || len(again.Resources) != len(inv.Resources) || again.Resources[0].ID != inv.Resources[0].ID {
		t.Errorf("resource ids are not stable: %v", err)
	}
}

// runCleanup plans req and starts it under key.
func runCleanup(t *testing.T, st *store.Store, req store.PlanRequest, key string) (store.CleanupOperation, error) {
	t.Helper()
	plan, err := st.CreateCleanupPlan(t.Context(), cloudUser, req)
	if err != nil {
		t.Fatal(err)
	}
	return st.StartCleanup(t.Context(), cloudUser, plan.ID, key)
}

func TestRetiringAnOwnerDeletesItsDataAndFencesLateWrites(t *testing.T) {
	f := newCloudFixture(t)
	ctx := t.Context()
	op, err := runCleanup(t, f.st, store.PlanRequest{Mode: store.ModeRetireOwner, Owner: &rei}, "retire-1")
	if err != nil || op.Status != store.OperationCompleted || op.FencedGeneration == nil || *op.FencedGeneration != 1 {
		t.Fatalf("retire: %+v, %v", op, err)
	}
	inv, err := f.st.CloudInventory(ctx, cloudUser)
	if err != nil {
		t.Fatal(err)
	}
	if got := byType(inv); got["task"] != 0 || got["outbox"] != 0 || got["credential"] != 0 || got["state"] != 1 || got["subscription"] != 1 {
		t.Fatalf("after retiring rei: %v, want its task, state, credential and outbox gone and the rest kept", got)
	}
	if _, err := f.st.PutLLMCredentials(ctx, cloudUser, []store.CredentialEntry{{CredID: "char:rei/chat",
		Value: store.LLMCredential{APIURL: "https://llm.example.org/v1/chat/completions", APIKey: "late", PrimaryModel: "m"},
		Owner: &store.OwnerClaim{Owner: &rei}}}); !errors.Is(err, store.ErrOwnerRetired) {
		t.Fatalf("a late credential of the retired owner: %v, want ErrOwnerRetired", err)
	}
	if _, ok, err := f.st.LLMCredential(ctx, cloudUser, "char:rei/chat"); ok || err != nil {
		t.Fatalf("the refused credential was stored: %v, %v", ok, err)
	}
	late := func(generation int64, owner *store.Owner) error {
		_, err := f.st.PutClientState(ctx, cloudUser, []store.ClientStateEntry{
			{Namespace: "global", Key: "late", Value: "v", UpdatedAt: 9},
			{Namespace: "character:rei", Key: "memory", Value: "late", UpdatedAt: 9, Owner: &store.OwnerClaim{Owner: owner, Generation: generation}}})
		return err
	}
	if err := late(0, &rei); !errors.Is(err, store.ErrOwnerRetired) {
		t.Fatalf("a late write of the old generation: %v, want ErrOwnerRetired", err)
	}
	if _, _, err := f.st.InsertTask(ctx, store.NewTask{UserID: cloudUser, UUID: "task-late", MessageType: push.TypeFixed,
		NextSendAt: cloudEpoch, Payload: json.RawMessage(`{}`), Owner: &store.OwnerClaim{Owner: &rei, Generation: 1}}); !errors.Is(err, store.ErrOwnerRetired) {
		t.Fatalf("a task for the retired owner: %v, want ErrOwnerRetired", err)
	}
	if entries, err := f.st.ClientState(ctx, cloudUser, "global"); err != nil || len(entries) != 1 {
		t.Fatalf("a refused write wrote %d global entries (%v), want only the old one", len(entries), err)
	}
	if _, err := f.st.Task(ctx, cloudUser, "task-late"); !errors.Is(err, store.ErrTaskNotFound) {
		t.Fatalf("the refused task was stored: %v", err)
	}
	state, err := f.st.RestoreCloudOwner(ctx, cloudUser, store.Owner{Type: rei.Type, ID: rei.ID})
	if err != nil || state.Retired || state.Generation != 2 || state.Owner.Label != "Rei" {
		t.Fatalf("restore: %+v, %v", state, err)
	}
	if again, err := f.st.RestoreCloudOwner(ctx, cloudUser, rei); err != nil || again.Generation != 2 {
		t.Fatalf("restoring an active owner: %+v, %v, want it unchanged", again, err)
	}
	if err := late(1, &rei); !errors.Is(err, store.ErrOwnerRetired) {
		t.Fatalf("a write of the retired generation after the restore: %v, want ErrOwnerRetired", err)
	}
	if err := late(2, &rei); err != nil {
		t.Fatalf("a write of the restored generation: %v", err)
	}
	other := store.Owner{Type: "character", ID: "asuka"}
	if err := late(0, &other); !errors.Is(err, store.ErrOwnerImmutable) {
		t.Fatalf("a write giving the value another owner: %v, want ErrOwnerImmutable", err)
	}
	if err := late(0, nil); !errors.Is(err, store.ErrOwnerRetired) {
		t.Fatalf("an ownerless write of an owned value without its generation: %v, want ErrOwnerRetired", err)
	}
	owners, unreadable, err := f.st.CloudOwners(ctx, cloudUser)
	if err != nil || unreadable != 0 || len(owners) != 1 || owners[0].Owner != rei || owners[0].Retired || owners[0].Generation != 2 {
		t.Fatalf("owners: %+v (%d unreadable), %v", owners, unreadable, err)
	}
}

func TestPurgeDeletesNothingWhenAResourceChanged(t *testing.T) {
	f := newCloudFixture(t)
	ctx := t.Context()
	plan, err := f.st.CreateCleanupPlan(ctx, cloudUser, store.PlanRequest{Mode: store.ModePurge, Owner: &rei})
	if err != nil || plan.Count != 4 {
		t.Fatalf("plan of rei's data: %d resources, %v; want its task, state, credential and outbox row", plan.Count, err)
	}
	if _, err := f.st.PutClientState(ctx, cloudUser, []store.ClientStateEntry{{Namespace: "character:rei", Key: "memory", Value: "newer", UpdatedAt: 5}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.StartCleanup(ctx, cloudUser, plan.ID, "purge-1"); !errors.Is(err, store.ErrCloudPlanChanged) {
		t.Fatalf("a plan of changed data: %v, want ErrCloudPlanChanged", err)
	}
	if inv, err := f.st.CloudInventory(ctx, cloudUser); err != nil || len(inv.Resources) != 10 {
		t.Fatalf("after a refused purge %d resources (%v), want all 10", len(inv.Resources), err)
	}
	op, err := runCleanup(t, f.st, store.PlanRequest{Mode: store.ModePurge, Owner: &rei, Types: []string{"state"}}, "purge-2")
	if err != nil || op.Status != store.OperationCompleted || op.Counts[1] != (store.OperationCount{Type: "state", Deleted: 1}) {
		t.Fatalf("purge of rei's state: %+v, %v", op, err)
	}
	if entries, err := f.st.ClientState(ctx, cloudUser, "character:rei"); err != nil || len(entries) != 0 {
		t.Fatalf("rei's state after the purge: %v, %v", entries, err)
	}
	again, err := f.st.StartCleanup(ctx, cloudUser, op.PlanID, "purge-2")
	if err != nil || again.ID != op.ID {
		t.Fatalf("the same idempotency key again: %+v, %v; want operation %s", again, err, op.ID)
	}
	other, err := f.st.CreateCleanupPlan(ctx, cloudUser, store.PlanRequest{Mode: store.ModePurge, Owner: &rei})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.StartCleanup(ctx, cloudUser, other.ID, "purge-2"); !errors.Is(err, store.ErrIdempotencyConflict) {
		t.Fatalf("the key with another plan: %v, want ErrIdempotencyConflict", err)
	}
	f.clk.Add(store.PlanTTL + time.Second)
	if _, err := f.st.StartCleanup(ctx, cloudUser, other.ID, "purge-3"); !errors.Is(err, store.ErrCloudPlanExpired) {
		t.Fatalf("an expired plan: %v, want ErrCloudPlanExpired", err)
	}
	if inv, err := f.st.CloudInventory(ctx, cloudUser); err != nil || byType(inv)["task"] != 1 {
		t.Fatalf("refused operations deleted rei's task: %v", err)
	}
}

func TestAnInterruptedRetirementIsFinishedByHousekeeping(t *testing.T) {
	f := newCloudFixture(t)
	ctx := t.Context()
	plan, err := f.st.CreateCleanupPlan(ctx, cloudUser, store.PlanRequest{Mode: store.ModeRetireOwner, Owner: &rei})
	if err != nil {
		t.Fatal(err)
	}
	// More values than an inventory lists make it incomplete: the attempt
	// must not delete on a partial view.
	for i := 0; i <= store.MaxResourcesPerType; i += store.MaxStateEntries {
		batch := make([]store.ClientStateEntry, store.MaxStateEntries)
		for j := range batch {
			batch[j] = store.ClientStateEntry{Namespace: "bulk", Key: fmt.Sprintf("k%05d", i+j), Value: "v", UpdatedAt: 1}
		}
		if _, err := f.st.PutClientState(ctx, cloudUser, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.st.StartCleanup(ctx, cloudUser, plan.ID, "retire-1"); !errors.Is(err, store.ErrRetirementNotConfirmed) {
		t.Fatalf("a retirement on an incomplete inventory: %v, want ErrRetirementNotConfirmed", err)
	}
	ops, _, err := f.st.CleanupOperations(ctx, cloudUser)
	if err != nil || len(ops) != 1 || ops[0].Status != store.OperationPending || len(ops[0].Errors) != 1 || ops[0].Errors[0].Code != "CLOUD_INVENTORY_INCOMPLETE" {
		t.Fatalf("operations: %+v, %v", ops, err)
	}
	if n, err := f.st.ContinueCleanups(ctx); err != nil || n != 0 {
		t.Fatalf("housekeeping during the backoff ran %d (%v), want none", n, err)
	}
	if state, err := f.st.CloudOwner(ctx, cloudUser, rei); err != nil || state.Retired {
		t.Fatalf("a failed attempt retired the owner: %+v, %v", state, err)
	}
	if _, err := f.st.RestoreCloudOwner(ctx, cloudUser, rei); !errors.Is(err, store.ErrCleanupInProgress) {
		t.Fatalf("restoring an owner whose retirement is pending: %v, want ErrCleanupInProgress", err)
	}
	if _, err := f.st.DeleteClientState(ctx, cloudUser); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(time.Minute)
	if n, err := f.st.ContinueCleanups(ctx); err != nil || n != 1 {
		t.Fatalf("housekeeping after the backoff ran %d (%v), want 1", n, err)
	}
	op, err := f.st.CleanupOperation(ctx, cloudUser, ops[0].ID)
	if err != nil || op.Status != store.OperationCompleted || op.Counts[0] != (store.OperationCount{Type: "task", Deleted: 1}) {
		t.Fatalf("the operation after housekeeping: %+v, %v", op, err)
	}
	if _, err := f.st.RestoreCloudOwner(ctx, cloudUser, rei); err != nil {
		t.Fatalf("restore after the retirement finished: %v", err)
	}
}

func TestResourcePagesFollowTheirSnapshot(t *testing.T) {
	f := newCloudFixture(t)
	ctx := t.Context()
	var seen []string
	cursor := ""
	for {
		page, err := f.st.CloudResourcePage(ctx, cloudUser, store.ResourceFilter{}, cursor, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Resources {
			seen = append(seen, r.ID)
		}
		if page.Summary == nil || page.Summary.Total != 10 {
			t.Fatalf("page summary %+v, want the snapshot's 10 resources", page.Summary)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		// A write after the snapshot does not move its pages.
		if _, err := f.st.PutClientState(ctx, cloudUser, []store.ClientStateEntry{{Namespace: "n", Key: cursor, Value: "v", UpdatedAt: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 10 {
		t.Fatalf("pages held %d resources, want 10", len(seen))
	}
	if _, err := f.st.CloudResourcePage(ctx, cloudUser, store.ResourceFilter{Type: "task"}, cursor, 3); !errors.Is(err, store.ErrCloudCursorExpired) {
		t.Fatalf("a cursor with another filter: %v", err)
	}
	for _, bad := range []string{"x", cursor[:36] + ":99", "00000000-0000-4000-8000-000000000000:0"} {
		if _, err := f.st.CloudResourcePage(ctx, cloudUser, store.ResourceFilter{}, bad, 3); !errors.Is(err, store.ErrCloudCursorInvalid) {
			t.Errorf("cursor %q: %v, want ErrCloudCursorInvalid", bad, err)
		}
	}
	f.clk.Add(store.PlanTTL + time.Second)
	if _, err := f.st.CloudResourcePage(ctx, cloudUser, store.ResourceFilter{}, cursor, 3); !errors.Is(err, store.ErrCloudCursorExpired) {
		t.Fatalf("an expired cursor: %v", err)
	}
	f.clk.Add(time.Hour)
	if n, err := f.st.PruneCloudRecords(ctx); err != nil || n == 0 {
		t.Fatalf("pruning expired snapshots deleted %d (%v)", n, err)
	}
}

// populateCloudData gives alice a retired owner (with its operation) and an
// owned task, for the copy test.
func populateCloudData(t *testing.T, st *store.Store, clk *clock) {
	t.Helper()
	ctx := t.Context()
	asuka := store.Owner{Type: "character", ID: "asuka"}
	plan, err := st.CreateCleanupPlan(ctx, alice, store.PlanRequest{Mode: store.ModeRetireOwner, Owner: &asuka})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartCleanup(ctx, alice, plan.ID, "retire-asuka"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.InsertTask(ctx, store.NewTask{UserID: alice, UUID: taskUUID(4), MessageType: push.TypeFixed,
		NextSendAt: clk.Now().Add(time.Hour), Payload: json.RawMessage(`{"n":4}`), Owner: &store.OwnerClaim{Owner: &rei}}); err != nil {
		t.Fatal(err)
	}
}

// Ownership ends with its resource: a value deleted by an ordinary route
// and written again without an owner has none, housekeeping drops the
// records of deleted resources, and deleting the user drops the rest.
func TestOwnershipEndsWithItsResource(t *testing.T) {
	f := newCloudFixture(t)
	ctx := t.Context()
	if _, err := f.st.DeleteClientState(ctx, cloudUser); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.PutClientState(ctx, cloudUser, []store.ClientStateEntry{{Namespace: "character:rei", Key: "memory", Value: "new", UpdatedAt: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.DeleteTask(ctx, cloudUser, "task-rei"); err != nil {
		t.Fatal(err)
	}
	inv, err := f.st.CloudInventory(ctx, cloudUser)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range inv.Resources {
		if r.Owner != nil && r.Type != "outbox" && r.Type != "credential" {
			t.Errorf("%s %s kept the owner of a deleted resource: %+v", r.Type, r.Label, r.Owner)
		}
	}
	pruned, err := f.st.Prune(ctx, f.clk.Now(), store.Retention{})
	if err != nil || pruned.CloudRecords != 1 {
		t.Fatalf("housekeeping pruned %d cloud rows (%v), want the deleted task's ownership", pruned.CloudRecords, err)
	}
	if _, err := runCleanup(t, f.st, store.PlanRequest{Mode: store.ModeRetireOwner, Owner: &rei}, "retire"); err != nil {
		t.Fatal(err)
	}
	d, err := f.st.DeleteUser(ctx, cloudUser)
	if err != nil || d.CloudData != 2 {
		t.Fatalf("DeleteUser removed %d cloud rows (%v), want the owner and the operation", d.CloudData, err)
	}
}

// Two requests starting one plan with one idempotency key at once get one
// operation between them.
func TestConcurrentStartsShareTheOperation(t *testing.T) {
	f := newCloudFixture(t)
	plan, err := f.st.CreateCleanupPlan(t.Context(), cloudUser, store.PlanRequest{Mode: store.ModePurge, Owner: &rei})
	if err != nil {
		t.Fatal(err)
	}
	ids := make(chan string, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			op, err := f.st.StartCleanup(t.Context(), cloudUser, plan.ID, "same-key")
			ids <- op.ID
			errs <- err
		}()
	}
	a, b := <-ids, <-ids
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if a != b || a == "" {
		t.Fatalf("operations %q and %q, want one", a, b)
	}
	if ops, _, err := f.st.CleanupOperations(t.Context(), cloudUser); err != nil || len(ops) != 1 || ops[0].Status != store.OperationCompleted {
		t.Fatalf("operations %+v, %v", ops, err)
	}
}

// A user keeps a bounded number of snapshots: reading the first page again
// and again replaces the oldest.
func TestSnapshotsAreBounded(t *testing.T) {
	f := newCloudFixture(t)
	var cursors []string
	for i := range 9 {
		f.clk.Add(time.Second)
		page, err := f.st.CloudResourcePage(t.Context(), cloudUser, store.ResourceFilter{}, "", 1)
		if err != nil || page.NextCursor == nil {
			t.Fatalf("read %d: %v", i, err)
		}
		cursors = append(cursors, *page.NextCursor)
	}
	if _, err := f.st.CloudResourcePage(t.Context(), cloudUser, store.ResourceFilter{}, cursors[0], 1); !errors.Is(err, store.ErrCloudCursorInvalid) {
		t.Fatalf("the oldest of 9 snapshots: %v, want it replaced", err)
	}
	for _, c := range cursors[1:] {
		if _, err := f.st.CloudResourcePage(t.Context(), cloudUser, store.ResourceFilter{}, c, 1); err != nil {
			t.Fatalf("a recent snapshot: %v", err)
		}
	}
}
