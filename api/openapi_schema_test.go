package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/usercrypt"
)

// schemaChecker validates JSON values against the subset of JSON Schema
// the document uses: $ref (local), type, const, enum, oneOf (as anyOf),
// required, properties, additionalProperties and items.
type schemaChecker struct{ doc map[string]any }

func (c schemaChecker) resolve(schema map[string]any) map[string]any {
	for {
		ref, ok := schema["$ref"].(string)
		if !ok {
			return schema
		}
		var node any = c.doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			node = node.(map[string]any)[part]
		}
		schema = node.(map[string]any)
	}
}

// check returns the first place value breaks schema, or "".
func (c schemaChecker) check(schema map[string]any, value any, at string) string {
	schema = c.resolve(schema)
	if want, ok := schema["const"]; ok && fmt.Sprint(want) != fmt.Sprint(value) {
		return fmt.Sprintf("%s: %v, want the constant %v", at, value, want)
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(value) }) {
		return fmt.Sprintf("%s: %v is not one of %v", at, value, enum)
	}
	if alternatives, ok := schema["oneOf"].([]any); ok && !slices.ContainsFunc(alternatives, func(alt any) bool {
		return c.check(alt.(map[string]any), value, at) == ""
	}) {
		return fmt.Sprintf("%s: %v matches none of oneOf", at, value)
	}
	if types := schemaTypes(schema["type"]); len(types) > 0 && !slices.Contains(types, jsonType(value)) &&
		!(jsonType(value) == "integer" && slices.Contains(types, "number")) {
		return fmt.Sprintf("%s: a %s, want %v", at, jsonType(value), types)
	}
	switch v := value.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, name := range schemaTypes(schema["required"]) {
			if _, ok := v[name]; !ok {
				return fmt.Sprintf("%s: lacks required %q", at, name)
			}
		}
		for name, member := range v {
			if sub, ok := props[name].(map[string]any); ok {
				if msg := c.check(sub, member, at+"."+name); msg != "" {
					return msg
				}
				continue
			}
			switch extra := schema["additionalProperties"].(type) {
			case bool:
				if !extra {
					return fmt.Sprintf("%s: %q is not in the schema", at, name)
				}
			case map[string]any:
				if msg := c.check(extra, member, at+"."+name); msg != "" {
					return msg
				}
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, item := range v {
				if msg := c.check(items, item, fmt.Sprintf("%s[%d]", at, i)); msg != "" {
					return msg
				}
			}
		}
	}
	return ""
}

func schemaTypes(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, len(t))
		for i, x := range t {
			out[i] = x.(string)
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// servedDocument is the OpenAPI document s serves.
func servedDocument(t *testing.T, s *Server) schemaChecker {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(do(t, s, http.MethodGet, "/api/v1/openapi.json", nil).body), &doc); err != nil {
		t.Fatal(err)
	}
	return schemaChecker{doc}
}

// The served document's ErrorCode lists exactly the codes of the table.
func TestOpenAPIErrorCodesAreTheTable(t *testing.T) {
	c := servedDocument(t, fullServer(t))
	schema := c.resolve(map[string]any{"$ref": "#/components/schemas/ErrorCode"})
	var served []string
	for _, code := range schema["enum"].([]any) {
		served = append(served, code.(string))
	}
	if !slices.Equal(served, errorCodes()) || len(served) < 30 {
		t.Errorf("ErrorCode enum %v, the table %v", served, errorCodes())
	}
}

