package api

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// putState sends PUT /client-state with payload encrypted as the browser
// does; payload is a Go value or, as a string, raw JSON.
func putState(t testing.TB, h http.Handler, userID string, payload any) response {
	t.Helper()
	body, ok := payload.(string)
	if ok {
		body = browserEncryptRaw(t, browserUserKey(userID), body)
	} else {
		body = browserEncrypt(t, browserUserKey(userID), payload)
	}
	return send(h, http.MethodPut, "/api/v1/client-state", body, encryptedHeaders(userID))
}

// getState reads a namespace and returns the decrypted plaintext.
func getState(t testing.TB, h http.Handler, userID, namespace string) string {
	t.Helper()
	return openResponse(t, userID, send(h, http.MethodGet, "/api/v1/client-state?namespace="+url.QueryEscape(namespace), "", map[string]string{"X-User-Id": userID}))
}

type stateEntry struct {
	Namespace string `json:"namespace"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	UpdatedAt int64  `json:"updatedAt"`
	Version   int64  `json:"version,omitempty"`
	BuiltAt   int64  `json:"builtAt,omitempty"`
}

func entries(e ...stateEntry) map[string]any { return map[string]any{"entries": e} }

func wantBody(t *testing.T, name string, got response, status int, body string) {
	t.Helper()
	if got.status != status || got.body != body+"\n" {
		t.Errorf("%s:\n got %d %s\nwant %d %s", name, got.status, strings.TrimSpace(got.body), status, body)
	}
}

func TestPutClientStateChecksTheBatchInOrder(t *testing.T) {
	s := newTestServer(t, Config{ClientToken: "tok"}, Deps{})
	withToken := func(h map[string]string) map[string]string { h["X-Client-Token"] = "tok"; return h }
	key := browserUserKey(testUserID)
	tooMany := make([]stateEntry, 201)
	for _, c := range []struct {
		name   string
		header map[string]string
		body   string
		status int
		want   string
	}{
		// Authorization comes before everything, even a missing encryption flag.
		{"no client token", map[string]string{}, "", 401, `{"success":false,"error":{"code":"INVALID_CLIENT_TOKEN","message":"共享密钥无效或缺失"}}`},
		{"not encrypted", withToken(map[string]string{"X-User-Id": testUserID}), `{"entries":[]}`, 400, `{"success":false,"error":{"code":"ENCRYPTION_REQUIRED","message":"请求体必须加密"}}`},
		{"wrong key", withToken(encryptedHeaders(testUserID)), browserEncrypt(t, browserUserKey("123e4567-e89b-42d3-a456-426614174000"), entries()), 400, `{"success":false,"error":{"code":"DECRYPTION_FAILED","message":"请求体解密失败"}}`},
		{"no entries", withToken(encryptedHeaders(testUserID)), browserEncryptRaw(t, key, `{}`), 400, `{"success":false,"error":{"code":"INVALID_STATE_ENTRIES","message":"entries 必须是非空数组"}}`},
		{"null entries", withToken(encryptedHeaders(testUserID)), browserEncryptRaw(t, key, `{"entries":null}`), 400, `{"success":false,"error":{"code":"INVALID_STATE_ENTRIES","message":"entries 必须是非空数组"}}`},
		{"empty entries", withToken(encryptedHeaders(testUserID)), browserEncryptRaw(t, key, `{"entries":[]}`), 400, `{"success":false,"error":{"code":"INVALID_STATE_ENTRIES","message":"entries 必须是非空数组"}}`},
		{"entries an object", withToken(encryptedHeaders(testUserID)), browserEncryptRaw(t, key, `{"entries":{"0":{}}}`), 400, `{"success":false,"error":{"code":"INVALID_STATE_ENTRIES","message":"entries 必须是非空数组"}}`},
		{"Entries in another case", withToken(encryptedHeaders(testUserID)), browserEncryptRaw(t, key, `{"Entries":[{}]}`), 400, `{"success":false,"error":{"code":"INVALID_STATE_ENTRIES","message":"entries 必须是非空数组"}}`},
		{"201 entries", withToken(encryptedHeaders(testUserID)), browserEncrypt(t, key, entries(tooMany...)), 400, `{"success":false,"error":{"code":"TOO_MANY_STATE_ENTRIES","message":"单次最多 200 条","details":{"count":201}}}`},
	} {
		got := send(s, http.MethodPut, "/api/v1/client-state", c.body, c.header)
		wantBody(t, c.name, got, c.status, c.want)
	}
}

// TestPutClientStateRejectsBadEntriesAlone sends one batch holding every
// kind of bad entry between good ones: each bad entry is reported with the
// standard's code and message, and the good ones are written.
func TestPutClientStateRejectsBadEntriesAlone(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{Store: storetest.Open(t, store.Config{MaxStateValueBytes: 16})})
	long := strings.Repeat("n", 129)
	cases := []struct{ entry, rejection string }{
		{`{"namespace":"ns","key":"a","value":"first","updatedAt":1}`, ``},
		{`"not an object"`, `"code":"INVALID_STATE_ENTRY","message":"entries[%d] 必须是对象"`},
		{`null`, `"code":"INVALID_STATE_ENTRY","message":"entries[%d] 必须是对象"`},
		{`["namespace","ns"]`, `"code":"INVALID_STATE_ENTRY","message":"entries[%d] 必须是对象"`},
		{`{"key":"k","value":"v","updatedAt":1}`, `"code":"INVALID_STATE_NAMESPACE","message":"entries[%d].namespace 必须是 1-128 字符的字符串","key":"k"`},
		{`{"namespace":7,"key":"k","value":"v","updatedAt":1}`, `"code":"INVALID_STATE_NAMESPACE","message":"entries[%d].namespace 必须是 1-128 字符的字符串","key":"k"`},
		{`{"namespace":" \u3000","key":"k","value":"v","updatedAt":1}`, `"code":"INVALID_STATE_NAMESPACE","message":"entries[%d].namespace 必须是 1-128 字符的字符串","namespace":" 　","key":"k"`},
		{`{"namespace":"` + long + `","value":"v","updatedAt":1}`, `"code":"INVALID_STATE_NAMESPACE","message":"entries[%d].namespace 必须是 1-128 字符的字符串","namespace":"` + long + `"`},
		{`{"namespace":"a\u001fb","key":"k","value":"v","updatedAt":1}`, `"code":"INVALID_STATE_NAMESPACE","message":"entries[%d].namespace 不能包含控制字符（\\u0000-\\u001f 为库内部保留）","namespace":"a\u001fb","key":"k"`},
		{`{"namespace":"ns","key":"","value":"v","updatedAt":1}`, `"code":"INVALID_STATE_KEY","message":"entries[%d].key 必须是 1-256 字符的字符串","namespace":"ns","key":""`},
		{`{"namespace":"ns","key":{},"value":"v","updatedAt":1}`, `"code":"INVALID_STATE_KEY","message":"entries[%d].key 必须是 1-256 字符的字符串","namespace":"ns"`},
		{`{"namespace":"ns","key":"k\u0000","value":"v","updatedAt":1}`, `"code":"INVALID_STATE_KEY","message":"entries[%d].key 不能包含控制字符（\\u0000-\\u001f 为库内部保留）","namespace":"ns","key":"k\u0000"`},
		{`{"namespace":"ns","key":"k","updatedAt":1}`, `"code":"INVALID_STATE_VALUE","message":"entries[%d].value 必须是字符串（宿主自行序列化）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":42,"updatedAt":1}`, `"code":"INVALID_STATE_VALUE","message":"entries[%d].value 必须是字符串（宿主自行序列化）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"记记记记记记","updatedAt":1}`, `"code":"STATE_VALUE_TOO_LARGE","message":"entries[%d].value 超过单条总上限","bytes":18,"maxBytes":16,"namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v"}`, `"code":"INVALID_STATE_UPDATED_AT","message":"entries[%d].updatedAt 必须是正整数（epoch 毫秒）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":"1"}`, `"code":"INVALID_STATE_UPDATED_AT","message":"entries[%d].updatedAt 必须是正整数（epoch 毫秒）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":0}`, `"code":"INVALID_STATE_UPDATED_AT","message":"entries[%d].updatedAt 必须是正整数（epoch 毫秒）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":-5}`, `"code":"INVALID_STATE_UPDATED_AT","message":"entries[%d].updatedAt 必须是正整数（epoch 毫秒）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":1.5}`, `"code":"INVALID_STATE_UPDATED_AT","message":"entries[%d].updatedAt 必须是正整数（epoch 毫秒）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":9007199254740992}`, `"code":"INVALID_STATE_UPDATED_AT","message":"entries[%d].updatedAt 必须是正整数（epoch 毫秒）","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":1,"version":"2"}`, `"code":"INVALID_STATE_VERSION","message":"entries[%d].version 必须是正整数","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":1,"version":0,"builtAt":5}`, `"code":"INVALID_STATE_VERSION","message":"entries[%d].version 必须是正整数","namespace":"ns","key":"k"`},
		{`{"namespace":"ns","key":"k","value":"v","updatedAt":1,"version":null,"builtAt":1.5}`, `"code":"INVALID_STATE_VERSION","message":"entries[%d].builtAt 必须是正整数","namespace":"ns","key":"k"`},
		// Accepted: integers written as 1.0 and 1e3, a value at the limit, case-sensitive field names.
		{`{"namespace":"ns","key":"b","value":"1234567890123456","updatedAt":1.0}`, ``},
		{`{"namespace":"ns","key":"c","value":"third","updatedAt":1e3,"Version":"ignored"}`, ``},
	}
	var raw, want []string
	for i, c := range cases {
		raw = append(raw, c.entry)
		if c.rejection != "" {
			want = append(want, fmt.Sprintf(`{"index":%d,`, i)+fmt.Sprintf(c.rejection, i)+`}`)
		}
	}
	got := putState(t, s, testUserID, `{"entries":[`+strings.Join(raw, ",")+`]}`)
	wantBody(t, "mixed batch", got, 200, `{"success":true,"data":{"upserted":3,"skipped":0,"rejected":[`+strings.Join(want, ",")+`]}}`)
	wantState := `{"namespace":"ns","entries":[` +
		`{"namespace":"ns","key":"a","value":"first","updatedAt":1},` +
		`{"namespace":"ns","key":"b","value":"1234567890123456","updatedAt":1},` +
		`{"namespace":"ns","key":"c","value":"third","updatedAt":1000}]}`
	if got := getState(t, s, testUserID, "ns"); got != wantState {
		t.Errorf("state after the batch:\n got %s\nwant %s", got, wantState)
	}
	// A batch of only bad entries still answers 200 and writes nothing.
	got = putState(t, s, testUserID, `{"entries":[1]}`)
	wantBody(t, "only bad entries", got, 200, `{"success":true,"data":{"upserted":0,"skipped":0,"rejected":[{"index":0,"code":"INVALID_STATE_ENTRY","message":"entries[0] 必须是对象"}]}}`)
}

