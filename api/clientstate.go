package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"amsg/push/errcode"
	"amsg/store"
)

// clientStateFeature is the browser's cloud mirror of its own state:
// PUT /client-state writes (or, with value null, deletes) a batch
// last-write-wins, GET reads one namespace, DELETE wipes one namespace
// (?namespace=) or the user's whole state, and GET
// /client-state/namespaces lists what each namespace holds, so an app can
// find and delete those it no longer has. Values over 204800 bytes are chunked by the
// store, invalid entries are rejected one by one, and a version (or
// builtAt) orders writes by content instead of arrival.
func (s *Server) clientStateFeature() feature {
	return feature{
		capabilities: []string{"client-state", "client-state-chunking", "client-state-partial-failure", "client-state-version-guard",
			"client-state-delete-namespace", "client-state-delete", "client-state-namespaces"},
		routes: []route{
			{http.MethodPut, "client-state", authClient, s.handlePutClientState},
			{http.MethodGet, "client-state", authClient, s.handleGetClientState},
			{http.MethodDelete, "client-state", authClient, s.handleDeleteClientState},
			{http.MethodGet, "client-state/namespaces", authClient, s.handleGetClientStateNamespaces},
		},
	}
}

var (
	errInvalidStateEntries    = fail(errcode.InvalidStateEntries)
	errNamespaceRequired      = fail(errcode.NamespaceRequired)
	errStateNamespaceReserved = fail(errcode.StateNamespaceReserved)
	errInvalidNamespaceLimit  = fail(errcode.InvalidNamespaceLimit.With(store.MaxStateNamespaces))
	errStateNamespaceTooLong  = fail(errcode.StateNamespaceLength.With(store.MaxStateNamespaceLen))
)

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: the largest
// integer every client can write and read back exactly.
const maxSafeInteger = 1<<53 - 1

// stateRejection reports one entry PUT /client-state refused while writing
// the others; its key order is upstream's.
type stateRejection struct {
	Index     int     `json:"index"`
	Code      string  `json:"code"`
	Message   string  `json:"message"`
	Bytes     *int    `json:"bytes,omitempty"`
	MaxBytes  *int    `json:"maxBytes,omitempty"`
	Namespace *string `json:"namespace,omitempty"`
	Key       *string `json:"key,omitempty"`
}

func (s *Server) handlePutClientState(w http.ResponseWriter, r *http.Request) error {
	userID, payload, err := s.decryptRequestWithin(w, r, s.cfg.MaxClientStateBodyBytes)
	if err != nil {
		return err
	}
	entries, rejected, err := decodeStateEntries(payload, s.deps.Store.MaxStateValueBytes())
	if err != nil {
		return err
	}
	if err := s.admitClientState(r.Context(), userID, entries); err != nil {
		return err
	}
	put, err := s.deps.Store.PutClientState(r.Context(), userID, entries)
	if err != nil {
		return ownerWriteError(err)
	}
	type stateKey struct {
		Namespace string `json:"namespace"`
		Key       string `json:"key"`
	}
	resp := struct {
		Upserted int `json:"upserted"`
		Skipped  int `json:"skipped"`
		// Deleted is there when the batch held deletes, so a batch of
		// writes answers as before deletes existed.
		Deleted        *int             `json:"deleted,omitempty"`
		SkippedEntries []stateKey       `json:"skippedEntries,omitempty"`
		Rejected       []stateRejection `json:"rejected,omitempty"`
	}{Upserted: put.Upserted, Skipped: len(put.Skipped), Rejected: rejected}
	if slices.ContainsFunc(entries, func(e store.ClientStateEntry) bool { return e.Delete }) {
		resp.Deleted = &put.Deleted
	}
	for _, k := range put.Skipped {
		resp.SkippedEntries = append(resp.SkippedEntries, stateKey(k))
	}
	writeData(w, http.StatusOK, resp)
	return nil
}

