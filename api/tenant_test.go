package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"amsg/store/storetest"
)

func TestInitTenantReportsTheSchemaIdempotently(t *testing.T) {
	s := newTestServer(t, Config{ClientToken: "tok"}, Deps{})
	header := map[string]string{"X-Client-Token": "tok"}
	first := send(s, http.MethodPost, "/api/v1/init-tenant", `{"ignored":true}`, header)
	second := send(s, http.MethodPost, "/init-tenant/", "not even JSON", header)
	if first.status != http.StatusOK || second.status != http.StatusOK || first.body != second.body {
		t.Fatalf("two calls differ:\n%d %s\n%d %s", first.status, first.body, second.status, second.body)
	}
	var resp struct {
		Success bool `json:"success"`
		Data    struct {
			TenantID string     `json:"tenantId"`
			Schema   schemaJSON `json:"schema"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(first.body), &resp); err != nil {
		t.Fatal(err)
	}
	schema := resp.Data.Schema
	if !resp.Success || resp.Data.TenantID != "single" || schema.Columns == nil || len(schema.Columns) != 0 || schema.IndexesFailed != 0 {
		t.Errorf("init-tenant = %s", first.body)
	}
	if schema.Version != schema.LatestVersion || schema.Version == 0 {
		t.Errorf("version %d of %d, want all migrations applied", schema.Version, schema.LatestVersion)
	}
	columns := 0
	var tables []string
	for _, tb := range schema.Tables {
		columns += len(tb.Columns)
		tables = append(tables, tb.Name)
	}
	if schema.ColumnsCreated != columns || !slices.Contains(tables, "client_state") || !slices.Contains(tables, "message_outbox") {
		t.Errorf("columnsCreated %d over tables %v (%d columns)", schema.ColumnsCreated, tables, columns)
	}
	indexes := map[string]schemaIndexJSON{}
	for _, ix := range schema.Indexes {
		indexes[ix.Name] = ix
		if ix.Status != "success" {
			t.Errorf("index %+v not reported as success", ix)
		}
	}
	if schema.IndexesCreated != len(schema.Indexes) {
		t.Errorf("indexesCreated %d, %d listed", schema.IndexesCreated, len(schema.Indexes))
	}
	for name, want := range map[string]schemaIndexJSON{
		"message_outbox_unacked":            {"message_outbox_unacked", "success", "index on message_outbox (user_id, id), partial", false},
		"sqlite_autoindex_message_outbox_1": {"sqlite_autoindex_message_outbox_1", "success", "unique constraint on message_outbox (user_id, message_id)", true},
		"sqlite_autoindex_client_state_1":   {"sqlite_autoindex_client_state_1", "success", "primary key of client_state (user_id, namespace, key)", true},
	} {
		if indexes[name] != want {
			t.Errorf("index %s = %+v, want %+v", name, indexes[name], want)
		}
	}
	wantBody(t, "without the client token", send(s, http.MethodPost, "/api/v1/init-tenant", "", nil), 401,
		`{"success":false,"error":{"code":"INVALID_CLIENT_TOKEN","message":"共享密钥无效或缺失"}}`)
}

func TestInitTenantFailsAsInitFailed(t *testing.T) {
	st := storetest.New(t)
	s := newTestServer(t, Config{}, Deps{Store: st})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	wantBody(t, "closed store", send(s, http.MethodPost, "/api/v1/init-tenant", "", nil), 500,
		`{"success":false,"error":{"code":"INIT_FAILED","message":"数据库结构检查失败"}}`)
}