// rawDB opens the store's database file beside it, to look at rows as stored.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestClientStateRoundTripsA1MiBValue puts a 1 MiB value of 1- to 4-byte
// characters, checks it is chunked in the database — a plaintext root marker
// and six sealed slices — and reads it back whole.
func TestClientStateRoundTripsA1MiBValue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	s := newTestServer(t, Config{}, Deps{Store: storetest.Open(t, store.Config{Path: path})})
	value := strings.Repeat("x记😀é", 1<<20/10)
	got := putState(t, s, testUserID, entries(stateEntry{Namespace: "char:1", Key: "context", Value: value, UpdatedAt: 1_772_352_000_000}))
	// Full success has exactly two keys, as before chunking existed.
	wantBody(t, "put 1 MiB", got, 200, `{"success":true,"data":{"upserted":1,"skipped":0}}`)

	rows, err := rawDB(t, path).Query(`SELECT namespace, key, value, updated_at FROM client_state WHERE user_id = ? ORDER BY namespace, key`, testUserID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sealed := regexp.MustCompile(`^[0-9a-f]{32}:[0-9a-f]{32}:([0-9a-f]{2})+$`)
	var names []string
	for rows.Next() {
		var ns, key, v string
		var at int64
		if err := rows.Scan(&ns, &key, &v, &at); err != nil {
			t.Fatal(err)
		}
		names = append(names, fmt.Sprintf("%q/%q", ns, key))
		isRoot := ns == "char:1"
		if at != 1_772_352_000_000 || (isRoot && v != "\x1famsg-chunked\x1fv1\x1f6") || (!isRoot && (!sealed.MatchString(v) || len(v) > 2*store.StateSliceBytes+66)) {
			t.Errorf("row %q/%q updated %d value %.40q…: want the root marker or a sealed slice of at most %d bytes", ns, key, at, v, store.StateSliceBytes)
		}
	}
	wantNames := []string{`"\x1famsg-chunks\x1fchar:1"/"context\x1f0"`, `"\x1famsg-chunks\x1fchar:1"/"context\x1f1"`, `"\x1famsg-chunks\x1fchar:1"/"context\x1f2"`,
		`"\x1famsg-chunks\x1fchar:1"/"context\x1f3"`, `"\x1famsg-chunks\x1fchar:1"/"context\x1f4"`, `"\x1famsg-chunks\x1fchar:1"/"context\x1f5"`, `"char:1"/"context"`}
	if !slices.Equal(names, wantNames) {
		t.Errorf("rows = %v\nwant %v", names, wantNames)
	}

	var read struct {
		Namespace string       `json:"namespace"`
		Entries   []stateEntry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(getState(t, s, testUserID, "char:1")), &read); err != nil {
		t.Fatal(err)
	}
	if read.Namespace != "char:1" || len(read.Entries) != 1 || read.Entries[0] != (stateEntry{Namespace: "char:1", Key: "context", Value: value, UpdatedAt: 1_772_352_000_000}) {
		t.Errorf("GET returned %d entries, not the value put", len(read.Entries))
	}
}

