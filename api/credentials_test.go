package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/llm"
	"amsg/llm/llmtest"
	"amsg/push/errcode"
	"amsg/store"
	"amsg/store/storetest"
)

// credentialsCall sends an encrypted body (raw JSON) to /llm-credentials.
func credentialsCall(t testing.TB, h http.Handler, method, userID, body string) response {
	t.Helper()
	return send(h, method, "/api/v1/llm-credentials", browserEncryptRaw(t, browserUserKey(userID), body), encryptedHeaders(userID))
}

func credentialJSON(id, key string) string {
	quoted, _ := json.Marshal(id)
	return fmt.Sprintf(`{"credId":%s,"value":{"apiUrl":"https://llm.example/v1","apiKey":%q,"primaryModel":"m"}}`, quoted, key)
}

// credentialIDs lists what GET /llm-credentials shows: ids only.
func credentialIDs(t testing.TB, h http.Handler, userID string) string {
	t.Helper()
	got := send(h, http.MethodGet, "/api/v1/llm-credentials", "", map[string]string{"X-User-Id": userID})
	var body struct {
		Data struct {
			Credentials []map[string]json.RawMessage `json:"credentials"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(got.body), &body); err != nil || got.status != 200 {
		t.Fatalf("GET /llm-credentials: %d %s", got.status, got.body)
	}
	var ids []string
	for _, c := range body.Data.Credentials {
		if len(c) != 2 || c["updatedAt"] == nil {
			t.Errorf("a listed credential has more than credId and updatedAt: %v", c)
		}
		var id string
		_ = json.Unmarshal(c["credId"], &id)
		ids = append(ids, id)
	}
	return strings.Join(ids, ",")
}

// TestLLMCredentialsRoutes writes, lists and deletes credentials through
// the encrypted envelope; refused requests change nothing.
func TestLLMCredentialsRoutes(t *testing.T) {
	onBothBackends(t, store.Config{}, func(t *testing.T, st *store.Store) {
		s := newTestServer(t, Config{}, Deps{Store: st})
		put := func(body string) response { return credentialsCall(t, s, http.MethodPut, testUserID, body) }
		del := func(body string) response { return credentialsCall(t, s, http.MethodDelete, testUserID, body) }
		wantBody(t, "put", put(`{"credentials":[`+strings.Join([]string{credentialJSON("char:1/chat", "k1"), credentialJSON("char:1/vision", "k2"),
			credentialJSON("char:2/chat", "k3"), credentialJSON("global/chat", "k4"), credentialJSON("char:1/chat", "k1b")}, ",")+`]}`),
			200, `{"success":true,"data":{"upserted":4}}`)
		if got := credentialIDs(t, s, testUserID); got != "char:1/chat,char:1/vision,char:2/chat,global/chat" {
			t.Errorf("listed %s", got)
		}
		if got := send(s, http.MethodGet, "/api/v1/llm-credentials", "", map[string]string{"X-User-Id": testUserID}); strings.Contains(got.body, "k1") || strings.Contains(got.body, "llm.example") {
			t.Errorf("GET shows a value: %s", got.body)
		}
		if cred, ok, err := st.LLMCredential(t.Context(), testUserID, "char:1/chat"); err != nil || !ok || cred.APIKey != "k1b" {
			t.Errorf("char:1/chat = %+v %v %v, want the batch's last entry", cred, ok, err)
		}

		long := strings.Repeat("c", 129)
		for _, c := range []struct{ name, method, body, want string }{
			{"no credentials", http.MethodPut, `{}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credentials 必须是非空数组","details":{"invalidFields":["credentials"]}}}`},
			{"101 credentials", http.MethodPut, `{"credentials":[` + strings.TrimSuffix(strings.Repeat(credentialJSON("x", "k")+",", 101), ",") + `]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credentials 一批最多 100 条","details":{"invalidFields":["credentials"]}}}`},
			{"control character", http.MethodPut, `{"credentials":[` + credentialJSON("ok", "k") + `,` + credentialJSON("a\u0007b", "k") + `]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credentials[1].credId 必须是 1–128 字符、不含控制字符的字符串","details":{"invalidFields":["credentials[1].credId"]}}}`},
			{"DEL character", http.MethodPut, `{"credentials":[` + credentialJSON("a\u007fb", "k") + `]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credentials[0].credId 必须是 1–128 字符、不含控制字符的字符串","details":{"invalidFields":["credentials[0].credId"]}}}`},
			{"long id", http.MethodPut, `{"credentials":[` + credentialJSON(long, "k") + `]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credentials[0].credId 必须是 1–128 字符、不含控制字符的字符串","details":{"invalidFields":["credentials[0].credId"]}}}`},
			{"no key", http.MethodPut, `{"credentials":[{"credId":"x","value":{"apiUrl":"https://llm.example/v1","primaryModel":"m"}}]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credentials[0].value.apiKey 必须是非空字符串","details":{"invalidFields":["credentials[0].value"]}}}`},
			{"private apiUrl", http.MethodPut, `{"credentials":[{"credId":"x","value":{"apiUrl":"http://127.0.0.1:9/v1","apiKey":"k","primaryModel":"m"}}]}`, ``},
			{"neither", http.MethodDelete, `{}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"要么 { all: true }，要么 credIds 非空数组，要么 credIdPrefix","details":{"invalidFields":["credIds"]}}}`},
			{"ids and all", http.MethodDelete, `{"all":true,"credIds":["global/chat"]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"all、credIds 与 credIdPrefix 只能给一个","details":{"invalidFields":["all","credIds","credIdPrefix"]}}}`},
			{"prefix and ids", http.MethodDelete, `{"credIdPrefix":"char:","credIds":["global/chat"]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"all、credIds 与 credIdPrefix 只能给一个","details":{"invalidFields":["all","credIds","credIdPrefix"]}}}`},
			{"empty ids", http.MethodDelete, `{"credIds":[]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"要么 { all: true }，要么 credIds 非空数组，要么 credIdPrefix","details":{"invalidFields":["credIds"]}}}`},
			{"bad id", http.MethodDelete, `{"credIds":["global/chat","x\ny"]}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credIds[1] 必须是 1–128 字符、不含控制字符的字符串","details":{"invalidFields":["credIds[1]"]}}}`},
			{"empty prefix", http.MethodDelete, `{"credIdPrefix":""}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credIdPrefix 必须是 1–128 字符、不含控制字符的字符串","details":{"invalidFields":["credIdPrefix"]}}}`},
			{"prefix with a control character", http.MethodDelete, `{"credIdPrefix":"char:\u0000"}`, `{"success":false,"error":{"code":"INVALID_PARAMETERS","message":"credIdPrefix 必须是 1–128 字符、不含控制字符的字符串","details":{"invalidFields":["credIdPrefix"]}}}`},
		} {
			got := credentialsCall(t, s, c.method, testUserID, c.body)
			if c.want == "" { // the URL policy's own message
				if code, _ := errorOf(t, got.body); got.status != 400 || code != "INVALID_API_URL" {
					t.Errorf("%s: %d %s", c.name, got.status, got.body)
				}
				continue
			}
			wantBody(t, c.name, got, 400, c.want)
		}
		wantBody(t, "not encrypted", send(s, http.MethodDelete, "/api/v1/llm-credentials", `{"all":true}`, map[string]string{"X-User-Id": testUserID}), 400,
			`{"success":false,"error":{"code":"ENCRYPTION_REQUIRED","message":"请求体必须加密"}}`)
		if got := credentialIDs(t, s, testUserID); got != "char:1/chat,char:1/vision,char:2/chat,global/chat" {
			t.Fatalf("after refused requests: %s", got)
		}

		wantBody(t, "prefix", del(`{"credIdPrefix":"char:1/"}`), 200, `{"success":true,"data":{"deleted":2}}`)
		wantBody(t, "ids", del(`{"credIds":["global/chat","global/chat","never"]}`), 200, `{"success":true,"data":{"deleted":1}}`)
		if got := credentialIDs(t, s, testUserID); got != "char:2/chat" {
			t.Errorf("after the deletes: %s", got)
		}
		wantBody(t, "all", del(`{"all":true}`), 200, `{"success":true,"data":{"deleted":1}}`)
		if got := credentialIDs(t, s, testUserID); got != "" {
			t.Errorf("after deleting all: %s", got)
		}
	})
}

