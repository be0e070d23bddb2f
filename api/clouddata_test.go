package api

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
)

// reiTask is the uuid of the task rei owns.
const reiTask = "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed"

// onEachBackend runs a cloud-data test on SQLite and on PostgreSQL (skipped
// without AMSG_TEST_DATABASE_URL), through the whole server.
func onEachBackend(t *testing.T, run func(t *testing.T, e *taskEnv)) {
	t.Run("sqlite", func(t *testing.T) { run(t, newTaskEnvOn(t, Config{}, "")) })
	t.Run("postgres", func(t *testing.T) { run(t, newTaskEnvOn(t, Config{}, storetest.DatabaseURL(t))) })
}

func (e *taskEnv) cloudGet(path string) response {
	return serve(e.s, newRequest(http.MethodGet, "/api/v1/cloud-data/"+path, "", map[string]string{"X-User-Id": testUserID}))
}

func (e *taskEnv) cloudPost(t *testing.T, path string, body any) response {
	t.Helper()
	return serve(e.s, encryptedRequest(t, http.MethodPost, "/api/v1/cloud-data/"+path, testUserID, body))
}

func (e *taskEnv) putState(t *testing.T, body any) response {
	t.Helper()
	return serve(e.s, encryptedRequest(t, http.MethodPut, "/api/v1/client-state", testUserID, body))
}

type cloudResource struct {
	ID    string       `json:"id"`
	Type  string       `json:"type"`
	Owner *store.Owner `json:"owner"`
	Kind  *string      `json:"kind"`
	Label string       `json:"label"`
}

type cloudPage struct {
	Resources  []cloudResource `json:"resources"`
	NextCursor *string         `json:"nextCursor"`
	Complete   bool            `json:"complete"`
	Gaps       []any           `json:"gaps"`
}

type cloudOperation struct {
	ID               string                 `json:"id"`
	PlanID           string                 `json:"planId"`
	Status           string                 `json:"status"`
	FencedGeneration *int64                 `json:"fencedGeneration"`
	Counts           []store.OperationCount `json:"counts"`
}

// wantCode fails unless got is an error envelope with this status and code.
func wantCode(t *testing.T, what string, got response, status int, code string) {
	t.Helper()
	if got.status != status || !strings.Contains(got.body, `"code":"`+code+`"`) {
		t.Fatalf("%s: %d %s, want %d %s", what, got.status, strings.TrimSpace(got.body), status, code)
	}
}

// resources pages through GET /cloud-data/resources with query, two at a
// time.
func (e *taskEnv) resources(t *testing.T, query string) []cloudResource {
	t.Helper()
	var all []cloudResource
	cursor := ""
	for {
		var page cloudPage
		decrypted(t, testUserID, e.cloudGet("resources?limit=2&cursor="+url.QueryEscape(cursor)+query), &page)
		all = append(all, page.Resources...)
		if !page.Complete || page.Gaps == nil {
			t.Fatalf("page complete %v, gaps %v", page.Complete, page.Gaps)
		}
		if page.NextCursor == nil {
			return all
		}
		cursor = *page.NextCursor
	}
}

// runCleanup plans and starts a cleanup and returns the operation.
func (e *taskEnv) runCleanup(t *testing.T, plan map[string]any, key string) cloudOperation {
	t.Helper()
	var p struct {
		ID      string   `json:"id"`
		Count   int      `json:"count"`
		Impacts []string `json:"impacts"`
	}
	decrypted(t, testUserID, e.cloudPost(t, "cleanup-plans", plan), &p)
	if len(p.Impacts) == 0 {
		t.Fatalf("plan %+v has no impacts", p)
	}
	var op cloudOperation
	decrypted(t, testUserID, e.cloudPost(t, "cleanup-operations", map[string]any{"planId": p.ID, "idempotencyKey": key}), &op)
	return op
}

func labels(rs []cloudResource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Type+":"+r.Label)
	}
	slices.Sort(out)
	return out
}

