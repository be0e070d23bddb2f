package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument describes every route the server has (an OpenAPI 3.1
// document); TestOpenAPIDocumentsEveryRoute holds it to the router.
//
//go:embed openapi.json
var openAPIDocument []byte

// handleOpenAPI serves the document. It needs no credentials: it says
// which routes exist, not anything stored behind them.
func handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(openAPIDocument)
}