// TestLLMCredentialsLimit fills a user's 500 rows: a batch adding one more
// is refused whole, one that only overwrites is not.
func TestLLMCredentialsLimit(t *testing.T) {
	s := newTestServer(t, Config{}, Deps{})
	for batch := range 5 {
		var creds []string
		for i := range 100 {
			creds = append(creds, credentialJSON(fmt.Sprintf("c%03d", batch*100+i), "k"))
		}
		if got := credentialsCall(t, s, http.MethodPut, testUserID, `{"credentials":[`+strings.Join(creds, ",")+`]}`); got.status != 200 {
			t.Fatalf("batch %d: %d %s", batch, got.status, got.body)
		}
	}
	wantBody(t, "one more", credentialsCall(t, s, http.MethodPut, testUserID, `{"credentials":[`+credentialJSON("c000", "new")+`,`+credentialJSON("c500", "k")+`]}`), 400,
		`{"success":false,"error":{"code":"LLM_CREDENTIALS_LIMIT_EXCEEDED","message":"单用户最多存 500 行凭据","details":{"adding":1,"existing":500,"limit":500}}}`)
	if cred, _, _ := s.deps.Store.LLMCredential(t.Context(), testUserID, "c000"); cred.APIKey != "k" {
		t.Errorf("a refused batch wrote c000: %+v", cred)
	}
	wantBody(t, "overwrite", credentialsCall(t, s, http.MethodPut, testUserID, `{"credentials":[`+credentialJSON("c000", "new")+`]}`), 200,
		`{"success":true,"data":{"upserted":1}}`)
}

