package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// outboxServer is a server over a store whose clock the test sets, holding
// n recorded pushes m1…mn of one task for testUserID.
func outboxServer(t testing.TB, n int) (*Server, *store.Store, *time.Time) {
	t.Helper()
	now := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	st := storetest.Open(t, store.Config{Now: func() time.Time { return now }})
	var messages []store.OutboxMessage
	for i := 1; i <= n; i++ {
		messages = append(messages, store.OutboxMessage{
			MessageID: fmt.Sprintf("m%d", i), TaskUUID: "0f8fad5b-d9cb-469f-a165-70867728950e", SessionID: "sess_1",
			MessageIndex: i, TotalMessages: n,
			Payload: json.RawMessage(fmt.Sprintf(`{"messageKind":"content","messageId":"m%d","message":"<part %d>"}`, i, i)),
		})
	}
	if n > 0 {
		if err := st.AppendOutbox(t.Context(), testUserID, messages); err != nil {
			t.Fatal(err)
		}
	}
	return newTestServer(t, Config{}, Deps{Store: st}), st, &now
}

func getOutbox(t testing.TB, h http.Handler, query string) response {
	t.Helper()
	return send(h, http.MethodGet, "/api/v1/outbox"+query, "", map[string]string{"X-User-Id": testUserID})
}

// outboxPage is the decrypted GET /outbox response, as a client reads it.
type outboxPage struct {
	Entries []struct {
		MessageID string `json:"messageId"`
	} `json:"entries"`
	Cursor  int64 `json:"cursor"`
	HasMore bool  `json:"hasMore"`
}

func readOutboxPage(t testing.TB, got response) outboxPage {
	t.Helper()
	var page outboxPage
	if err := json.Unmarshal([]byte(openResponse(t, testUserID, got)), &page); err != nil {
		t.Fatal(err)
	}
	return page
}

func ackOutbox(t testing.TB, h http.Handler, payload any) response {
	t.Helper()
	return send(h, http.MethodPost, "/api/v1/outbox/ack", browserEncrypt(t, browserUserKey(testUserID), payload), encryptedHeaders(testUserID))
}

func TestOutboxPagesAndAcks(t *testing.T) {
	s, st, now := outboxServer(t, 5)
	created := now.UnixMilli()
	*now = now.Add(time.Second)
	if err := st.RecordDeliveries(t.Context(), push.Bookkeeping{UserID: testUserID, Delivered: []string{"m1"}}); err != nil {
		t.Fatal(err)
	}
	entry := func(i int, delivered string) string {
		return fmt.Sprintf(`{"id":%d,"messageId":"m%d","taskUuid":"0f8fad5b-d9cb-469f-a165-70867728950e","sessionId":"sess_1","messageIndex":%d,"totalMessages":5,"createdAt":%d,"deliveredAt":%s,"push":{"messageKind":"content","messageId":"m%d","message":"<part %d>"}}`,
			i, i, i, created, delivered, i, i)
	}
	pages := []struct{ query, want string }{
		{"?limit=2", `{"entries":[` + entry(1, fmt.Sprint(now.UnixMilli())) + `,` + entry(2, "null") + `],"cursor":2,"hasMore":true}`},
		{"?since=2&limit=2", `{"entries":[` + entry(3, "null") + `,` + entry(4, "null") + `],"cursor":4,"hasMore":true}`},
		{"?since=4&limit=2", `{"entries":[` + entry(5, "null") + `],"cursor":5,"hasMore":false}`},
		{"?since=5&limit=2", `{"entries":[],"cursor":5,"hasMore":false}`},
		{"?since=99", `{"entries":[],"cursor":99,"hasMore":false}`},
	}
	for _, p := range pages {
		if got := openResponse(t, testUserID, getOutbox(t, s, p.query)); got != p.want {
			t.Errorf("GET /outbox%s:\n got %s\nwant %s", p.query, got, p.want)
		}
	}

	wantBody(t, "ack", ackOutbox(t, s, map[string]any{"messageIds": []string{"m1", "m2", "m9"}}), 200, `{"success":true,"data":{"acked":2}}`)
	wantBody(t, "ack again", ackOutbox(t, s, map[string]any{"messageIds": []string{"m1", "m2"}}), 200, `{"success":true,"data":{"acked":0}}`)
	page := readOutboxPage(t, getOutbox(t, s, ""))
	if len(page.Entries) != 3 || page.Entries[0].MessageID != "m3" || page.Cursor != 5 || page.HasMore {
		t.Errorf("after acking m1 and m2: %+v", page)
	}
}

