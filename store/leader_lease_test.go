package store_test

import (
	"database/sql"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// Behind a transaction pooler alone (declared here; cmd/amsg's process test
// runs the real PgBouncer) leadership is a lease row: one holder; when the
// holder stops renewing and its lease expires, another instance takes it
// on its next check, and the old holder's renewal is fenced off.
func TestLeaseLeaderFailsOverAndFences(t *testing.T) {
	url := storetest.DatabaseURL(t)
	cfg := store.Config{DatabaseURL: url, DatabasePooler: "transaction"}
	a, b := storetest.Open(t, cfg), storetest.Open(t, cfg)
	if !a.PollOnly() || !b.PollOnly() {
		t.Fatal("a declared transaction pooler without a direct URL is not poll-only")
	}
	ctx := t.Context()
	la, lb := a.Leader("housekeeping", time.Hour), b.Leader("housekeeping", time.Hour)
	t.Cleanup(func() { la.Release(); lb.Release() })
	check := func(l store.Leader) bool { return leads(t, l) }
	if !check(la) || check(lb) || !check(la) {
		t.Fatal("the first candidate does not lead, the second does too, or the leader lost its renewal")
	}
	// The leader dies: nobody renews, and its hour passes.
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `UPDATE leader_leases SET expires_at = 0 WHERE name = 'housekeeping'`); err != nil {
		t.Fatal(err)
	}
	if !check(lb) {
		t.Fatal("the survivor did not take the expired lease")
	}
	if check(la) {
		t.Error("the old leader renewed a lease another instance took over")
	}
	var epoch int64
	if err := admin.QueryRowContext(ctx, `SELECT epoch FROM leader_leases WHERE name = 'housekeeping'`).Scan(&epoch); err != nil || epoch != 2 {
		t.Errorf("epoch after one takeover: %d (%v), want 2", epoch, err)
	}
	if err := lb.Release(); err != nil {
		t.Fatal(err)
	}
	if !check(la) {
		t.Error("a released lease was not free")
	}
}
