package store

import (
	"slices"
	"strings"
	"testing"

	"amsg/push/webpush"
)

// A table a migration adds must be copied by CopyTo or said not to be.
func TestCopyToKnowsEveryTable(t *testing.T) {
	st, err := Open(t.Context(), Config{Path: t.TempDir() + "/amsg.db", MasterKey: strings.Repeat("a", 64),
		GenerateVAPID: webpush.GenerateVAPIDKeys})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	report, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range report.Tables {
		if !slices.Contains(copiedTables, table.Name) && !slices.Contains(notCopiedTables, table.Name) {
			t.Errorf("table %s is neither in copiedTables nor in notCopiedTables", table.Name)
		}
	}
}