// TestOutboxQueryParameters reads since and limit as JavaScript's Number()
// does and answers the standard's codes for the rest.
func TestOutboxQueryParameters(t *testing.T) {
	s, _, _ := outboxServer(t, 120)
	cursor := `{"success":false,"error":{"code":"INVALID_OUTBOX_CURSOR","message":"since 必须是非负整数（上一页响应里的 cursor）"}}`
	limit := `{"success":false,"error":{"code":"INVALID_OUTBOX_LIMIT","message":"limit 必须是 1-100 的整数"}}`
	for _, c := range []struct {
		query   string
		entries int    // entries returned on success
		cursor  int64  // cursor returned on success
		err     string // the error body otherwise
	}{
		{"", 50, 50, ""},
		{"?since=&limit=", 50, 50, ""},
		{"?limit=7", 7, 7, ""},
		{"?limit=%207%0A", 7, 7, ""},
		{"?limit=7.0", 7, 7, ""},
		{"?limit=1e1", 10, 10, ""},
		{"?limit=0x10", 16, 16, ""},
		{"?limit=101", 100, 100, ""},
		{"?limit=1e300", 100, 100, ""},
		{"?limit=0XFFFFFFFFFFFFFFFFFFFF", 100, 100, ""},
		{"?since=110", 10, 120, ""},
		{"?since=%20", 50, 50, ""}, // Number(" ") is 0
		{"?since=-0", 50, 50, ""},
		{"?since=0b1100100", 20, 120, ""}, // 100
		{"?since=1e2&limit=5", 5, 105, ""},
		{"?since=9007199254740991", 0, 9007199254740991, ""},
		{"?since=abc", 0, 0, cursor},
		{"?since=-1", 0, 0, cursor},
		{"?since=1.5", 0, 0, cursor},
		{"?since=0x", 0, 0, cursor},
		{"?since=Infinity", 0, 0, cursor},
		{"?since=9007199254740992", 0, 0, cursor},
		{"?since=12px", 0, 0, cursor},
		{"?since=abc&limit=abc", 0, 0, cursor}, // the cursor is checked first
		{"?limit=0", 0, 0, limit},
		{"?limit=-3", 0, 0, limit},
		{"?limit=2.5", 0, 0, limit},
		{"?limit=Infinity", 0, 0, limit},
		{"?limit=ten", 0, 0, limit},
		{"?limit=0o", 0, 0, limit},
	} {
		got := getOutbox(t, s, c.query)
		if c.err != "" {
			wantBody(t, "GET /outbox"+c.query, got, 400, c.err)
			continue
		}
		page := readOutboxPage(t, got)
		if len(page.Entries) != c.entries || page.Cursor != c.cursor {
			t.Errorf("GET /outbox%s: %d entries, cursor %d; want %d, %d", c.query, len(page.Entries), page.Cursor, c.entries, c.cursor)
		}
	}
	wantBody(t, "no user", send(s, http.MethodGet, "/api/v1/outbox", "", nil), 400, `{"success":false,"error":{"code":"USER_ID_REQUIRED","message":"缺少用户标识符"}}`)
}