// TestClientStateVersionGuard replays the slow-network race the guard exists
// for: an older batch arriving after a newer one must not overwrite it, even
// with a later updatedAt.
func TestClientStateVersionGuard(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	read := func() string { return getState(t, s, testUserID, "pack") }
	entry := func(value string, updatedAt, version, builtAt int64) map[string]any {
		return entries(stateEntry{Namespace: "pack", Key: "fire", Value: value, UpdatedAt: updatedAt, Version: version, BuiltAt: builtAt})
	}
	const ok1 = `{"success":true,"data":{"upserted":1,"skipped":0}}`
	const skipped = `{"success":true,"data":{"upserted":0,"skipped":1,"skippedEntries":[{"namespace":"pack","key":"fire"}]}}`
	steps := []struct {
		name, value             string
		updatedAt, ver, builtAt int64
		want, state             string
	}{
		{"newer content first", "v10", 5000, 10, 0, ok1, `"v10","updatedAt":10`},
		{"older content later, later updatedAt", "v9", 9000, 9, 0, skipped, `"v10","updatedAt":10`},
		{"builtAt is an alias; ties overwrite", "b10", 1, 0, 10, ok1, `"b10","updatedAt":10`},
		{"version wins over builtAt", "v11", 1, 11, 1, ok1, `"v11","updatedAt":11`},
		{"no guard: updatedAt compares with the stored guard", "u8", 8, 0, 0, skipped, `"v11","updatedAt":11`},
		{"no guard, newer", "u12", 12, 0, 0, ok1, `"u12","updatedAt":12`},
	}
	for _, st := range steps {
		wantBody(t, st.name, putState(t, s, testUserID, entry(st.value, st.updatedAt, st.ver, st.builtAt)), 200, st.want)
		want := `{"namespace":"pack","entries":[{"namespace":"pack","key":"fire","value":` + st.state + `}]}`
		if got := read(); got != want {
			t.Errorf("%s: state %s, want %s", st.name, got, want)
		}
	}
	// A null version falls back to builtAt, as ?? does.
	got := putState(t, s, testUserID, `{"entries":[{"namespace":"pack","key":"fire","value":"n13","updatedAt":1,"version":null,"builtAt":13}]}`)
	wantBody(t, "null version", got, 200, ok1)
	if got := read(); !strings.Contains(got, `"value":"n13","updatedAt":13`) {
		t.Errorf("after a null version: %s", got)
	}
}

