package api

import (
	"maps"
	"net/http"
	"testing"
)

// fault is one broken field of a request and the failure it alone causes.
type fault struct {
	set     map[string]any
	code    string
	details string
}

// checkOrder sends, for each fault, a request with that fault and every
// later one, and expects the fault's own failure: each check runs before
// the checks after it, the standard's order.
func checkOrder(t *testing.T, faults []fault, base func() map[string]any, send func(map[string]any) response) {
	t.Helper()
	for k := range faults {
		body := base()
		for i := len(faults) - 1; i >= k; i-- { // earlier faults overwrite shared keys
			maps.Copy(body, faults[i].set)
		}
		got := send(body)
		code, details := errorOf(t, got.body)
		if code != faults[k].code || details != faults[k].details {
			t.Errorf("fault %d (%v) with the %d after it: %s %s, want %s %s", k, faults[k].set, len(faults)-k-1,
				code, details, faults[k].code, faults[k].details)
		}
	}
}

func TestScheduleChecksRunInOrder(t *testing.T) {
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	invalid := func(field string) string { return `{"invalidFields":["` + field + `"]}` }
	faults := []fault{
		{map[string]any{"contactName": ""}, "INVALID_PARAMETERS", `{"missingFields":["contactName"]}`},
		{map[string]any{"messageType": "bogus"}, "INVALID_MESSAGE_TYPE", `{"providedType":"bogus","allowedTypes":["fixed","prompted","auto","instant"]}`},
		{map[string]any{"immediate": "yes"}, "INVALID_PARAMETERS", invalid("immediate")},
		{map[string]any{"firstSendTime": "soon"}, "INVALID_TIMESTAMP", `{"field":"firstSendTime"}`},
		{map[string]any{"supersedesUuid": "x"}, "INVALID_PARAMETERS", invalid("supersedesUuid")},
		{map[string]any{"pushSubscription": map[string]any{}}, "INVALID_PUSH_SUBSCRIPTION", invalid("pushSubscription")},
		{map[string]any{"recurrenceType": "hourly"}, "INVALID_PARAMETERS", invalid("recurrenceType")},
		{map[string]any{"tzId": "Mars/Base"}, "INVALID_PARAMETERS", invalid("tzId")},
		{map[string]any{"cronExpr": "bad"}, "INVALID_PARAMETERS", invalid("cronExpr")},
		{map[string]any{"maxTokens": -1}, "INVALID_PARAMETERS", invalid("maxTokens")},
		{map[string]any{"userMessage": 5}, "INVALID_PARAMETERS", invalid("userMessage (must be a string)")},
		{map[string]any{"completePrompt": 5}, "INVALID_PARAMETERS", invalid("completePrompt")},
		{map[string]any{"apiKey": 5}, "INVALID_PARAMETERS", invalid("apiKey")},
		{map[string]any{"temperature": "x"}, "INVALID_PARAMETERS", invalid("temperature (must be a finite number)")},
		{map[string]any{"uuid": "nope"}, "INVALID_PARAMETERS", invalid("uuid (invalid UUID format)")},
		{map[string]any{"messageSubtype": 5}, "INVALID_PARAMETERS", invalid("messageSubtype")},
		{map[string]any{"splitPattern": []any{1}}, "INVALID_PARAMETERS", invalid("splitPattern")},
		{map[string]any{"llmExtraBody": []any{}}, "INVALID_PARAMETERS", invalid("llmExtraBody")},
		{map[string]any{"metadata": []any{}}, "INVALID_PARAMETERS", invalid("metadata")},
	}
	checkOrder(t, faults, func() map[string]any { return fixedTask(nil) }, func(body map[string]any) response {
		return e.schedule(t, testUserID, body)
	})
}

// newTaskEnvWithTask is a task environment whose test user has a device
// and a pending fixed task, whose uuid it returns.
func newTaskEnvWithTask(t *testing.T) (*taskEnv, string) {
	t.Helper()
	e := newTaskEnv(t, Config{})
	e.subscribe(t, testUserID)
	const id = "0f8fad5b-d9cb-469f-a165-70867728950e"
	if got := e.schedule(t, testUserID, fixedTask(map[string]any{"uuid": id})); got.status != http.StatusCreated {
		t.Fatal(got.body)
	}
	return e, id
}

func TestUpdateChecksRunInOrder(t *testing.T) {
	e, id := newTaskEnvWithTask(t)
	invalid := func(fields string) string { return `{"invalidFields":[` + fields + `]}` }
	faults := []fault{
		{map[string]any{"nextSendAt": "soon"}, "INVALID_UPDATE_DATA", invalid(`"nextSendAt"`)},
		{map[string]any{"contactName": " "}, "INVALID_UPDATE_DATA", invalid(`"contactName"`)},
		{map[string]any{"recurrenceType": "hourly"}, "INVALID_UPDATE_DATA", invalid(`"recurrenceType"`)},
		{map[string]any{"tzId": 5}, "INVALID_UPDATE_DATA", invalid(`"tzId"`)},
		{map[string]any{"cronExpr": "bad"}, "INVALID_UPDATE_DATA", invalid(`"cronExpr"`)},
		{map[string]any{"maxTokens": 0}, "INVALID_UPDATE_DATA", invalid(`"maxTokens"`)},
		{map[string]any{"completePrompt": "a", "messages": []any{map[string]any{"role": "user", "content": "x"}}},
			"INVALID_UPDATE_DATA", invalid(`"completePrompt","messages"`)},
		{map[string]any{"messages": []any{map[string]any{"role": "bot", "content": "x"}}}, "INVALID_UPDATE_DATA", invalid(`"messages"`)},
		{map[string]any{"temperature": "x"}, "INVALID_UPDATE_DATA", invalid(`"temperature"`)},
		{map[string]any{"splitPattern": []any{1}}, "INVALID_UPDATE_DATA", invalid(`"splitPattern"`)},
		{map[string]any{"pushSubscription": map[string]any{}}, "PUSH_SUBSCRIPTION_NOT_ACCEPTED", invalid(`"pushSubscription"`)},
		{map[string]any{"userMessage": 5}, "INVALID_UPDATE_DATA", invalid(`"userMessage"`)},
		{map[string]any{"apiKey": 5}, "INVALID_UPDATE_DATA", invalid(`"apiKey"`)},
		{map[string]any{"metadata": []any{1}}, "INVALID_UPDATE_DATA", invalid(`"metadata"`)},
	}
	checkOrder(t, faults, func() map[string]any { return map[string]any{} }, func(body map[string]any) response {
		return e.update(t, testUserID, id, body)
	})
}