func TestOutboxAckChecks(t *testing.T) {
	s, _, _ := outboxServer(t, 2)
	notArray := `{"success":false,"error":{"code":"INVALID_OUTBOX_ACK","message":"messageIds 必须是非空数组"}}`
	notString := `{"success":false,"error":{"code":"INVALID_OUTBOX_ACK","message":"messageIds 的每一项必须是非空字符串"}}`
	for _, c := range []struct {
		name    string
		payload any
		status  int
		want    string
	}{
		{"no messageIds", map[string]any{}, 400, notArray},
		{"null", map[string]any{"messageIds": nil}, 400, notArray},
		{"empty", map[string]any{"messageIds": []string{}}, 400, notArray},
		{"a string", map[string]any{"messageIds": "m1"}, 400, notArray},
		{"201 ids", map[string]any{"messageIds": make([]string, 201)}, 400, `{"success":false,"error":{"code":"TOO_MANY_OUTBOX_ACK_IDS","message":"单次最多 ack 200 条","details":{"count":201}}}`},
		{"a number", map[string]any{"messageIds": []any{"m1", 1}}, 400, notString},
		{"a null", map[string]any{"messageIds": []any{"m1", nil}}, 400, notString},
		{"a blank id", map[string]any{"messageIds": []string{"m1", " \u3000"}}, 400, notString},
	} {
		wantBody(t, c.name, ackOutbox(t, s, c.payload), c.status, c.want)
	}
	// Nothing was acknowledged by the refused requests.
	if got := openResponse(t, testUserID, getOutbox(t, s, "")); !strings.Contains(got, `"messageId":"m1"`) {
		t.Errorf("m1 was acked by a refused request: %s", got)
	}
	twoHundred := []string{"m1"}
	for i := len(twoHundred); i < 200; i++ {
		twoHundred = append(twoHundred, fmt.Sprintf("unknown-%d", i))
	}
	wantBody(t, "200 ids", ackOutbox(t, s, map[string]any{"messageIds": twoHundred}), 200, `{"success":true,"data":{"acked":1}}`)
	got := send(s, http.MethodPost, "/api/v1/outbox/ack", `{"messageIds":["m1"]}`, map[string]string{"X-User-Id": testUserID})
	wantBody(t, "plaintext body", got, 400, `{"success":false,"error":{"code":"ENCRYPTION_REQUIRED","message":"请求体必须加密"}}`)
	// Route matching by suffix keeps /outbox and /outbox/ack apart.
	wantBody(t, "ack under another base", send(s, http.MethodPost, "/amsg/outbox/ack/", browserEncrypt(t, browserUserKey(testUserID), map[string]any{"messageIds": []string{"m2"}}), encryptedHeaders(testUserID)),
		200, `{"success":true,"data":{"acked":1}}`)
}

// FuzzOutboxAck sends arbitrary decrypted ack bodies: each is acked or
// refused with one of the ack codes, never a 500.
func FuzzOutboxAck(f *testing.F) {
	for _, seed := range []string{`{"messageIds":["m1"]}`, `{"messageIds":[]}`, `{"messageIds":[" "]}`, `{"messageIds":[1]}`,
		`{"messageIds":"m1"}`, `[]`, `null`, `{"messageIds":["m1","m1","nope"]}`} {
		f.Add(seed)
	}
	s, _, _ := outboxServer(f, 3)
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		got := ackOutbox(t, s, json.RawMessage(body))
		switch got.status {
		case http.StatusOK:
			var data struct {
				Acked *int `json:"acked"`
			}
			if decodeData(t, got.body, &data); data.Acked == nil || *data.Acked < 0 || *data.Acked > 3 {
				t.Fatalf("acked %s", got.body)
			}
		case http.StatusBadRequest:
			if code, _ := errorOf(t, got.body); !strings.HasPrefix(code, "INVALID_OUTBOX_ACK") && code != "TOO_MANY_OUTBOX_ACK_IDS" && code != "INVALID_PAYLOAD_FORMAT" {
				t.Fatalf("400 %s for %s", got.body, body)
			}
		default:
			t.Fatalf("%d %s for %s", got.status, got.body, body)
		}
	})
}

// FuzzOutboxQuery sends arbitrary since and limit values: the answer is an
// encrypted page or one of the two standard 400s, never a 500.
func FuzzOutboxQuery(f *testing.F) {
	for _, seed := range [][2]string{{"", ""}, {"0", "50"}, {"3", "2"}, {"-1", "0"}, {"1e309", "1e309"}, {"0x10", "0b1"}, {" 7 ", "\u3000"}, {"Infinity", "-0"}, {"9007199254740993", "NaN"}} {
		f.Add(seed[0], seed[1])
	}
	s, _, _ := outboxServer(f, 3)
	f.Fuzz(func(t *testing.T, since, limit string) {
		got := getOutbox(t, s, "?since="+url.QueryEscape(since)+"&limit="+url.QueryEscape(limit))
		switch got.status {
		case http.StatusOK:
			if page := readOutboxPage(t, got); len(page.Entries) > store.MaxOutboxPage || page.Cursor < 0 {
				t.Fatalf("page %+v", page)
			}
		case http.StatusBadRequest:
			if !strings.Contains(got.body, `"code":"INVALID_OUTBOX_CURSOR"`) && !strings.Contains(got.body, `"code":"INVALID_OUTBOX_LIMIT"`) {
				t.Fatalf("400 %s", got.body)
			}
		default:
			t.Fatalf("status %d: %s", got.status, got.body)
		}
	})
}
