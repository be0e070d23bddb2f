package api

import (
	"fmt"
	"net/http"
	"strings"

	"amsg/push/errcode"
	"amsg/store"
)

// tenantFeature serves the single-user POST /init-tenant. The store applies
// its migrations when it opens, so there is nothing left to create: the
// endpoint reports the schema as the database holds it, in the standard's
// shape, and answers the same every time.
func (s *Server) tenantFeature() feature {
	return feature{routes: []route{{http.MethodPost, "init-tenant", authClient, s.handleInitTenant}}}
}

// singleTenantID is the tenant id the standard's single-user server reports.
const singleTenantID = "single"

// errInitFailed keeps the cause (which may name files) in the log only.
var errInitFailed = fail(errcode.InitFailed)

type schemaIndexJSON struct {
	Name        string `json:"name"`
	Status      string `json:"status"`
	Description string `json:"description"`
	Critical    bool   `json:"critical"`
}

type schemaTableJSON struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
}

// schemaJSON is the standard's schema report, {columnsCreated,
// indexesCreated, indexesFailed, columns, indexes}, then amsg's additions:
// the migration version and the tables with their columns.
type schemaJSON struct {
	// ColumnsCreated counts the columns of every table.
	ColumnsCreated int `json:"columnsCreated"`
	// IndexesCreated counts the indexes present; IndexesFailed is 0: a
	// migration that cannot create its indexes fails as a whole, and the
	// store does not open.
	IndexesCreated int `json:"indexesCreated"`
	IndexesFailed  int `json:"indexesFailed"`
	// Columns lists columns this call added: none, the store migrated when
	// it opened.
	Columns       []string          `json:"columns"`
	Indexes       []schemaIndexJSON `json:"indexes"`
	Version       int               `json:"version"`
	LatestVersion int               `json:"latestVersion"`
	Tables        []schemaTableJSON `json:"tables"`
}

func (s *Server) handleInitTenant(w http.ResponseWriter, r *http.Request) error {
	report, err := s.deps.Store.Schema(r.Context())
	if err != nil {
		s.log.ErrorContext(r.Context(), "init-tenant: schema report failed", "err", err)
		return errInitFailed
	}
	schema := schemaJSON{
		Columns:        []string{},
		Indexes:        make([]schemaIndexJSON, len(report.Indexes)),
		Version:        report.Version,
		LatestVersion:  report.LatestVersion,
		Tables:         make([]schemaTableJSON, len(report.Tables)),
		IndexesCreated: len(report.Indexes),
	}
	for i, t := range report.Tables {
		schema.Tables[i] = schemaTableJSON(t)
		schema.ColumnsCreated += len(t.Columns)
	}
	for i, ix := range report.Indexes {
		schema.Indexes[i] = schemaIndexJSON{Name: ix.Name, Status: "success", Description: describeIndex(ix), Critical: ix.Unique}
	}
	writeData(w, http.StatusOK, struct {
		TenantID string     `json:"tenantId"`
		Schema   schemaJSON `json:"schema"`
	}{singleTenantID, schema})
	return nil
}

// describeIndex says what an index is over, in the catalogue's terms.
func describeIndex(ix store.SchemaIndex) string {
	kind := "index on"
	switch {
	case ix.Origin == "pk":
		kind = "primary key of"
	case ix.Origin == "u":
		kind = "unique constraint on"
	case ix.Unique:
		kind = "unique index on"
	}
	d := fmt.Sprintf("%s %s (%s)", kind, ix.Table, strings.Join(ix.Columns, ", "))
	if ix.Partial {
		d += ", partial"
	}
	return d
}
