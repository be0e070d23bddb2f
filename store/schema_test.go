package store_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

func TestSchemaReportsTheCatalogue(t *testing.T) {
	st, db := openWithPath(t, store.Config{})
	report, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if report.Version != report.LatestVersion || report.Version < 5 {
		t.Errorf("version %d of %d, want every migration applied", report.Version, report.LatestVersion)
	}
	tables := map[string][]string{}
	for _, tb := range report.Tables {
		tables[tb.Name] = tb.Columns
	}
	if got := tables["client_state"]; !slices.Equal(got, []string{"user_id", "namespace", "key", "value", "updated_at"}) {
		t.Errorf("client_state columns = %v", got)
	}
	if got := tables["message_outbox"]; !slices.Equal(got, []string{"id", "user_id", "message_id", "task_uuid", "session_id",
		"message_index", "total_messages", "payload", "created_at", "delivered_at", "acked_at"}) {
		t.Errorf("message_outbox columns = %v", got)
	}
	if _, ok := tables["sqlite_sequence"]; ok {
		t.Error("SQLite's internal tables are reported")
	}
	indexes := map[string]store.SchemaIndex{}
	for _, ix := range report.Indexes {
		indexes[ix.Name] = ix
	}
	for name, want := range map[string]store.SchemaIndex{
		"message_outbox_unacked": {Name: "message_outbox_unacked", Table: "message_outbox", Columns: []string{"user_id", "id"}, Partial: true, Origin: "c"},
		"sqlite_autoindex_message_outbox_1": {Name: "sqlite_autoindex_message_outbox_1", Table: "message_outbox",
			Columns: []string{"user_id", "message_id"}, Unique: true, Origin: "u"},
		"sqlite_autoindex_client_state_1": {Name: "sqlite_autoindex_client_state_1", Table: "client_state",
			Columns: []string{"user_id", "namespace", "key"}, Unique: true, Origin: "pk"},
	} {
		if got := indexes[name]; !reflect.DeepEqual(got, want) {
			t.Errorf("index %s = %+v, want %+v", name, got, want)
		}
	}

	// It is a report of the file, not a list kept in code: a new index shows.
	if _, err := db.Exec(`CREATE INDEX extra_probe ON client_state (updated_at)`); err != nil {
		t.Fatal(err)
	}
	again, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Indexes) != len(report.Indexes)+1 || fmt.Sprint(again.Tables) != fmt.Sprint(report.Tables) {
		t.Errorf("after adding an index: %d indexes (was %d)", len(again.Indexes), len(report.Indexes))
	}
}

// The schema report reads each dialect's own catalogue: the same tables and
// columns, and the indexes with their kind, whatever the dialect calls the
// ones it makes for constraints.
func TestSchemaReportOnEitherDialect(t *testing.T) {
	st := storetest.New(t)
	report, err := st.Schema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if report.Version != report.LatestVersion {
		t.Errorf("version %d of %d", report.Version, report.LatestVersion)
	}
	var names []string
	for _, tb := range report.Tables {
		names = append(names, tb.Name)
		if tb.Name == "client_state" && !slices.Equal(tb.Columns, []string{"user_id", "namespace", "key", "value", "updated_at"}) {
			t.Errorf("client_state columns = %v", tb.Columns)
		}
	}
	want := []string{"broadcasts", "client_state", "client_token_proofs", "cloud_owned", "cloud_owners", "cloud_records", "delivery_log", "idempotency_keys", "instances",
		"interrupts", "leader_leases", "llm_credentials", "message_events", "message_outbox", "proactive_pushes", "schema_version", "secrets", "subscriptions", "tasks", "transcript_entries",
		"transcript_sessions", "user_preferences", "webhook_cursor", "webhook_deliveries", "webhook_endpoints"}
	if !slices.Equal(names, want) {
		t.Errorf("tables = %v, want %v", names, want)
	}
	kinds := map[string]store.SchemaIndex{}
	for _, ix := range report.Indexes {
		ix.Name = ""
		kinds[ix.Table+" "+fmt.Sprint(ix.Columns)] = ix
	}
	for key, want := range map[string]store.SchemaIndex{
		"message_outbox [user_id id]":            {Table: "message_outbox", Columns: []string{"user_id", "id"}, Partial: true, Origin: "c"},
		"message_outbox [user_id message_id]":    {Table: "message_outbox", Columns: []string{"user_id", "message_id"}, Unique: true, Origin: "u"},
		"client_state [user_id namespace key]":   {Table: "client_state", Columns: []string{"user_id", "namespace", "key"}, Unique: true, Origin: "pk"},
		"transcript_entries [at]":                {Table: "transcript_entries", Columns: []string{"at"}, Origin: "c"},
		"subscriptions [user_id updated_at]":     {Table: "subscriptions", Columns: []string{"user_id", "updated_at"}, Origin: "c"},
		"message_events [user_id message_id id]": {Table: "message_events", Columns: []string{"user_id", "message_id", "id"}, Partial: true, Origin: "c"},
		"message_events [outbox_id]":             {Table: "message_events", Columns: []string{"outbox_id"}, Partial: true, Origin: "c"},
		"tasks [updated_at]":                     {Table: "tasks", Columns: []string{"updated_at"}, Partial: true, Origin: "c"},
		"transcript_sessions [owner session_id]": {Table: "transcript_sessions", Columns: []string{"owner", "session_id"}, Unique: true, Origin: "u"},
	} {
		if got := kinds[key]; !reflect.DeepEqual(got, want) {
			t.Errorf("index on %s = %+v, want %+v", key, got, want)
		}
	}
}