// TestLLMCredentialsSealedAtRest reads the row as stored: the key is not
// in it.
func TestLLMCredentialsSealedAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	s := newTestServer(t, Config{}, Deps{Store: storetest.Open(t, store.Config{Path: path})})
	credentialsCall(t, s, http.MethodPut, testUserID, `{"credentials":[`+credentialJSON("global/chat", "sk-secret-key")+`]}`)
	var value string
	if err := rawDB(t, path).QueryRow(`SELECT value FROM llm_credentials WHERE cred_id = 'global/chat'`).Scan(&value); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(value, "sk-secret") || strings.Contains(value, "llm.example") {
		t.Errorf("stored in the clear: %s", value)
	}
}

// TestCredRefsFireWithTheCurrentKey schedules a prompted task that names
// its credential: the fire uses the key as rotated after scheduling; once
// the credential is deleted the occurrence fails with CREDENTIAL_MISSING
// and is retried.
func TestCredRefsFireWithTheCurrentKey(t *testing.T) {
	e := newTaskEnv(t, Config{LLMPolicy: llm.URLPolicy{AllowPrivate: true}})
	e.subscribe(t, testUserID)
	model := llmtest.NewServer(t)
	putCred := func(key string) {
		t.Helper()
		body := fmt.Sprintf(`{"credentials":[{"credId":"global/chat","value":{"apiUrl":%q,"apiKey":%q,"primaryModel":"m"}}]}`, model.APIURL(), key)
		if got := credentialsCall(t, e.s, http.MethodPut, testUserID, body); got.status != 200 {
			t.Fatalf("PUT /llm-credentials: %d %s", got.status, got.body)
		}
	}
	task := fixedTask(map[string]any{"messageType": "prompted", "userMessage": nil, "completePrompt": "say hi",
		"recurrenceType": "daily", "credRefs": map[string]string{"chat": "global/chat"}})
	got := e.schedule(t, testUserID, task)
	if code, details := errorOf(t, got.body); got.status != 409 || code != "CREDENTIAL_NOT_FOUND" || !strings.Contains(details, `"credId":"global/chat"`) {
		t.Fatalf("credRefs before the credential exists: %d %s", got.status, got.body)
	}
	putCred("old-key")
	got = e.schedule(t, testUserID, task)
	if got.status != http.StatusCreated {
		t.Fatalf("schedule with credRefs: %d %s", got.status, got.body)
	}
	var created struct{ Data struct{ UUID string } }
	_ = json.Unmarshal([]byte(got.body), &created)
	id := created.Data.UUID

	var read struct {
		Task struct {
			CredRefs map[string]string `json:"credRefs"`
		} `json:"task"`
	}
	decrypted(t, testUserID, do(t, e.s, http.MethodGet, "/api/v1/message?id="+id, map[string]string{"X-User-Id": testUserID}), &read)
	if read.Task.CredRefs["chat"] != "global/chat" {
		t.Errorf("projection credRefs = %v", read.Task.CredRefs)
	}
	got = e.update(t, testUserID, id, map[string]any{"apiKey": "inline"})
	if code, _ := errorOf(t, got.body); got.status != 409 || code != "TASK_USES_CRED_REFS" {
		t.Errorf("inline credential update: %d %s", got.status, got.body)
	}

	// An update may name another credential, which must exist, and never
	// with inline credentials.
	got = e.update(t, testUserID, id, map[string]any{"credRefs": map[string]string{"chat": "global/other"}})
	if code, details := errorOf(t, got.body); got.status != 409 || code != "CREDENTIAL_NOT_FOUND" || !strings.Contains(details, `"credId":"global/other"`) {
		t.Errorf("update naming a missing credential: %d %s", got.status, got.body)
	}
	got = e.update(t, testUserID, id, map[string]any{"credRefs": map[string]string{"chat": "global/chat"}, "apiKey": "inline"})
	if code, _ := errorOf(t, got.body); got.status != 400 || code != "INVALID_UPDATE_DATA" {
		t.Errorf("update with credRefs and an inline key: %d %s", got.status, got.body)
	}
	if got = e.update(t, testUserID, id, map[string]any{"credRefs": map[string]string{"chat": "global/chat", "vision": "global/chat"}}); got.status != 200 {
		t.Errorf("update naming an existing credential: %d %s", got.status, got.body)
	}

	putCred("rotated-key") // after scheduling: the task must use it
	model.Enqueue(llmtest.Reply{Content: "hi"})
	e.clk.Set(taskEpoch.Add(time.Minute))
	if _, err := e.sched.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer rotated-key" {
		t.Fatalf("LLM requests %d, Authorization %q, want Bearer rotated-key", len(reqs), reqs[0].Header.Get("Authorization"))
	}
	stored, _ := e.st.Task(t.Context(), testUserID, id)
	if strings.Contains(string(stored.Payload), "rotated-key") {
		t.Error("the resolved key was written into the task")
	}

	if got := credentialsCall(t, e.s, http.MethodDelete, testUserID, `{"all":true}`); got.status != 200 {
		t.Fatal(got.body)
	}
	e.clk.Set(taskEpoch.Add(24*time.Hour + time.Minute))
	if _, err := e.sched.Tick(t.Context()); err != nil {
		t.Fatal(err)
	}
	stored, _ = e.st.Task(t.Context(), testUserID, id)
	if stored.Status != store.TaskPending || stored.RetryCount != 1 || !strings.Contains(string(stored.LastError), `"code":"CREDENTIAL_MISSING"`) {
		t.Errorf("after the credential was deleted: status %s, retries %d, lastError %s", stored.Status, stored.RetryCount, stored.LastError)
	}
	if len(model.Requests()) != 1 {
		t.Error("the LLM was called without a credential")
	}
}