// decodeStateEntries reads {entries:[…]} from a decrypted PUT body with the
// standard's checks: the array as a whole (INVALID_STATE_ENTRIES,
// TOO_MANY_STATE_ENTRIES) fails the request; a bad entry is rejected alone
// and the others are returned for writing.
func decodeStateEntries(payload json.RawMessage, maxValueBytes int) ([]store.ClientStateEntry, []stateRejection, error) {
	items, ok := decodeObject(payload)["entries"].([]any)
	if !ok || len(items) == 0 {
		return nil, nil, errInvalidStateEntries
	}
	if len(items) > store.MaxStateEntries {
		return nil, nil, fail(errcode.StateEntriesOver.With(store.MaxStateEntries)).
			withDetails(map[string]int{"count": len(items)})
	}
	var entries []store.ClientStateEntry
	var rejected []stateRejection
	for i, item := range items {
		entry, rejection := decodeStateEntry(i, item, maxValueBytes)
		if rejection != nil {
			rejected = append(rejected, *rejection)
			continue
		}
		entries = append(entries, entry)
	}
	return entries, rejected, nil
}

// decodeObject decodes a JSON object the way JSON.parse sees it: member
// names matched exactly, strings, json.Number, nil, []any and
// map[string]any. It returns nil for anything else. One pass over the
// input, which may be megabytes.
func decodeObject(payload json.RawMessage) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var object map[string]any
	if dec.Decode(&object) != nil {
		return nil
	}
	return object
}

// decodeStateEntry checks one entry in the standard's order: an object, its
// namespace, key, value (a string, at most maxValueBytes UTF-8 bytes, or
// null to delete the key), updatedAt, then version ?? builtAt, which when
// given is the guard.
func decodeStateEntry(i int, item any, maxValueBytes int) (store.ClientStateEntry, *stateRejection) {
	rejection := &stateRejection{Index: i}
	// A rejection is in the standard's Chinese whatever the request
	// prefers, as upstream words it.
	reject := func(m *errcode.Message) (store.ClientStateEntry, *stateRejection) {
		rejection.Code, rejection.Message = m.Code(), m.Chinese()
		return store.ClientStateEntry{}, rejection
	}
	fields, ok := item.(map[string]any)
	if !ok {
		return reject(errcode.StateEntryNotObject.With(i))
	}
	// From here on a rejection echoes the namespace and key when they are
	// strings, whatever else is wrong with them.
	namespace, nsIsString := fields["namespace"].(string)
	key, keyIsString := fields["key"].(string)
	if nsIsString {
		rejection.Namespace = &namespace
	}
	if keyIsString {
		rejection.Key = &key
	}
	for _, name := range []struct {
		field, value string
		code         *errcode.Message
		isString     bool
		maxLen       int
		check        func(string) error
	}{
		{"namespace", namespace, errcode.StateNamespaceReserved, nsIsString, store.MaxStateNamespaceLen, store.CheckStateNamespace},
		{"key", key, errcode.InvalidStateKey, keyIsString, store.MaxStateKeyLen, store.CheckStateKey},
	} {
		switch err := name.check(name.value); {
		case !name.isString || err != nil && !errors.Is(err, store.ErrStateNameReserved):
			return reject(errcode.StateNameLength.With(i, name.field, name.maxLen).Under(name.code))
		case err != nil:
			return reject(errcode.StateNameReserved.With(i, name.field).Under(name.code))
		}
	}
	rawValue, present := fields["value"]
	value, ok := rawValue.(string)
	deletes := present && rawValue == nil
	if !ok && !deletes {
		return reject(errcode.InvalidStateValue.With(i))
	}
	if n := len(value); n > maxValueBytes {
		rejection.Bytes, rejection.MaxBytes = &n, &maxValueBytes
		return reject(errcode.StateValueTooLarge.With(i))
	}
	guard, ok := positiveInteger(fields["updatedAt"])
	if !ok {
		return reject(errcode.InvalidStateUpdatedAt.With(i))
	}
	versionField, version := "version", fields["version"]
	if version == nil { // absent or null: ?? moves on
		versionField, version = "builtAt", fields["builtAt"]
	}
	if version != nil {
		if guard, ok = positiveInteger(version); !ok {
			return reject(errcode.InvalidStateVersion.With(i, versionField))
		}
	}
	owner, err := decodeOwnerClaim(fields)
	if refused := (*Error)(nil); errors.As(err, &refused) {
		code, _ := errcode.Lookup(refused.Code) // decodeOwnerClaim answers with the table's codes
		return reject(errcode.StateEntryRefused.With(i, refused.Message).Under(code))
	}
	return store.ClientStateEntry{Namespace: namespace, Key: key, Value: value, UpdatedAt: guard, Delete: deletes, Owner: owner}, nil
}

