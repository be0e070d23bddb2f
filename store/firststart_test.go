package store_test

import (
	"sync"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// Instances that start together on a new database migrate it once and
// agree on one master key and one VAPID pair: whichever first start
// commits, the others read.
func TestConcurrentFirstStartsAgreeOnOneSetOfSecrets(t *testing.T) {
	path, url := storetest.Database(t)
	if url == "" {
		// Opening one new file at once can fail to switch it to WAL with
		// SQLITE_BUSY; amsg never does: its data directory is locked.
		t.Skip("SQLite has one process per data directory")
	}
	const instances = 6
	secrets := make([]store.Secrets, instances)
	var wg sync.WaitGroup
	for i := range instances {
		wg.Go(func() {
			st, err := store.Open(t.Context(), store.Config{Path: path, DatabaseURL: url, GenerateVAPID: storetest.GenerateVAPID})
			if err != nil {
				t.Errorf("instance %d: %v", i, err)
				return
			}
			secrets[i] = st.Secrets()
			if err := st.Close(); err != nil {
				t.Errorf("instance %d: close: %v", i, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, sec := range secrets {
		if sec != secrets[0] || sec.MasterKey == "" || sec.VAPIDPublicKey == "" {
			t.Errorf("instance %d has %v, instance 0 %v", i, sec, secrets[0])
		}
	}
	st := storetest.Open(t, store.Config{Path: path, DatabaseURL: url, MasterKey: secrets[0].MasterKey,
		VAPIDPublicKey: secrets[0].VAPIDPublicKey, VAPIDPrivateKey: secrets[0].VAPIDPrivateKey})
	report, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if report.Version != report.LatestVersion {
		t.Errorf("schema version %d, want %d", report.Version, report.LatestVersion)
	}
}