// The walk an app makes through its user's data: list it, purge one value,
// retire a character (whose late writes are then refused), restore it.
func TestCloudDataThroughTheEnvelope(t *testing.T) {
	onEachBackend(t, func(t *testing.T, e *taskEnv) {
		e.subscribe(t, testUserID)
		rei := map[string]any{"type": "character", "id": "rei", "label": "Rei"}
		if got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": reiTask, "owner": rei, "kind": "reminder"})); got.status != http.StatusCreated {
			t.Fatalf("schedule: %d %s", got.status, got.body)
		}
		if got := e.putState(t, map[string]any{"entries": []any{
			map[string]any{"namespace": "character:rei", "key": "memory", "value": "m", "updatedAt": 1, "owner": rei},
			map[string]any{"namespace": "global", "key": "theme", "value": "dark", "updatedAt": 1},
		}}); got.status != http.StatusOK || strings.Contains(got.body, "rejected") {
			t.Fatalf("put state: %d %s", got.status, got.body)
		}

		credential := map[string]any{"credentials": []any{map[string]any{"credId": "char:rei/chat", "owner": rei,
			"value": map[string]any{"apiUrl": "https://llm.example/v1", "apiKey": "k", "primaryModel": "m"}}}}
		if got := serve(e.s, encryptedRequest(t, http.MethodPut, "/api/v1/llm-credentials", testUserID, credential)); got.status != http.StatusOK {
			t.Fatalf("put credential: %d %s", got.status, got.body)
		}

		var summary store.CloudSummary
		decrypted(t, testUserID, e.cloudGet("summary"), &summary)
		if summary.Total != 5 || !summary.Complete || summary.Counts[0] != (store.TypeCount{Type: "task", Count: 1, ByteSize: summary.Counts[0].ByteSize}) {
			t.Fatalf("summary %+v, want a task, two values, a credential and a device", summary)
		}
		all := e.resources(t, "")
		if got, want := labels(all), []string{"credential:char:rei/chat", "state:character:rei/memory", "state:global/theme", "subscription:Web Push subscription", "task:" + reiTask}; !slices.Equal(got, want) {
			t.Fatalf("resources %v, want %v", got, want)
		}
		owned := e.resources(t, "&ownerType=character&ownerId=rei")
		if got := labels(owned); !slices.Equal(got, []string{"credential:char:rei/chat", "state:character:rei/memory", "task:" + reiTask}) {
			t.Fatalf("rei's resources %v", got)
		}
		for _, r := range owned {
			if r.Owner == nil || *r.Owner != (store.Owner{Type: "character", ID: "rei", Label: "Rei"}) {
				t.Errorf("%s: owner %+v", r.Label, r.Owner)
			}
			if wantKind := r.Type == "task"; wantKind != (r.Kind != nil && *r.Kind == "reminder") || !wantKind && r.Kind != nil {
				t.Errorf("%s: kind %v, want the task's reminder and null for the value", r.Label, r.Kind)
			}
		}

		// Purge the global value.
		var theme string
		for _, r := range all {
			if r.Label == "global/theme" {
				theme = r.ID
			}
		}
		op := e.runCleanup(t, map[string]any{"mode": "purge", "resourceIds": []string{theme}}, "purge-theme")
		if op.Status != "completed" || op.Counts[1] != (store.OperationCount{Type: "state", Deleted: 1}) {
			t.Fatalf("purge: %+v", op)
		}
		if got := getState(t, e.s, testUserID, "global"); got != `{"namespace":"global","entries":[]}` {
			t.Fatalf("global after the purge: %s", got)
		}
		var again cloudOperation
		decrypted(t, testUserID, e.cloudPost(t, "cleanup-operations", map[string]any{"planId": op.PlanID, "idempotencyKey": "purge-theme"}), &again)
		if again.ID != op.ID {
			t.Fatalf("the idempotency key again started %s, want %s", again.ID, op.ID)
		}

		// Retire rei, a second later.
		e.clk.Add(time.Second)
		op = e.runCleanup(t, map[string]any{"mode": "retire-owner", "owner": rei}, "retire-rei")
		if op.Status != "completed" || op.FencedGeneration == nil || *op.FencedGeneration != 1 {
			t.Fatalf("retire: %+v", op)
		}
		if got := labels(e.resources(t, "")); !slices.Equal(got, []string{"subscription:Web Push subscription"}) {
			t.Fatalf("after retiring rei: %v", got)
		}
		late := map[string]any{"entries": []any{
			map[string]any{"namespace": "global", "key": "late", "value": "v", "updatedAt": 2},
			map[string]any{"namespace": "character:rei", "key": "memory", "value": "late", "updatedAt": 2, "owner": rei},
		}}
		wantCode(t, "a late state write", e.putState(t, late), http.StatusConflict, "CLOUD_OWNER_RETIRED")
		wantCode(t, "a late credential", serve(e.s, encryptedRequest(t, http.MethodPut, "/api/v1/llm-credentials", testUserID, credential)), http.StatusConflict, "CLOUD_OWNER_RETIRED")
		wantCode(t, "a late task", e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": "7d444840-9dc0-41cb-9c2a-1b5a0a5b5b5c", "owner": rei})), http.StatusConflict, "CLOUD_OWNER_RETIRED")
		if got := getState(t, e.s, testUserID, "global"); got != `{"namespace":"global","entries":[]}` {
			t.Fatalf("a refused write stored: %s", got)
		}
		var owner ownerJSON
		decrypted(t, testUserID, e.cloudGet("owner?ownerType=character&ownerId=rei"), &owner)
		if !owner.Retired || owner.Generation != 1 || owner.UpdatedAt == nil || owner.Owner.Label != "Rei" {
			t.Fatalf("owner after retirement: %+v", owner)
		}

		// Restore it: writers must now send the new generation.
		decrypted(t, testUserID, e.cloudPost(t, "owner", map[string]any{"action": "restore", "owner": rei}), &owner)
		if owner.Retired || owner.Generation != 2 {
			t.Fatalf("owner after restore: %+v", owner)
		}
		wantCode(t, "a write of the old generation", e.putState(t, late), http.StatusConflict, "CLOUD_OWNER_RETIRED")
		late["entries"].([]any)[1].(map[string]any)["ownerGeneration"] = 2
		if got := e.putState(t, late); got.status != http.StatusOK || !strings.Contains(got.body, `"upserted":2`) {
			t.Fatalf("a write of the restored generation: %d %s", got.status, got.body)
		}
		var owners struct {
			Owners   []ownerJSON `json:"owners"`
			Complete bool        `json:"complete"`
		}
		decrypted(t, testUserID, e.cloudGet("owners"), &owners)
		if len(owners.Owners) != 1 || owners.Owners[0].Generation != 2 || !owners.Complete {
			t.Fatalf("owners %+v", owners)
		}
		var ops struct {
			Operations []cloudOperation `json:"operations"`
		}
		decrypted(t, testUserID, e.cloudGet("cleanup-operations"), &ops)
		if len(ops.Operations) != 2 || ops.Operations[0].ID != op.ID {
			t.Fatalf("operations %+v, want the retirement first", ops.Operations)
		}
		var one cloudOperation
		decrypted(t, testUserID, e.cloudGet("cleanup-operations/"+op.ID), &one)
		if one.ID != op.ID || one.Status != "completed" {
			t.Fatalf("operation %+v", one)
		}
		wantCode(t, "an unknown operation", e.cloudGet("cleanup-operations/nope"), http.StatusNotFound, "CLOUD_RECORD_NOT_FOUND")
	})
}

