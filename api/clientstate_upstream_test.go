package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"amsg/push/clocktest"
	"amsg/store"
)

// stateNamespaces reads GET /client-state/namespaces with query and returns
// the decrypted plaintext.
func stateNamespaces(t testing.TB, h http.Handler, userID, query string) string {
	t.Helper()
	return openResponse(t, userID, send(h, http.MethodGet, "/api/v1/client-state/namespaces"+query, "", map[string]string{"X-User-Id": userID}))
}

// TestPutClientStateNullDeletes deletes keys with value null, upstream's
// delete: last-writer-wins by the entry's stamp like a write, the slice rows
// of a chunked value going with it, a stale delete reported as skipped.
func TestPutClientStateNullDeletes(t *testing.T) {
	onBothBackends(t, store.Config{}, func(t *testing.T, st *store.Store) {
		s := newTestServer(t, Config{}, Deps{Store: st})
		wantBody(t, "put", putState(t, s, testUserID, entries(
			stateEntry{Namespace: "ns", Key: "note", Value: "n", UpdatedAt: 10},
			stateEntry{Namespace: "ns", Key: "notes", Value: "sibling", UpdatedAt: 10},
			stateEntry{Namespace: "ns", Key: "big", Value: strings.Repeat("b", store.StateSliceBytes+1), UpdatedAt: 10},
			stateEntry{Namespace: "ns", Key: "newer", Value: "kept", UpdatedAt: 50},
		)), 200, `{"success":true,"data":{"upserted":4,"skipped":0}}`)
		got := putState(t, s, testUserID, `{"entries":[
			{"namespace":"ns","key":"note","value":null,"updatedAt":11},
			{"namespace":"ns","key":"big","value":null,"updatedAt":10},
			{"namespace":"ns","key":"newer","value":null,"updatedAt":20},
			{"namespace":"ns","key":"never-stored","value":null,"updatedAt":20},
			{"namespace":"ns","key":"fresh","value":"f","updatedAt":20}]}`)
		wantBody(t, "deletes", got, 200, `{"success":true,"data":{"upserted":1,"skipped":1,"deleted":3,"skippedEntries":[{"namespace":"ns","key":"newer"}]}}`)
		want := `{"namespace":"ns","entries":[` +
			`{"namespace":"ns","key":"fresh","value":"f","updatedAt":20},` +
			`{"namespace":"ns","key":"newer","value":"kept","updatedAt":50},` +
			`{"namespace":"ns","key":"notes","value":"sibling","updatedAt":10}]}`
		if got := getState(t, s, testUserID, "ns"); got != want {
			t.Errorf("after the deletes:\n got %s\nwant %s", got, want)
		}
		// The chunked value's slices went with it: three small rows are left.
		var list struct {
			Namespaces []struct {
				Namespace  string
				EntryCount int
				ByteSize   int64
			}
		}
		if err := json.Unmarshal([]byte(stateNamespaces(t, s, testUserID, "")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Namespaces) != 1 || list.Namespaces[0].EntryCount != 3 || list.Namespaces[0].ByteSize > 3*store.StateBytes(len("sibling")) {
			t.Errorf("namespaces after the deletes = %+v, want ns with 3 small entries", list.Namespaces)
		}
	})
}

// TestClientStateClampsFutureStamps writes with a stamp a day ahead of the
// server's clock: it is stored as the clock's now, so a writer with a
// correct clock can overwrite it a moment later.
func TestClientStateClampsFutureStamps(t *testing.T) {
	now := time.UnixMilli(1_780_000_000_000)
	onBothBackends(t, store.Config{Now: clocktest.New(now).Now}, func(t *testing.T, st *store.Store) {
		s := newTestServer(t, Config{}, Deps{Store: st})
		day := int64(24 * time.Hour / time.Millisecond)
		nowMs := now.UnixMilli()
		wantBody(t, "future write", putState(t, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "k", Value: "future", UpdatedAt: nowMs + day})),
			200, `{"success":true,"data":{"upserted":1,"skipped":0}}`)
		if got, want := getState(t, s, testUserID, "ns"), `{"namespace":"ns","entries":[{"namespace":"ns","key":"k","value":"future","updatedAt":1780000000000}]}`; got != want {
			t.Errorf("stored future stamp: %s, want %s", got, want)
		}
		wantBody(t, "a correct clock overwrites it", putState(t, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "k", Value: "now", UpdatedAt: nowMs})),
			200, `{"success":true,"data":{"upserted":1,"skipped":0}}`)
		wantBody(t, "an older write is still stale", putState(t, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "k", Value: "old", UpdatedAt: nowMs - 1})),
			200, `{"success":true,"data":{"upserted":0,"skipped":1,"skippedEntries":[{"namespace":"ns","key":"k"}]}}`)
	})
}