// positiveInteger reads v when it is a JSON number holding an integer in 1
// to maxSafeInteger, as JavaScript's Number.isInteger(v) && v > 0 does for
// the values a client can round-trip. 1.0 and 1e3 are integers.
func positiveInteger(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || f <= 0 || f > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

// handleDeleteClientState deletes the namespace ?namespace= names (with its
// slice rows), or without the parameter all of the user's state. A
// parameter that is present but blank or invalid is refused rather than
// read as "all".
func (s *Server) handleDeleteClientState(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	query := r.URL.Query()
	if !query.Has("namespace") {
		deleted, err := s.deps.Store.DeleteClientState(r.Context(), userID)
		if err != nil {
			return err
		}
		return writeDeleted(w, deleted)
	}
	namespace := query.Get("namespace")
	deleted, err := s.deps.Store.DeleteClientStateNamespace(r.Context(), userID, namespace)
	if err := stateNamespaceError(err); err != nil {
		return err
	}
	writeData(w, http.StatusOK, struct {
		Deleted   int    `json:"deleted"`
		Namespace string `json:"namespace"`
	}{deleted, namespace})
	return nil
}

// handleGetClientStateNamespaces lists the user's namespaces, encrypted
// like GET /client-state: their names are the app's data.
func (s *Server) handleGetClientStateNamespaces(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	limit, err := namespaceListLimit(r.URL.Query())
	if err != nil {
		return err
	}
	namespaces, truncated, err := s.deps.Store.ClientStateNamespaces(r.Context(), userID, limit)
	if err != nil {
		return err
	}
	type namespaceJSON struct {
		Namespace  string `json:"namespace"`
		EntryCount int    `json:"entryCount"`
		ByteSize   int64  `json:"byteSize"`
		UpdatedAt  int64  `json:"updatedAt"`
	}
	out := make([]namespaceJSON, len(namespaces))
	for i, ns := range namespaces {
		out[i] = namespaceJSON(ns)
	}
	return s.writeEncrypted(w, userID, struct {
		Namespaces []namespaceJSON `json:"namespaces"`
		Truncated  bool            `json:"truncated"`
		Limit      int             `json:"limit"`
	}{out, truncated, limit})
}

// namespaceListLimit reads ?limit= as upstream does: absent or empty is the
// maximum, an integer above it is cut to it, anything else (0, negative,
// a fraction, text) is INVALID_NAMESPACE_LIMIT.
func namespaceListLimit(query url.Values) (int, error) {
	raw := query.Get("limit")
	if raw == "" {
		return store.MaxStateNamespaces, nil
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	if err != nil || n != math.Trunc(n) || n <= 0 || math.IsInf(n, 0) {
		return 0, errInvalidNamespaceLimit
	}
	return int(min(n, store.MaxStateNamespaces)), nil
}

// stateNamespaceError maps the store's refusal of a namespace named in a
// query to the standard's codes.
func stateNamespaceError(err error) error {
	switch {
	case errors.Is(err, store.ErrStateNameBlank):
		return errNamespaceRequired
	case errors.Is(err, store.ErrStateNameReserved):
		return errStateNamespaceReserved
	case errors.Is(err, store.ErrStateNameTooLong):
		return errStateNamespaceTooLong
	}
	return err
}
