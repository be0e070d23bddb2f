package api

import "net/http"

// metricMethods are the request methods that get a label value of their
// own; any other method, which a client may make up freely, is "other", so
// made-up methods cannot grow the metrics without bound.
var metricMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// metricMethod is the label value of a request method (and its name in
// logs, which a made-up method must not flood either).
func metricMethod(method string) string {
	if metricMethods[method] {
		return method
	}
	return "other"
}
