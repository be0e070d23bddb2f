package store_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// A populated SQLite database copied into PostgreSQL reads back the same,
// row for row, and the copy goes on from there: new ids follow the copied
// ones, sealed values open with the copied master key.
func TestCopyToPostgresRoundTrips(t *testing.T) {
	clk := newClock()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "amsg.db")
	src := storetest.Open(t, store.Config{Path: path, Now: clk.Now})
	populate(t, src, clk)

	url := storetest.DatabaseURL(t)
	sec := src.Secrets()
	dst := storetest.Open(t, store.Config{DatabaseURL: url, Now: clk.Now, MasterKey: sec.MasterKey,
		VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey})
	copied, err := src.CopyTo(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	report, err := src.Schema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	from, to := rawDB(t, path), rawPostgres(t, url)
	for _, table := range report.Tables {
		if n, ok := copied[table.Name]; ok {
			want, got := dumpTable(t, from, table), dumpTable(t, to, table)
			if len(want) == 0 || n != len(want) {
				t.Errorf("%s: %d rows copied of %d; the test should populate every table", table.Name, n, len(want))
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s differs after the copy:\n got %v\nwant %v", table.Name, got, want)
			}
		}
	}

	task, err := dst.Task(ctx, alice, taskUUID(1))
	if err != nil || string(task.Payload) != `{"n":1}` {
		t.Errorf("copied task = %+v, %v; want its payload readable", task, err)
	}
	next := insertTask(t, dst, alice, 9, clk.Now())
	if next.ID <= task.ID {
		t.Errorf("a new task got id %d, not after the copied %d", next.ID, task.ID)
	}
	if _, err := src.CopyTo(ctx, dst); !errors.Is(err, store.ErrDestinationNotEmpty) {
		t.Errorf("a second copy = %v, want ErrDestinationNotEmpty", err)
	}
}

// populate puts rows in every table CopyTo copies.
func populate(t *testing.T, st *store.Store, clk *clock) {
	t.Helper()
	ctx := t.Context()
	if _, err := st.PutSubscription(ctx, alice, subscriptionJSON("https://push.example/a"), clk.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{At: clk.Now(), MessageID: "m1", UserID: alice, DeviceID: 1,
		PushHost: "push.example", Try: 1, Status: 201, Outcome: push.OutcomeDelivered, Latency: time.Millisecond}}}); err != nil {
		t.Fatal(err)
	}
	putState(t, st, alice, store.ClientStateEntry{Namespace: "chat", Key: "k", Value: "v", UpdatedAt: 10})
	if err := st.AppendOutbox(ctx, alice, []store.OutboxMessage{{MessageID: "m1", TaskUUID: taskUUID(1),
		MessageIndex: 1, TotalMessages: 1, Payload: json.RawMessage(`{"message":"hi"}`)}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, _, err := st.InsertTask(ctx, store.NewTask{UserID: alice, UUID: taskUUID(i), MessageType: push.TypeFixed,
			NextSendAt: clk.Now().Add(time.Duration(i) * time.Hour), Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: alice, SessionID: "sess_1", Settings: json.RawMessage(`{}`),
		Entries: []store.TranscriptEntry{entry("01A", "input", `{"text":"hi"}`, store.TokenUsage{Input: 3}, "m1")}}); err != nil {
		t.Fatal(err)
	}
	populateCloudData(t, st, clk)
	if err := st.CreateBroadcast(ctx, store.Broadcast{ID: "b1", Message: json.RawMessage(`{"message":"hi"}`), UserIDs: []string{alice}}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutTokenProof(ctx, alice, store.TokenProof{TokenMAC: "mac", SeenAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutLLMCredentials(ctx, alice, []store.CredentialEntry{{CredID: "global/chat",
		Value: store.LLMCredential{APIURL: "https://llm.example/v1", APIKey: "k", PrimaryModel: "m"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdatePreferences(ctx, alice, func(store.Preferences) store.Preferences {
		return store.Preferences{TimeZone: "Asia/Tokyo", QuietHours: &store.QuietHours{Start: 1320, End: 420}}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TakeDailySlot(ctx, alice, "2026-03-01", "m1", 5); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.ClaimIdempotencyKey(ctx, alice, "k1", "h1"); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateInterrupts(ctx, []store.Interrupt{{ID: "int_1", UserID: alice, SessionID: "sess_1", ToolCallID: "call_1",
		Body: json.RawMessage(`{}`), CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendMessageEvents(ctx, store.MessageEvent{UserID: alice, MessageID: "m1", DeviceID: "1", Type: store.EventShown,
		Detail: json.RawMessage(`{"action":"open"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "wh_1", URL: "https://hooks.example.com/", Events: []string{"message.shown"},
		Secret: testWebhookSecret}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddWebhookDeliveries(ctx, 0, 1, []store.WebhookDelivery{{EndpointID: "wh_1", EventSeq: 1, MessageKey: alice + "/m1", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
}

func rawPostgres(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// dumpTable reads the table's columns (the source's list) in a fixed
// order, each value printed, so both dialects' drivers compare alike.
func dumpTable(t *testing.T, db *sql.DB, table store.SchemaTable) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT `+strings.Join(table.Columns, ", ")+` FROM `+table.Name+` ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	values := make([]any, len(table.Columns))
	pointers := make([]any, len(values))
	for i := range values {
		pointers[i] = &values[i]
	}
	for rows.Next() {
		if err := rows.Scan(pointers...); err != nil {
			t.Fatal(err)
		}
		var row []string
		for _, v := range values {
			if b, ok := v.([]byte); ok {
				v = fmt.Sprintf("%x", b)
			}
			row = append(row, fmt.Sprint(v))
		}
		out = append(out, strings.Join(row, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