// Every refused request gets its code and deletes nothing.
func TestCloudDataRefusesBadInput(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	rei := map[string]any{"type": "character", "id": "rei"}
	if got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": reiTask, "owner": rei})); got.status != http.StatusCreated {
		t.Fatalf("schedule: %d %s", got.status, got.body)
	}
	memory := func(owner map[string]any) any {
		return map[string]any{"entries": []any{map[string]any{"namespace": "character:rei", "key": "memory", "value": "m", "updatedAt": 1, "owner": owner}}}
	}
	if got := e.putState(t, memory(rei)); got.status != http.StatusOK {
		t.Fatalf("put rei's state: %d %s", got.status, got.body)
	}
	before := labels(e.resources(t, ""))
	for _, c := range []struct {
		name   string
		got    response
		status int
		code   string
	}{
		{"an owner type without id", e.cloudGet("summary?ownerType=character"), 400, "INVALID_CLOUD_FILTER"},
		{"an unknown type", e.cloudGet("resources?type=nope"), 400, "INVALID_CLOUD_FILTER"},
		{"limit 0", e.cloudGet("resources?limit=0"), 400, "INVALID_CLOUD_LIMIT"},
		{"limit 201", e.cloudGet("resources?limit=201"), 400, "INVALID_CLOUD_LIMIT"},
		{"limit 1.5", e.cloudGet("resources?limit=1.5"), 400, "INVALID_CLOUD_LIMIT"},
		{"a forged cursor", e.cloudGet("resources?cursor=x"), 400, "INVALID_CLOUD_CURSOR"},
		{"an unknown snapshot", e.cloudGet("resources?cursor=00000000-0000-4000-8000-000000000000:0"), 400, "INVALID_CLOUD_CURSOR"},
		{"an owner without id", e.cloudGet("owner?ownerType=character"), 400, "INVALID_CLOUD_OWNER"},
		{"no user id", serve(e.s, newRequest(http.MethodGet, "/api/v1/cloud-data/owners", "", nil)), 400, "USER_ID_REQUIRED"},
		{"a plaintext plan", send(e.s, http.MethodPost, "/api/v1/cloud-data/cleanup-plans", `{"mode":"purge"}`, map[string]string{"X-User-Id": testUserID}), 400, "ENCRYPTION_REQUIRED"},
		{"no mode", e.cloudPost(t, "cleanup-plans", map[string]any{}), 400, "INVALID_CLEANUP_MODE"},
		{"purge of nothing", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge"}), 400, "INVALID_CLEANUP_SELECTION"},
		{"purge of a type", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge", "types": []string{"task"}}), 400, "INVALID_CLEANUP_SELECTION"},
		{"empty resource ids", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge", "resourceIds": []string{}}), 400, "INVALID_CLEANUP_SELECTION"},
		{"a number id", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge", "resourceIds": []any{1}}), 400, "INVALID_CLEANUP_SELECTION"},
		{"1001 ids", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge", "resourceIds": make([]string, 1001)}), 400, "INVALID_CLEANUP_SELECTION"},
		{"an unknown type to purge", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge", "owner": rei, "types": []string{"nope"}}), 400, "INVALID_CLEANUP_SELECTION"},
		{"an unknown resource", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge", "resourceIds": []string{"nope"}}), 409, "CLOUD_RESOURCE_NOT_FOUND"},
		{"a blank owner", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "purge", "owner": map[string]any{"type": " ", "id": "x"}}), 400, "INVALID_CLOUD_OWNER"},
		{"retire of nobody", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "retire-owner"}), 400, "INVALID_CLOUD_OWNER"},
		{"retire narrowed", e.cloudPost(t, "cleanup-plans", map[string]any{"mode": "retire-owner", "owner": rei, "types": []string{"task"}}), 400, "INVALID_CLEANUP_SELECTION"},
		{"no idempotency key", e.cloudPost(t, "cleanup-operations", map[string]any{"planId": "x"}), 400, "INVALID_CLEANUP_OPERATION"},
		{"a blank idempotency key", e.cloudPost(t, "cleanup-operations", map[string]any{"planId": "x", "idempotencyKey": " "}), 400, "INVALID_CLEANUP_OPERATION"},
		{"a long idempotency key", e.cloudPost(t, "cleanup-operations", map[string]any{"planId": "x", "idempotencyKey": strings.Repeat("k", 201)}), 400, "INVALID_CLEANUP_OPERATION"},
		{"an unknown plan", e.cloudPost(t, "cleanup-operations", map[string]any{"planId": "nope", "idempotencyKey": "k"}), 404, "CLOUD_RECORD_NOT_FOUND"},
		{"restore of nobody", e.cloudPost(t, "owner", map[string]any{"action": "restore"}), 400, "INVALID_CLOUD_OWNER"},
		{"another action", e.cloudPost(t, "owner", map[string]any{"action": "retire", "owner": rei}), 400, "INVALID_CLOUD_OWNER_ACTION"},
		{"a task's owner a string", e.schedule(t, testUserID, fixedTask(map[string]any{"owner": "rei"})), 400, "INVALID_CLOUD_OWNER"},
		{"a negative generation", e.schedule(t, testUserID, fixedTask(map[string]any{"owner": rei, "ownerGeneration": -1})), 400, "INVALID_CLOUD_OWNER_GENERATION"},
		{"a number kind", e.schedule(t, testUserID, fixedTask(map[string]any{"kind": 5})), 400, "INVALID_CLOUD_KIND"},
		{"a credential's owner a number", serve(e.s, encryptedRequest(t, http.MethodPut, "/api/v1/llm-credentials", testUserID, map[string]any{"credentials": []any{
			map[string]any{"credId": "c", "owner": 1, "value": map[string]any{"apiUrl": "https://llm.example/v1", "apiKey": "k", "primaryModel": "m"}}}})), 400, "INVALID_CLOUD_OWNER"},
		{"a value given another owner", e.putState(t, memory(map[string]any{"type": "character", "id": "asuka"})), 409, "CLOUD_OWNER_IMMUTABLE"},
	} {
		wantCode(t, c.name, c.got, c.status, c.code)
	}
	got := e.putState(t, map[string]any{"entries": []any{map[string]any{"namespace": "n", "key": "k", "value": "v", "updatedAt": 1, "owner": map[string]any{"id": "x"}}}})
	if got.status != http.StatusOK || !strings.Contains(got.body, `"rejected":[{"index":0,"code":"INVALID_CLOUD_OWNER"`) {
		t.Fatalf("a state entry with a bad owner: %d %s, want it rejected alone", got.status, got.body)
	}
	if after := labels(e.resources(t, "")); !slices.Equal(after, before) {
		t.Fatalf("refused requests changed the data: %v, was %v", after, before)
	}
}

// FuzzCloudDataRequests feeds arbitrary decrypted JSON to the cloud-data
// POST routes: a success or a refusal, never a 500.
func FuzzCloudDataRequests(f *testing.F) {
	for _, seed := range []string{
		`{"mode":"purge","resourceIds":["x"]}`, `{"mode":"retire-owner","owner":{"type":"c","id":"r","label":null}}`,
		`{"mode":"purge","owner":{"type":"c","id":"r"},"types":["task","state"]}`, `{"mode":"purge","resourceIds":null,"types":{}}`,
		`{"planId":"p","idempotencyKey":"k"}`, `{"planId":1,"idempotencyKey":["k"]}`,
		`{"action":"restore","owner":{"type":"c","id":"r"}}`, `{"owner":[],"action":null}`, `{}`,
	} {
		for route := range 3 {
			f.Add(uint8(route), seed)
		}
	}
	s := newTestServer(f, Config{}, Deps{})
	key := browserUserKey(testUserID)
	routes := []string{"cleanup-plans", "cleanup-operations", "owner"}
	f.Fuzz(func(t *testing.T, route uint8, plaintext string) {
		path := "/api/v1/cloud-data/" + routes[int(route)%len(routes)]
		got := serve(s, newRequest(http.MethodPost, path, browserEncryptRaw(t, key, plaintext), encryptedHeaders(testUserID)))
		if got.status >= 500 && !strings.Contains(got.body, "CLOUD_RETIREMENT_NOT_CONFIRMED") {
			t.Fatalf("%s %q: %d %s", path, plaintext, got.status, got.body)
		}
	})
}

// FuzzCloudDataQueries feeds arbitrary query strings to the cloud-data
// GET routes: a success or a refusal, never a 500.
func FuzzCloudDataQueries(f *testing.F) {
	for _, seed := range []string{"limit=2", "limit=1e2&type=task", "ownerType=a&ownerId=b", "cursor=00000000-0000-4000-8000-000000000000:1",
		"limit=-0", "limit=0x10", "type=%00", "ownerType=&ownerId=x"} {
		f.Add(uint8(1), seed)
		f.Add(uint8(3), seed)
	}
	s := newTestServer(f, Config{}, Deps{})
	routes := []string{"summary", "resources", "owners", "owner", "cleanup-operations"}
	f.Fuzz(func(t *testing.T, route uint8, query string) {
		req := newRequest(http.MethodGet, "/api/v1/cloud-data/"+routes[int(route)%len(routes)], "", map[string]string{"X-User-Id": testUserID})
		req.URL.RawQuery = query
		if got := serve(s, req); got.status >= 500 {
			t.Fatalf("%q: %d %s", query, got.status, got.body)
		}
	})
}

// FuzzDecodeOwnerClaim: whatever a write says of its owner, the claim
// decoded from it is one the store accepts, or a refusal.
func FuzzDecodeOwnerClaim(f *testing.F) {
	for _, seed := range []string{`{"owner":{"type":"c","id":"r","label":"L"},"kind":"k","ownerGeneration":2}`,
		`{"owner":null,"kind":null,"ownerGeneration":null}`, `{"ownerGeneration":1.5}`, `{"ownerGeneration":9007199254740993}`,
		`{"owner":{"type":"c","id":"` + strings.Repeat("r", 301) + `"}}`, `{"kind":""}`, `{}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		claim, err := decodeOwnerClaim(decodeObject([]byte(payload)))
		if err != nil || claim == nil {
			return
		}
		if claim.Owner != nil && store.CheckOwner(*claim.Owner) != nil || claim.Generation < 0 || claim.Generation > maxSafeInteger {
			t.Fatalf("%q decoded to %+v", payload, claim)
		}
	})
}
