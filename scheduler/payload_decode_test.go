package scheduler

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"amsg/push"
)

// FuzzDecodePayload checks the stored payload's one-pass reader against
// encoding/json: whatever it accepts, encoding/json accepts too and reads
// into the same Payload.
func FuzzDecodePayload(f *testing.F) {
	text, tz, tokens := "Reminder 1: time for a glass of water", "Asia/Shanghai", 200
	for _, p := range []Payload{
		{ContactName: "Rei", MessageType: push.TypeFixed, MessageSubtype: "chat", UserMessage: &text,
			FirstSendTime: "2026-11-24T05:35:08.335Z", RecurrenceType: push.RecurrenceNone},
		{ContactName: "零", MessageType: push.TypePrompted, TzID: &tz, RecurrenceType: push.RecurrenceDaily,
			Messages: json.RawMessage(`[{"role":"user","content":"hi \"there\""}]`), MaxTokens: &tokens,
			SplitPattern: json.RawMessage(`["。", "\\n"]`), Metadata: json.RawMessage(`{"a":[1,{"b":null}]}`),
			Priority: "critical", CredRefs: map[string]string{"chat": "c1"}},
	} {
		raw, err := p.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw))
	}
	for _, seed := range []string{
		`{}`, ` { "contactName" : "a" , "contactName" : null } `, `{"ContactName":"a"}`, `{"contactName":"a\u0062"}`,
		`{"metadata":1}`, `{"metadata":tru}`, `{"metadata":{"a":[}]}`, `{"messages":[1]]}`, `{"tzId":"x","tzId":null}`,
		`{"splitPattern":"a\"b"}`, `{"userMessage":"\xff"}`, `{"lastError":"x"}`, `{"maxTokens":null}`, `null`,
		`{"contactName":"a"} x`, `{"temperature":0.5}`, `{"avatarUrl":nullx}`, `{"messageType":1}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var fast Payload
		if !decodeStoredPayload([]byte(raw), &fast) {
			return
		}
		var want Payload
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("read %q, which encoding/json refuses: %v", raw, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("read %q as\n%+v\nencoding/json reads\n%+v", raw, fast, want)
		}
	})
}

// TestThePayloadReaderKnowsEveryKey: a key the one-pass reader does not
// know sends the payload to encoding/json, so a field added to Payload
// without a case in member would only be slow; this keeps it fast.
func TestThePayloadReaderKnowsEveryKey(t *testing.T) {
	typ := reflect.TypeFor[Payload]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" {
			continue
		}
		var p Payload
		if !decodeStoredPayload([]byte(`{"`+name+`":null}`), &p) {
			t.Errorf("the payload reader does not know %q", name)
		}
	}
}

// TestAStoredPayloadReadsInOnePass: what Payload.Encode writes for the
// tasks the API schedules takes the one-pass reader, not encoding/json.
func TestAStoredPayloadReadsInOnePass(t *testing.T) {
	text, url := "Reminder: drink water", "https://example.com/a.png"
	stored := Payload{ContactName: "Rei", AvatarURL: &url, MessageType: push.TypeFixed, MessageSubtype: "chat",
		UserMessage: &text, FirstSendTime: "2026-11-24T05:35:08.335Z", RecurrenceType: push.RecurrenceNone}
	raw, err := stored.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var p Payload
	if !decodeStoredPayload(raw, &p) {
		t.Fatalf("%s went to encoding/json", raw)
	}
	got, err := DecodePayload(raw)
	if err != nil {
		t.Fatal(err)
	}
	if *got.UserMessage != text || *got.AvatarURL != url || got.ContactName != "Rei" || string(got.Metadata) != "{}" ||
		got.Messages != nil || got.SplitPattern != nil {
		t.Fatalf("read %s as %+v", raw, got)
	}
}
