package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"

	"amsg/store"
)

// clientStateFeature is the browser's cloud mirror of its own state:
// PUT /client-state writes a batch last-write-wins, GET reads one namespace,
// DELETE wipes the user's state. Values over 204800 bytes are chunked by the
// store, invalid entries are rejected one by one, and a version (or
// builtAt) orders writes by content instead of arrival.
func (s *Server) clientStateFeature() feature {
	return feature{
		capabilities: []string{"client-state", "client-state-chunking", "client-state-partial-failure", "client-state-version-guard"},
		routes: []route{
			{http.MethodPut, "client-state", authClient, s.handlePutClientState},
			{http.MethodGet, "client-state", authClient, s.handleGetClientState},
			{http.MethodDelete, "client-state", authClient, s.handleDeleteClientState},
		},
	}
}

var (
	errInvalidStateEntries    = newError(http.StatusBadRequest, "INVALID_STATE_ENTRIES", "entries 必须是非空数组")
	errNamespaceRequired      = newError(http.StatusBadRequest, "NAMESPACE_REQUIRED", "必须提供 namespace 查询参数")
	errStateNamespaceReserved = newError(http.StatusBadRequest, "INVALID_STATE_NAMESPACE", `namespace 不能包含控制字符（\u0000-\u001f 为库内部保留）`)
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
		Upserted       int              `json:"upserted"`
		Skipped        int              `json:"skipped"`
		SkippedEntries []stateKey       `json:"skippedEntries,omitempty"`
		Rejected       []stateRejection `json:"rejected,omitempty"`
	}{Upserted: put.Upserted, Skipped: len(put.Skipped), Rejected: rejected}
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
		return nil, nil, newError(http.StatusBadRequest, "TOO_MANY_STATE_ENTRIES", fmt.Sprintf("单次最多 %d 条", store.MaxStateEntries)).
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
// namespace, key, value (a string, at most maxValueBytes UTF-8 bytes),
// updatedAt, then version ?? builtAt, which when given is the guard.
func decodeStateEntry(i int, item any, maxValueBytes int) (store.ClientStateEntry, *stateRejection) {
	rejection := &stateRejection{Index: i}
	reject := func(code, problem string) (store.ClientStateEntry, *stateRejection) {
		rejection.Code, rejection.Message = code, fmt.Sprintf("entries[%d]%s", i, problem)
		return store.ClientStateEntry{}, rejection
	}
	fields, ok := item.(map[string]any)
	if !ok {
		return reject("INVALID_STATE_ENTRY", " 必须是对象")
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
		field, code, value string
		isString           bool
		maxLen             int
		check              func(string) error
	}{
		{"namespace", "INVALID_STATE_NAMESPACE", namespace, nsIsString, store.MaxStateNamespaceLen, store.CheckStateNamespace},
		{"key", "INVALID_STATE_KEY", key, keyIsString, store.MaxStateKeyLen, store.CheckStateKey},
	} {
		switch err := name.check(name.value); {
		case !name.isString || err != nil && !errors.Is(err, store.ErrStateNameReserved):
			return reject(name.code, fmt.Sprintf(".%s 必须是 1-%d 字符的字符串", name.field, name.maxLen))
		case err != nil:
			return reject(name.code, "."+name.field+` 不能包含控制字符（\u0000-\u001f 为库内部保留）`)
		}
	}
	value, ok := fields["value"].(string)
	if !ok {
		return reject("INVALID_STATE_VALUE", ".value 必须是字符串（宿主自行序列化）")
	}
	if n := len(value); n > maxValueBytes {
		rejection.Bytes, rejection.MaxBytes = &n, &maxValueBytes
		return reject("STATE_VALUE_TOO_LARGE", ".value 超过单条总上限")
	}
	guard, ok := positiveInteger(fields["updatedAt"])
	if !ok {
		return reject("INVALID_STATE_UPDATED_AT", ".updatedAt 必须是正整数（epoch 毫秒）")
	}
	versionField, version := "version", fields["version"]
	if version == nil { // absent or null: ?? moves on
		versionField, version = "builtAt", fields["builtAt"]
	}
	if version != nil {
		if guard, ok = positiveInteger(version); !ok {
			return reject("INVALID_STATE_VERSION", "."+versionField+" 必须是正整数")
		}
	}
	owner, err := decodeOwnerClaim(fields)
	if refused := (*Error)(nil); errors.As(err, &refused) {
		return reject(refused.Code, " "+refused.Message)
	}
	return store.ClientStateEntry{Namespace: namespace, Key: key, Value: value, UpdatedAt: guard, Owner: owner}, nil
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

func (s *Server) handleGetClientState(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	namespace := r.URL.Query().Get("namespace")
	entries, err := s.deps.Store.ClientState(r.Context(), userID, namespace)
	switch {
	case errors.Is(err, store.ErrStateNameBlank):
		return errNamespaceRequired
	case errors.Is(err, store.ErrStateNameReserved):
		return errStateNamespaceReserved
	case err != nil:
		return err
	}
	type entryJSON struct {
		Namespace string `json:"namespace"`
		Key       string `json:"key"`
		Value     string `json:"value"`
		UpdatedAt int64  `json:"updatedAt"`
	}
	out := make([]entryJSON, len(entries))
	for i, e := range entries {
		out[i] = entryJSON{e.Namespace, e.Key, e.Value, e.UpdatedAt}
	}
	return s.writeEncrypted(w, userID, struct {
		Namespace string      `json:"namespace"`
		Entries   []entryJSON `json:"entries"`
	}{namespace, out})
}

func (s *Server) handleDeleteClientState(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	deleted, err := s.deps.Store.DeleteClientState(r.Context(), userID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, struct {
		Deleted int `json:"deleted"`
	}{deleted})
	return nil
}
