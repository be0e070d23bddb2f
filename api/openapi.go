package api

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"amsg/push/errcode"
)

// openAPIDocument describes every route the server has (an OpenAPI 3.1
// document); TestOpenAPIDocumentsEveryRoute holds it to the router.
//
//go:embed openapi.json
var openAPIDocument []byte

// servedOpenAPI is the document as served: its ErrorCode schema lists the
// codes of the error table (push/errcode), so the document names every code without a second
// list to keep in step.
var servedOpenAPI = sync.OnceValue(func() []byte {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		panic("api: openapi.json: " + err.Error()) // a test reads it
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	schemas["ErrorCode"].(map[string]any)["enum"] = errorCodes()
	out, err := json.Marshal(doc)
	if err != nil {
		panic("api: openapi.json: " + err.Error())
	}
	return out
})

// errorCodes are the codes of the error table an answer can carry (those
// with a status), sorted.
func errorCodes() []string {
	var codes []string
	for _, m := range errcode.Table() {
		if m.Status() != 0 {
			codes = append(codes, m.Code())
		}
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// handleOpenAPI serves the document. It needs no credentials: it says
// which routes exist, not anything stored behind them.
func handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(servedOpenAPI())
}