func TestGetClientStateChecks(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	putState(t, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "big", Value: strings.Repeat("a", store.StateSliceBytes+1), UpdatedAt: 1}))
	for _, c := range []struct {
		name, query string
		header      map[string]string
		status      int
		want        string
	}{
		{"no user", "?namespace=ns", nil, 400, `{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"缺少用户标识符"}}`},
		{"no namespace", "", map[string]string{"X-User-Id": testUserID}, 400, `{"success":false,"error":{"code":"NAMESPACE_REQUIRED","message":"必须提供 namespace 查询参数"}}`},
		{"blank namespace", "?namespace=%20%E3%80%80", map[string]string{"X-User-Id": testUserID}, 400, `{"success":false,"error":{"code":"NAMESPACE_REQUIRED","message":"必须提供 namespace 查询参数"}}`},
		{"control character", "?namespace=a%01", map[string]string{"X-User-Id": testUserID}, 400, `{"success":false,"error":{"code":"INVALID_STATE_NAMESPACE","message":"namespace 不能包含控制字符（\\u0000-\\u001f 为库内部保留）"}}`},
		{"the internal slice namespace", "?namespace=%1Famsg-chunks%1Fns", map[string]string{"X-User-Id": testUserID}, 400, `{"success":false,"error":{"code":"INVALID_STATE_NAMESPACE","message":"namespace 不能包含控制字符（\\u0000-\\u001f 为库内部保留）"}}`},
	} {
		wantBody(t, c.name, send(s, http.MethodGet, "/api/v1/client-state"+c.query, "", c.header), c.status, c.want)
	}
	if got := getState(t, s, testUserID, "empty"); got != `{"namespace":"empty","entries":[]}` {
		t.Errorf("empty namespace = %s", got)
	}
	if got := getState(t, s, "123e4567-e89b-42d3-a456-426614174000", "ns"); got != `{"namespace":"ns","entries":[]}` {
		t.Errorf("another user reads %s", got)
	}
}

