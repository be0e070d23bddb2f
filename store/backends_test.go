package store_test

import (
	"os"
	"testing"

	"amsg/store/storetest"
)

// Every test of the package runs on SQLite, then again with the stores it
// opens through storetest on PostgreSQL: one conformance suite, two
// backends.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		code = storetest.RunOnPostgres()
	}
	os.Exit(code)
}
