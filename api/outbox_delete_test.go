package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"amsg/store"
)

// deleteOutbox sends DELETE /outbox with body (raw JSON) encrypted for userID.
func deleteOutbox(t testing.TB, h http.Handler, userID, body string) response {
	t.Helper()
	return send(h, http.MethodDelete, "/api/v1/outbox", browserEncryptRaw(t, browserUserKey(userID), body), encryptedHeaders(userID))
}

// outboxIDs lists the message ids GET /outbox returns for testUserID.
func outboxIDs(t testing.TB, h http.Handler) string {
	t.Helper()
	var ids []string
	for _, e := range readOutboxPage(t, getOutbox(t, h, "")).Entries {
		ids = append(ids, e.MessageID)
	}
	return strings.Join(ids, ",")
}

// TestDeleteOutbox deletes named rows, acknowledged or not, then all of
// them; refused bodies delete nothing, and another user's rows stay.
func TestDeleteOutbox(t *testing.T) {
	onBothBackends(t, store.Config{}, func(t *testing.T, st *store.Store) {
		s := newTestServer(t, Config{}, Deps{Store: st})
		const other = "123e4567-e89b-42d3-a456-426614174000"
		var messages []store.OutboxMessage
		for i := 1; i <= 4; i++ {
			messages = append(messages, store.OutboxMessage{MessageID: fmt.Sprintf("m%d", i), Payload: json.RawMessage(`{"messageKind":"content"}`)})
		}
		for _, user := range []string{testUserID, other} {
			if err := st.AppendOutbox(t.Context(), user, messages); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.AckOutbox(t.Context(), testUserID, []string{"m2"}); err != nil {
			t.Fatal(err)
		}
		tooMany, _ := json.Marshal(map[string]any{"messageIds": strings.Split(strings.Repeat("x,", 200)+"x", ",")})
		for _, c := range []struct{ name, body, want string }{
			{"neither", `{}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"要么 { all: true }，要么 messageIds 非空数组","details":{"invalidFields":["messageIds"]}}}`},
			{"all false", `{"all":false}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"要么 { all: true }，要么 messageIds 非空数组","details":{"invalidFields":["messageIds"]}}}`},
			{"empty ids", `{"messageIds":[]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"要么 { all: true }，要么 messageIds 非空数组","details":{"invalidFields":["messageIds"]}}}`},
			{"both", `{"all":true,"messageIds":["m1"]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"all 与 messageIds 不能同时出现","details":{"invalidFields":["all","messageIds"]}}}`},
			{"a blank id", `{"messageIds":["m1"," "]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"messageIds[1] 必须是非空字符串","details":{"invalidFields":["messageIds[1]"]}}}`},
			{"a number", `{"messageIds":["m1",7]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"messageIds[1] 必须是非空字符串","details":{"invalidFields":["messageIds[1]"]}}}`},
			{"201 ids", string(tooMany), `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"messageIds 一次最多 200 条","details":{"count":201,"invalidFields":["messageIds"]}}}`},
			{"not an object", `["m1"]`, `{"success":false,"error":{"code":"INVALID_PAYLOAD_FORMAT","message":"解密后的数据必须是 JSON 对象"}}`},
		} {
			wantBody(t, c.name, deleteOutbox(t, s, testUserID, c.body), 400, c.want)
		}
		wantBody(t, "not encrypted", send(s, http.MethodDelete, "/api/v1/outbox", `{"all":true}`, map[string]string{"X-User-Id": testUserID}), 400,
			`{"success":false,"error":{"code":"ENCRYPTION_REQUIRED","message":"请求体必须加密"}}`)
		if got := outboxIDs(t, s); got != "m1,m3,m4" {
			t.Fatalf("after refused deletes the unacknowledged rows are %s, want m1,m3,m4", got)
		}
		// m2 is acknowledged: it is deleted too, and counted.
		wantBody(t, "two ids", deleteOutbox(t, s, testUserID, `{"messageIds":["m1","m2","m1","unknown"]}`), 200, `{"success":true,"data":{"deleted":2}}`)
		if got := outboxIDs(t, s); got != "m3,m4" {
			t.Errorf("after deleting m1 and m2: %s", got)
		}
		wantBody(t, "all", deleteOutbox(t, s, testUserID, `{"all":true}`), 200, `{"success":true,"data":{"deleted":2}}`)
		wantBody(t, "all again", deleteOutbox(t, s, testUserID, `{"all":true}`), 200, `{"success":true,"data":{"deleted":0}}`)
		page, err := st.UnackedOutbox(t.Context(), other, 0, 10)
		if err != nil || len(page.Entries) != 4 {
			t.Errorf("the other user's outbox holds %d rows (%v), want 4", len(page.Entries), err)
		}
	})
}

// FuzzDeleteOutboxBody holds decodeOutboxDelete to its contract: all alone,
// or 1 to 200 non-blank ids, else a 400 of the standard's codes.
func FuzzDeleteOutboxBody(f *testing.F) {
	for _, seed := range []string{`{"all":true}`, `{"messageIds":["a"]}`, `{"all":true,"messageIds":null}`, `{"all":1}`, `{"messageIds":[""]}`, `{}`, `[]`, `null`, `{"messageIds":"a"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		all, ids, err := decodeOutboxDelete(json.RawMessage(payload))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || (e.Code != "INVALID_PARAMETERS" && e.Code != "INVALID_PAYLOAD_FORMAT") {
				t.Fatalf("%q: %v", payload, err)
			}
			return
		}
		if all == (len(ids) > 0) || len(ids) > store.MaxOutboxIDs {
			t.Fatalf("%q: all %v, %d ids", payload, all, len(ids))
		}
		for _, id := range ids {
			if strings.TrimSpace(id) == "" {
				t.Fatalf("%q: blank id accepted", payload)
			}
		}
	})
}