func TestDeleteClientStateCountsRows(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	putState(t, s, testUserID, entries(
		stateEntry{Namespace: "a", Key: "big", Value: strings.Repeat("a", 2*store.StateSliceBytes+1), UpdatedAt: 1}, // a root and 3 slices
		stateEntry{Namespace: "b", Key: "small", Value: "s", UpdatedAt: 1},
	))
	header := map[string]string{"X-User-Id": testUserID}
	wantBody(t, "delete", send(s, http.MethodDelete, "/api/v1/client-state", "", header), 200, `{"success":true,"data":{"deleted":5}}`)
	wantBody(t, "delete again", send(s, http.MethodDelete, "/api/v1/client-state", "", header), 200, `{"success":true,"data":{"deleted":0}}`)
	wantBody(t, "delete without user", send(s, http.MethodDelete, "/api/v1/client-state", "", nil), 400, `{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"缺少用户标识符"}}`)
	if got := getState(t, s, testUserID, "a"); got != `{"namespace":"a","entries":[]}` {
		t.Errorf("after delete: %s", got)
	}
}

// TestDeleteClientStateNamespaceKeepsTheOthers is the data loss upstream's
// newest client met: DELETE /client-state?namespace=drop used to delete
// every namespace of the user. Only "drop" and its slice rows go now.
func TestDeleteClientStateNamespaceKeepsTheOthers(t *testing.T) {
	onBothBackends(t, store.Config{}, func(t *testing.T, st *store.Store) {
		s := newTestServer(t, Config{}, Deps{Store: st})
		const other = "123e4567-e89b-42d3-a456-426614174000"
		putState(t, s, testUserID, entries(
			stateEntry{Namespace: "keep", Key: "k", Value: "kept", UpdatedAt: 1},
			stateEntry{Namespace: "drop", Key: "k", Value: "v", UpdatedAt: 1},
			stateEntry{Namespace: "drop", Key: "big", Value: strings.Repeat("a", store.StateSliceBytes+1), UpdatedAt: 1}, // a root and 2 slices
			stateEntry{Namespace: "dro", Key: "k", Value: "prefix of drop", UpdatedAt: 1},
		))
		putState(t, s, other, entries(stateEntry{Namespace: "drop", Key: "k", Value: "another user's", UpdatedAt: 1}))
		header := map[string]string{"X-User-Id": testUserID}
		wantBody(t, "delete drop", send(s, http.MethodDelete, "/api/v1/client-state?namespace=drop", "", header), 200,
			`{"success":true,"data":{"deleted":4,"namespace":"drop"}}`)
		for _, c := range []struct{ user, namespace, want string }{
			{testUserID, "drop", `{"namespace":"drop","entries":[]}`},
			{testUserID, "keep", `{"namespace":"keep","entries":[{"namespace":"keep","key":"k","value":"kept","updatedAt":1}]}`},
			{testUserID, "dro", `{"namespace":"dro","entries":[{"namespace":"dro","key":"k","value":"prefix of drop","updatedAt":1}]}`},
			{other, "drop", `{"namespace":"drop","entries":[{"namespace":"drop","key":"k","value":"another user's","updatedAt":1}]}`},
		} {
			if got := getState(t, s, c.user, c.namespace); got != c.want {
				t.Errorf("%s after the delete = %s, want %s", c.namespace, got, c.want)
			}
		}
		wantBody(t, "delete drop again", send(s, http.MethodDelete, "/api/v1/client-state?namespace=drop", "", header), 200,
			`{"success":true,"data":{"deleted":0,"namespace":"drop"}}`)
		// A namespace parameter that is there but unusable deletes nothing: it is never read as "all".
		for _, c := range []struct{ name, query, want string }{
			{"empty", "?namespace=", `{"success":false,"error":{"code":"NAMESPACE_REQUIRED","message":"必须提供 namespace 查询参数"}}`},
			{"blank", "?namespace=%20%E3%80%80", `{"success":false,"error":{"code":"NAMESPACE_REQUIRED","message":"必须提供 namespace 查询参数"}}`},
			{"control character", "?namespace=keep%00", `{"success":false,"error":{"code":"INVALID_STATE_NAMESPACE","message":"namespace 不能包含控制字符（\\u0000-\\u001f 为库内部保留）"}}`},
			{"the internal slice namespace", "?namespace=%1Famsg-chunks%1Fkeep", `{"success":false,"error":{"code":"INVALID_STATE_NAMESPACE","message":"namespace 不能包含控制字符（\\u0000-\\u001f 为库内部保留）"}}`},
			{"too long", "?namespace=" + strings.Repeat("n", 129), `{"success":false,"error":{"code":"INVALID_STATE_NAMESPACE","message":"namespace 必须是 1-128 字符的字符串"}}`},
		} {
			wantBody(t, c.name, send(s, http.MethodDelete, "/api/v1/client-state"+c.query, "", header), 400, c.want)
		}
		if got := getState(t, s, testUserID, "keep"); !strings.Contains(got, `"value":"kept"`) {
			t.Errorf("a refused delete deleted keep: %s", got)
		}
	})
}