// TestClientStateNamespacesLists lists namespaces with upstream's counts:
// slice rows folded into their namespace's bytes, not its entries; the
// limit cuts the list and says so.
func TestClientStateNamespacesLists(t *testing.T) {
	onBothBackends(t, store.Config{}, func(t *testing.T, st *store.Store) {
		s := newTestServer(t, Config{}, Deps{Store: st})
		if got := stateNamespaces(t, s, testUserID, ""); got != `{"namespaces":[],"truncated":false,"limit":200}` {
			t.Errorf("no state: %s", got)
		}
		putState(t, s, testUserID, entries(
			stateEntry{Namespace: "char:2", Key: "a", Value: "x", UpdatedAt: 7},
			stateEntry{Namespace: "char:1", Key: "big", Value: strings.Repeat("b", store.StateSliceBytes+1), UpdatedAt: 5},
			stateEntry{Namespace: "char:1", Key: "small", Value: "s", UpdatedAt: 3},
			stateEntry{Namespace: "Z", Key: "z", Value: "z", UpdatedAt: 9},
		))
		putState(t, s, "123e4567-e89b-42d3-a456-426614174000", entries(stateEntry{Namespace: "other-user", Key: "a", Value: "x", UpdatedAt: 1}))
		var list struct {
			Namespaces []struct {
				Namespace  string `json:"namespace"`
				EntryCount int    `json:"entryCount"`
				ByteSize   int64  `json:"byteSize"`
				UpdatedAt  int64  `json:"updatedAt"`
			} `json:"namespaces"`
			Truncated bool `json:"truncated"`
			Limit     int  `json:"limit"`
		}
		if err := json.Unmarshal([]byte(stateNamespaces(t, s, testUserID, "")), &list); err != nil {
			t.Fatal(err)
		}
		type row struct {
			ns      string
			entries int
			at      int64
		}
		var got []row
		for _, n := range list.Namespaces {
			got = append(got, row{n.Namespace, n.EntryCount, n.UpdatedAt})
		}
		want := []row{{"Z", 1, 9}, {"char:1", 2, 5}, {"char:2", 1, 7}} // byte order: upper case first
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || list.Truncated || list.Limit != 200 {
			t.Fatalf("namespaces = %+v truncated %v limit %d, want %+v", got, list.Truncated, list.Limit, want)
		}
		if b := list.Namespaces[1].ByteSize; b < 2*(store.StateSliceBytes+1) {
			t.Errorf("char:1 takes %d bytes, less than its slices as sealed", b)
		}
		for _, c := range []struct{ query, want string }{
			{"?limit=2", `"truncated":true,"limit":2}`},
			{"?limit=3", `"truncated":false,"limit":3}`},
			{"?limit=1e3", `"truncated":false,"limit":200}`},
		} {
			if got := stateNamespaces(t, s, testUserID, c.query); !strings.HasSuffix(got, c.want) {
				t.Errorf("%s: %s, want …%s", c.query, got, c.want)
			}
		}
		for _, q := range []string{"?limit=0", "?limit=-1", "?limit=1.5", "?limit=abc", "?limit=Infinity"} {
			wantBody(t, q, send(s, http.MethodGet, "/api/v1/client-state/namespaces"+q, "", map[string]string{"X-User-Id": testUserID}), 400,
				`{"success":false,"error":{"code":"INVALID_NAMESPACE_LIMIT","message":"limit 必须是 1-200 的整数"}}`)
		}
		wantBody(t, "no user", send(s, http.MethodGet, "/api/v1/client-state/namespaces", "", nil), 400,
			`{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"缺少用户标识符"}}`)
	})
}

// FuzzNamespaceListLimit holds ?limit= to 1..200 or INVALID_NAMESPACE_LIMIT.
func FuzzNamespaceListLimit(f *testing.F) {
	for _, seed := range []string{"", "1", "200", "201", "0", "-1", "1.5", "1e3", "NaN", "Infinity", " 7 ", "0x10", "9999999999999999999999"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := namespaceListLimit(map[string][]string{"limit": {raw}})
		if err != nil {
			if err != errInvalidNamespaceLimit {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if n < 1 || n > store.MaxStateNamespaces {
			t.Fatalf("%q → %d", raw, n)
		}
	})
}