// TestCredRefsScheduleChecks: credRefs replaces the inline credentials of a
// prompted task, never accompanies them, and has upstream's shape.
func TestCredRefsScheduleChecks(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	prompted := func(over map[string]any) map[string]any {
		m := fixedTask(map[string]any{"messageType": "prompted", "userMessage": nil, "completePrompt": "p"})
		for k, v := range over {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name string
		task map[string]any
		want string
	}{
		{"both", prompted(map[string]any{"credRefs": map[string]string{"chat": "g"}, "apiUrl": "https://llm.example/v1", "apiKey": "k", "primaryModel": "m"}),
			`"message":"credRefs.chat 与内联的 apiUrl / apiKey / primaryModel 只能给一种"`},
		{"empty", prompted(map[string]any{"credRefs": map[string]string{}}), `"message":"credRefs 不能是空对象（不需要就别带这个字段）"`},
		{"an array", prompted(map[string]any{"credRefs": []string{"g"}}), `"message":"credRefs 必须是 { <purpose>: <credId> } 形状的普通对象"`},
		{"control character", prompted(map[string]any{"credRefs": map[string]string{"chat": "a\u0001"}}), `"invalidFields":["credRefs.chat"]`},
		{"neither", prompted(nil), `"missingFields":["apiUrl","apiKey","primaryModel"]`},
	} {
		got := e.schedule(t, testUserID, c.task)
		if got.status != 400 || !strings.Contains(got.body, c.want) {
			t.Errorf("%s: %d %s, want …%s", c.name, got.status, got.body, c.want)
		}
	}
}

// FuzzCredentialBodies holds the decoders of PUT and DELETE
// /llm-credentials and of credRefs to the standard's 400s.
func FuzzCredentialBodies(f *testing.F) {
	for _, seed := range []string{`{"credentials":[` + credentialJSON("a", "k") + `]}`, `{"credIds":["a"]}`, `{"all":true}`, `{"credIdPrefix":"a"}`,
		`{"all":true,"credIdPrefix":"a"}`, `{"credentials":[{"credId":"\u0000"}]}`, `{"chat":"a","x":"b"}`, `[]`, `{"credIds":[1]}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		check := func(err error) {
			var e *Error
			if err != nil && (!errors.As(err, &e) || e.Status != 400) {
				t.Fatalf("%q: %v", payload, err)
			}
		}
		entries, err := decodeCredentials(json.RawMessage(payload))
		check(err)
		for _, c := range entries {
			if store.CheckCredID(c.CredID) != nil || c.Value.APIKey == "" {
				t.Fatalf("%q: accepted %+v", payload, c)
			}
		}
		d, err := decodeCredentialDeletion(json.RawMessage(payload))
		check(err)
		if err == nil && btoi(d.all)+btoi(d.prefix != "")+btoi(len(d.ids) > 0) != 1 {
			t.Fatalf("%q: %+v", payload, d)
		}
		if refs, apiErr := decodeCredRefs(json.RawMessage(payload), errcode.InvalidParameters); apiErr == nil {
			for _, id := range refs {
				if store.CheckCredID(id) != nil {
					t.Fatalf("%q: accepted %q", payload, id)
				}
			}
		}
	})
}