func TestClientStateBodyLimitIsItsOwn(t *testing.T) {
	s := newTestServer(t, Config{MaxBodyBytes: 1024, MaxClientStateBodyBytes: 64 << 10}, Deps{})
	value := strings.Repeat("v", 20<<10)
	got := putState(t, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "k", Value: value, UpdatedAt: 1}))
	wantBody(t, "20 KiB under a 1 KiB global limit", got, 200, `{"success":true,"data":{"upserted":1,"skipped":0}}`)
	got = putState(t, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "k", Value: strings.Repeat(value, 4), UpdatedAt: 1}))
	if got.status != http.StatusRequestEntityTooLarge || !strings.Contains(got.body, `"code":"PAYLOAD_TOO_LARGE"`) || !strings.Contains(got.body, `"maxBytes":65536`) {
		t.Errorf("over the client-state limit: %d %s", got.status, got.body)
	}
	// Other encrypted routes keep the global limit.
	got = send(s, http.MethodPost, "/api/v1/outbox/ack", browserEncrypt(t, browserUserKey(testUserID), map[string]any{"messageIds": []string{value}}), encryptedHeaders(testUserID))
	if got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("outbox/ack with 20 KiB = %d %s, want 413", got.status, got.body)
	}
}

// TestCapabilitiesAdvertiseClientStateAndOutbox lists the features of
// client state, the outbox, credentials and gzip bodies under upstream's
// strings, those of its newest line included.
func TestCapabilitiesAdvertiseClientStateAndOutbox(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	got := do(t, s, http.MethodGet, "/api/v1/capabilities", nil)
	for _, f := range []string{"client-state", "client-state-chunking", "client-state-partial-failure", "client-state-version-guard",
		"client-state-delete-namespace", "client-state-delete", "client-state-namespaces", "message-outbox", "outbox-delete",
		"llm-credentials", "llm-credentials-delete-prefix", "gzip-request-body"} {
		if !strings.Contains(got.body, `"`+f+`"`) {
			t.Errorf("capabilities lack %s: %s", f, got.body)
		}
	}
}