// Real answers of the typed routes, success and error, match the
// document's schema for their status.
func TestOpenAPISchemasMatchRealAnswers(t *testing.T) {
	s := fullServerWith(t, Config{AdminToken: "t", AllowPrivateEndpoints: true})
	c := servedDocument(t, s)
	ctx := t.Context()
	if _, err := s.deps.Store.PutSubscription(ctx, testUserID, json.RawMessage(`{"endpoint":"https://fcm.googleapis.com/fcm/send/x","keys":{"p256dh":"BNc","auth":"tBH"}}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.deps.Store.RecordDeliveries(ctx, push.Bookkeeping{Attempts: []push.Attempt{{At: time.Now(), MessageID: "m1", UserID: testUserID,
		DeviceID: 1, PushHost: "fcm.googleapis.com", Try: 1, Status: 400, Outcome: push.OutcomeUnknownSubscription, Error: "400"}}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.deps.Store.InsertTask(ctx, store.NewTask{UserID: testUserID, UUID: "00000000-0000-4000-8000-000000000001",
		MessageType: push.TypeFixed, NextSendAt: time.Now().Add(time.Hour), Payload: json.RawMessage(`{"contactName":"Rei","userMessage":"walk"}`)}); err != nil {
		t.Fatal(err)
	}
	user := map[string]string{"X-User-Id": testUserID}
	admin := map[string]string{"Authorization": "Bearer t"}
	subscription := `{"subscription":{"endpoint":"http://127.0.0.1:9/push/y","keys":{"p256dh":"BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM","auth":"tBHItJI5svbpez7KI4CCXg"}}}`
	seal := func(plaintext string) string {
		env, _ := json.Marshal(s.deps.Store.Keyring().UserKey(testUserID).Seal([]byte(plaintext)))
		return string(env)
	}
	encrypted := map[string]string{"X-User-Id": testUserID, "X-Payload-Encrypted": "true", "X-Encryption-Version": "1", "Content-Type": "application/json"}
	fixed := `{"contactName":"Rei","messageType":"fixed","userMessage":"walk","firstSendTime":"` + push.FormatTimestamp(time.Now().Add(time.Hour)) + `","recurrenceType":"none"}`
	state := `{"entries":[{"namespace":"app","key":"k","value":"v","updatedAt":1}]}`
	ack := `{"messageIds":["m-none"]}`
	for _, r := range []struct {
		method, path, template string
		header                 map[string]string
		status                 int
		body, plaintext        string
	}{
		{http.MethodPut, "/api/v1/push-subscription", "", encrypted, 200, seal(subscription), subscription},
		{http.MethodPost, "/api/v1/schedule-message", "", encrypted, 201, seal(fixed), fixed},
		{http.MethodPost, "/api/v1/outbox/ack", "", encrypted, 200, seal(ack), ack},
		{http.MethodPut, "/api/v1/client-state", "", encrypted, 200, seal(state), state},
		{http.MethodPut, "/api/v1/update-message?id=00000000-0000-4000-8000-000000000001", "/api/v1/update-message", encrypted, 200,
			seal(`{"userMessage":"run"}`), `{"userMessage":"run"}`},
		{http.MethodGet, "/api/v1/vapid-public-key", "", nil, 200, "", ""},
		{http.MethodGet, "/api/v1/capabilities", "", nil, 200, "", ""},
		{http.MethodGet, "/api/v1/get-user-key", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/push-subscription", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/devices", "", user, 200, "", ""},
		{http.MethodPost, "/api/v1/device-seen", "", user, 200, `{"endpoint":"http://127.0.0.1:9/push/y"}`, ""},
		{http.MethodDelete, "/api/v1/devices?deviceId=999", "", user, 200, "", ""},
		{http.MethodDelete, "/api/v1/client-state?namespace=app", "", user, 200, "", ""},
		{http.MethodDelete, "/api/v1/push-subscription?endpoint=https://fcm.googleapis.com/fcm/send/none", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/get-user-key", "", map[string]string{"X-User-Id": "not-a-uuid"}, 400, "", ""},
		{http.MethodGet, "/api/v1/messages", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/message?id=00000000-0000-4000-8000-000000000001", "/api/v1/message", user, 200, "", ""},
		{http.MethodPost, "/api/v1/init-tenant", "", nil, 200, "", ""},
		{http.MethodPost, "/api/v1/send-notifications", "", nil, 200, "", ""},
		{http.MethodGet, "/api/v1/messages", "", nil, 400, "", ""},
		{http.MethodGet, "/api/v1/outbox", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/client-state/namespaces", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/preferences", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/interrupts", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/client-state?namespace=app", "", user, 200, "", ""},
		{http.MethodGet, "/api/v1/admin/users", "", admin, 200, "", ""},
		{http.MethodGet, "/api/v1/admin/users/" + testUserID + "/devices", "/api/v1/admin/users/{userId}/devices", admin, 200, "", ""},
		{http.MethodGet, "/api/v1/admin/deliveries/failed", "", admin, 200, "", ""},
		{http.MethodGet, "/api/v1/admin/tasks", "", admin, 200, "", ""},
		{http.MethodGet, "/api/v1/admin/broadcasts", "", admin, 200, "", ""},
		{http.MethodPost, "/api/v1/admin/send", "", admin, 200, `{"userId":"` + testUserID + `","message":"hi"}`, ""},
		{http.MethodPost, "/api/v1/admin/broadcasts", "", admin, 202, `{"userIds":["` + testUserID + `"],"message":"hi"}`, ""},
		{http.MethodGet, "/api/v1/admin/deliveries/per-minute", "", admin, 200, "", ""},
		{http.MethodPost, "/api/v1/admin/webhooks", "", admin, 201, `{"url":"https://93.184.215.14/hooks","events":["message.sent","task.failed"],"batch":true}`, ""},
		{http.MethodGet, "/api/v1/admin/webhooks", "", admin, 200, "", ""},
		{http.MethodPost, "/api/v1/admin/webhooks", "", admin, 400, `{"url":"https://127.0.0.1/hooks","events":["message.sent"]}`, ""},
		{http.MethodDelete, "/api/v1/admin/webhooks/wh_none", "/api/v1/admin/webhooks/{webhookId}", admin, 404, "", ""},
		{http.MethodGet, "/api/v1/admin/users", "", map[string]string{"Authorization": "Bearer wrong"}, 401, "", ""},
		{http.MethodPost, "/api/v1/test-push", "", user, 200, "", ""},
		{http.MethodDelete, "/api/v1/cancel-message?id=00000000-0000-4000-8000-000000000001", "/api/v1/cancel-message", user, 200, "", ""},
		{http.MethodDelete, "/api/v1/admin/users/" + testUserID, "/api/v1/admin/users/{userId}", admin, 200, "", ""},
	} {
		name := r.method + " " + r.path
		resp := serve(s, newRequest(r.method, r.path, r.body, r.header))
		if resp.status != r.status {
			t.Errorf("%s = %d, want %d: %s", name, resp.status, r.status, resp.body)
			continue
		}
		template := r.template
		if template == "" {
			template = strings.SplitN(r.path, "?", 2)[0]
		}
		op, ok := c.doc["paths"].(map[string]any)[template].(map[string]any)[strings.ToLower(r.method)].(map[string]any)
		if !ok {
			t.Errorf("%s: not in the document", name)
			continue
		}
		if r.plaintext != "" {
			var plaintext any
			_ = json.Unmarshal([]byte(r.plaintext), &plaintext)
			schema := c.resolve(op["requestBody"].(map[string]any))["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			if msg := c.check(schema["x-amsg-plaintext"].(map[string]any), plaintext, "plaintext"); msg != "" {
				t.Errorf("%s: the request the server took: %s", name, msg)
			}
		}
		answer, ok := op["responses"].(map[string]any)[fmt.Sprint(r.status)].(map[string]any)
		if !ok {
			t.Errorf("%s: the document has no %d answer", name, r.status)
			continue
		}
		schema, ok := c.resolve(answer)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		if !ok {
			t.Errorf("%s: the %d answer has no JSON schema", name, r.status)
			continue
		}
		var body any
		if err := json.Unmarshal([]byte(resp.body), &body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if msg := c.check(schema, body, "body"); msg != "" {
			t.Errorf("%s %d: %s\n%s", name, r.status, msg, resp.body)
		}
		// An encrypted answer's plaintext against the operation's
		// x-amsg-plaintext.
		if plain, ok := schema["x-amsg-plaintext"].(map[string]any); ok {
			var env struct{ Data usercrypt.Envelope }
			_ = json.Unmarshal([]byte(resp.body), &env)
			opened, err := s.deps.Store.Keyring().UserKey(testUserID).Open(env.Data)
			var data any
			if err == nil {
				err = json.Unmarshal(opened, &data)
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if msg := c.check(plain, data, "plaintext"); msg != "" {
				t.Errorf("%s %d: %s\n%s", name, r.status, msg, opened)
			}
		}
	}
}