// FuzzPutClientState sends arbitrary decrypted payloads through the whole
// route: the answer is 200 with rejections carrying the standard's codes, or
// one of the standard's 400s, never a 500.
func FuzzPutClientState(f *testing.F) {
	for _, seed := range []string{
		`{"entries":[{"namespace":"ns","key":"k","value":"v","updatedAt":1}]}`,
		`{"entries":[{"namespace":"ns","key":"k","value":"v","updatedAt":1,"version":2,"builtAt":3}]}`,
		`{"entries":[{"namespace":"\u001f","key":"k\u0000","value":"\ud800","updatedAt":1e3}]}`,
		`{"entries":[{"namespace":"ns","key":"k","value":"v","updatedAt":9007199254740993}]}`,
		`{"entries":[null,1,"s",[],{}]}`,
		`{"entries":[{"namespace":"ns","key":"k","value":null,"updatedAt":1},{"namespace":"ns","key":"k","updatedAt":2}]}`,
		`{"entries":[{"namespace":" ","key":"k","value":"v","updatedAt":-0}]}`,
		`{"entries":{}}`,
		`{"entries":[{"namespace":"ns","key":"k","value":"` + strings.Repeat("x", 300) + `","updatedAt":1}]}`,
		`[]`,
		`not json`,
	} {
		f.Add(seed)
	}
	// The fuzzer's rate would trip the per-user request limit.
	s := newTestServer(f, Config{Limits: Limits{RateLimitOff: true}}, Deps{Store: storetest.Open(f, store.Config{MaxStateValueBytes: 256})})
	allowed := map[string]bool{"INVALID_STATE_ENTRIES": true, "TOO_MANY_STATE_ENTRIES": true, "INVALID_PAYLOAD_FORMAT": true}
	entryCodes := map[string]bool{"INVALID_STATE_ENTRY": true, "INVALID_STATE_NAMESPACE": true, "INVALID_STATE_KEY": true, "INVALID_STATE_VALUE": true,
		"STATE_VALUE_TOO_LARGE": true, "INVALID_STATE_UPDATED_AT": true, "INVALID_STATE_VERSION": true}
	f.Fuzz(func(t *testing.T, payload string) {
		got := putState(t, s, testUserID, payload)
		var resp struct {
			Success bool `json:"success"`
			Data    struct {
				Upserted, Skipped int
				Rejected          []stateRejection `json:"rejected"`
			} `json:"data"`
			Error struct{ Code string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(got.body), &resp); err != nil {
			t.Fatalf("%d %q: %v", got.status, got.body, err)
		}
		switch got.status {
		case http.StatusOK:
			last := -1
			for _, r := range resp.Data.Rejected {
				if !entryCodes[r.Code] || r.Index <= last {
					t.Fatalf("rejection %+v in %s", r, got.body)
				}
				last = r.Index
			}
		case http.StatusBadRequest:
			if !allowed[resp.Error.Code] {
				t.Fatalf("400 with code %q: %s", resp.Error.Code, got.body)
			}
		default:
			t.Fatalf("status %d: %s", got.status, got.body)
		}
	})
}

func benchmarkValue() string { return strings.Repeat("x记😀é", 1<<20/10) }

// BenchmarkClientStatePut1MiB is one PUT /client-state of a 1 MiB value
// through the handler: decrypt the request, decode, seal six slices, write
// them in one transaction.
func BenchmarkClientStatePut1MiB(b *testing.B) {
	s := newTestServer(b, Config{}, Deps{})
	value := benchmarkValue()
	b.SetBytes(int64(len(value)))
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		body := browserEncrypt(b, browserUserKey(testUserID), entries(stateEntry{Namespace: "ns", Key: "k", Value: value, UpdatedAt: int64(i + 1)}))
		b.StartTimer()
		if got := send(s, http.MethodPut, "/api/v1/client-state", body, encryptedHeaders(testUserID)); got.status != http.StatusOK {
			b.Fatal(got.body)
		}
	}
}

// BenchmarkClientStateGet1MiB is one GET /client-state of a namespace holding
// a 1 MiB value: read and open six slices, join, encode, seal the response.
func BenchmarkClientStateGet1MiB(b *testing.B) {
	s := newTestServer(b, Config{}, Deps{})
	value := benchmarkValue()
	putState(b, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "k", Value: value, UpdatedAt: 1}))
	b.SetBytes(int64(len(value)))
	header := map[string]string{"X-User-Id": testUserID}
	for b.Loop() {
		if got := send(s, http.MethodGet, "/api/v1/client-state?namespace=ns", "", header); got.status != http.StatusOK {
			b.Fatal(got.body)
		}
	}
}
