package push_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"amsg/push"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// goldenPushes are the values behind the golden files: Encode must write the
// file, and Decode must read the file back into the same value.
var goldenPushes = []struct {
	file string
	push push.Push
}{
	{"content.json", &push.ContentPush{
		Common: push.Common{
			MessageType:    push.TypePrompted,
			Source:         push.SourceScheduled,
			MessageID:      "msg_task_42@1795000000000_0",
			SessionID:      "sess_task_42@1795000000000",
			Timestamp:      "2026-11-22T08:00:00.000Z",
			MessageSubtype: push.Some("chat"),
			Metadata:       raw(`{"charId":"rei","nested":{"a":[1,2,3]}}`),
			Notification: &push.Notification{
				Show:     push.Some(push.ShowWhenHidden),
				Tag:      push.Some("morning"),
				Renotify: push.Some(true),
				Data:     raw(`{"url":"/chat/rei"}`),
			},
			TaskIdentity: push.TaskIdentity{
				TaskID:         push.Some(push.NumericTaskID(42)),
				TaskUUID:       push.Some("0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"),
				RecurrenceType: push.Some(push.RecurrenceDaily),
				OccurrenceMs:   push.Some(int64(1795000000000)),
			},
		},
		Message:       "Good morning <3 & coffee?",
		Title:         push.Some("来自 Rei"),
		ContactName:   push.Some("Rei"),
		AvatarURL:     push.Some("https://example.com/rei.png?size=96&fmt=png"),
		MessageIndex:  push.Some(1),
		TotalMessages: push.Some(2),
	}},
	{"reasoning.json", &push.ReasoningPush{
		Common: push.Common{
			MessageType:    push.TypeInstant,
			Source:         push.SourceInstant,
			MessageID:      "msg_2d4f6a8c-1e3b-4d5f-a7c9-e1f3a5c7e9b1_iter_0_reasoning",
			SessionID:      "sess_8c7d6e5f-4a3b-4c2d-9e1f-0a9b8c7d6e5f",
			Timestamp:      "2026-11-22T11:10:56.869Z",
			MessageSubtype: push.Some("chat"),
			Metadata:       raw(`{}`),
			Notification:   &push.Notification{Show: push.Some(push.ShowNever)},
		},
		ReasoningContent: "The user said \"hi\"\n\tso I greet back.",
		Title:            push.Some("来自 Rei"),
		ContactName:      push.Some("Rei"),
		AvatarURL:        push.Null[string](),
	}},
	{"tool_request.json", &push.ToolRequestPush{
		Common: push.Common{
			MessageType:    push.TypeInstant,
			Source:         push.SourceInstant,
			MessageID:      "msg_9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
			SessionID:      "sess_8c7d6e5f-4a3b-4c2d-9e1f-0a9b8c7d6e5f",
			Timestamp:      "2026-11-22T11:11:02.004Z",
			MessageSubtype: push.Some("agent"),
			Metadata:       raw(`{"iteration":1}`),
			Notification: &push.Notification{
				Show:               push.Some(push.ShowAlways),
				Title:              push.Some("Rei needs your location"),
				Body:               push.Some("Tap to share it once"),
				RequireInteraction: push.Some(true),
			},
		},
		ToolCalls:   raw(`[{"id":"call_0","type":"function","function":{"name":"get_location","arguments":"{}"}}]`),
		Title:       push.Some("来自 Rei"),
		ContactName: push.Some("Rei"),
		Message:     push.Some("get_location"),
	}},
	{"error.json", &push.ErrorPush{
		Common: push.Common{
			MessageType:    push.TypeInstant,
			Source:         push.SourceInstant,
			MessageID:      "msg_1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f_iter_3_error",
			SessionID:      "sess_8c7d6e5f-4a3b-4c2d-9e1f-0a9b8c7d6e5f",
			Timestamp:      "2026-11-22T11:11:09.500Z",
			MessageSubtype: push.Some("chat"),
			Metadata:       raw(`null`),
			TaskIdentity:   push.TaskIdentity{TaskID: push.Some(push.StringTaskID("task-7"))},
		},
		Code:      "HOOK_THREW",
		Message:   "onLLMOutput threw: TypeError: x is undefined",
		Iteration: push.Some(3),
	}},
	{"unknown_fields.json", &push.ContentPush{
		Common: push.Common{
			MessageType: push.TypeInstant,
			Source:      push.SourceInstant,
			MessageID:   "m-content-1",
			SessionID:   "sess_1",
			Timestamp:   "2026-11-22T11:10:56.869Z",
			Notification: &push.Notification{
				Title:   push.Some("Hi"),
				Unknown: []push.Member{{Key: "futureField", Value: raw(`{"kept":true}`)}, {Key: "vibrate", Value: raw(`[200,100,200]`)}},
			},
			Unknown: []push.Member{
				{Key: "statusUpdate", Value: raw(`"typing\u2028<b>"`)},
				{Key: "extra", Value: raw(`{"z":1,"a":[null,true,1.5e3]}`)},
				{Key: "chunkIndex", Value: raw(`2`)},
			},
		},
		Message: "",
	}},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenPushes {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			got, err := push.Encode(tc.push)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode:\n got %s\nwant %s", got, want)
			}
			decoded, err := push.Decode(want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(decoded, tc.push) {
				t.Fatalf("Decode:\n got %#v\nwant %#v", decoded, tc.push)
			}
		})
	}
}

// The verified upstream examples (reference §1.8) decode and re-encode to
// the same bytes: key order, null avatarUrl and taskId, empty metadata.
func TestUpstreamExamplesRoundTrip(t *testing.T) {
	for _, file := range []string{"upstream_content.json", "upstream_reasoning.json"} {
		t.Run(file, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			p, err := push.Decode(in)
			if err != nil {
				t.Fatal(err)
			}
			if unknown := p.CommonFields().Unknown; len(unknown) != 0 {
				t.Fatalf("upstream keys decoded as unknown: %v", unknown)
			}
			out, err := push.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, in) {
				t.Fatalf("re-encoded:\n got %s\nwant %s", out, in)
			}
		})
	}
}

func TestDecodeCanonicalisesOrderAndSpace(t *testing.T) {
	in := `
	{ "metadata" : { "b" : [ 1 , 2 ] , "a" : "x y" },
	  "zeta": 1,
	  "message": "hi",
	  "alpha": [ ],
	  "sessionId": "s", "messageKind": "content", "messageId": "m",
	  "source": "instant", "messageType": "instant", "timestamp": "t" }
	`
	p, err := push.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := push.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messageKind":"content","messageType":"instant","source":"instant","messageId":"m","sessionId":"s","timestamp":"t","message":"hi","metadata":{"b":[1,2],"a":"x y"},"zeta":1,"alpha":[]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeAbsentNullAndValueStayApart(t *testing.T) {
	base := `"messageKind":"content","messageType":"instant","source":"instant","messageId":"m","sessionId":"s","timestamp":"t","message":"x"`
	for _, tc := range []struct {
		name, members string
		avatar        push.Optional[string]
		taskID        push.Optional[push.TaskID]
		metadata      json.RawMessage
	}{
		{"absent", ``, push.Optional[string]{}, push.Optional[push.TaskID]{}, nil},
		{"null", `,"avatarUrl":null,"taskId":null,"metadata":null`, push.Null[string](), push.Null[push.TaskID](), raw(`null`)},
		{"value", `,"avatarUrl":"https://a.example/x.png","taskId":"t-1","metadata":{}`, push.Some("https://a.example/x.png"), push.Some(push.StringTaskID("t-1")), raw(`{}`)},
		{"numeric task", `,"taskId":7`, push.Optional[string]{}, push.Some(push.NumericTaskID(7)), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := "{" + base + tc.members + "}"
			p, err := push.Decode([]byte(in))
			if err != nil {
				t.Fatal(err)
			}
			c := p.(*push.ContentPush)
			if c.AvatarURL != tc.avatar || c.TaskID != tc.taskID || !bytes.Equal(c.Metadata, tc.metadata) {
				t.Fatalf("avatarUrl %#v taskId %#v metadata %q", c.AvatarURL, c.TaskID, c.Metadata)
			}
			out, err := push.Encode(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != in {
				t.Fatalf("re-encoded:\n got %s\nwant %s", out, in)
			}
		})
	}
}

// A repeated key keeps the first position and the last value, as JSON.parse.
func TestDecodeDuplicateKeys(t *testing.T) {
	in := `{"messageKind":"error","x":1,"code":"A","y":2,"x":3,"code":"B","messageKind":"error"}`
	p, err := push.Decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := push.Encode(p)
	if want := `{"messageKind":"error","code":"B","message":"","x":3,"y":2}`; string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}

func TestEncodeDoesNotEscapeHTMLOrLineSeparators(t *testing.T) {
	p := &push.ContentPush{Message: "a<b>&c\u2028d\u2029e \"q\" \\ \x01\x1f\t\n\r\b\f \x7f é 🙂 \xff"}
	out, err := push.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messageKind":"content","message":"a<b>&c` + "\u2028d\u2029e" + ` \"q\" \\ \u0001\u001f\t\n\r\b\f ` + "\x7f é 🙂 \uFFFD" + `"}`
	if string(out) != want {
		t.Fatalf("got  %q\nwant %q", out, want)
	}
	var back struct{ Message string }
	if err := json.Unmarshal(out, &back); err != nil || back.Message != strings.ToValidUTF8(p.Message, "\uFFFD") {
		t.Fatalf("encoding/json reads back %q, %v", back.Message, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		is    error
		kind  string // MessageKindError.Kind, when is is a kind sentinel
		field string // FieldError.Field, when one is expected
	}{
		{"empty", ``, push.ErrMalformed, "", ""},
		{"not an object", `["messageKind","content"]`, push.ErrMalformed, "", ""},
		{"string", `"content"`, push.ErrMalformed, "", ""},
		{"truncated", `{"messageKind":"content"`, push.ErrMalformed, "", ""},
		{"trailing data", `{"messageKind":"content"} {}`, push.ErrMalformed, "", ""},
		{"bad key", `{"messageKind":"content",1:2}`, push.ErrMalformed, "", ""},
		{"not UTF-8", "{\"messageKind\":\"content\",\"message\":\"\xff\"}", push.ErrMalformed, "", ""},
		{"missing kind", `{"message":"hi"}`, push.ErrMissingKind, "", ""},
		{"null kind", `{"messageKind":null}`, push.ErrMissingKind, "", ""},
		{"empty kind", `{"messageKind":""}`, push.ErrMissingKind, "", ""},
		{"unknown kind", `{"messageKind":"status_update"}`, push.ErrUnknownKind, "status_update", ""},
		{"numeric kind", `{"messageKind": 5}`, push.ErrUnknownKind, "5", ""},
		{"multipart", `{"messageKind":"_multipart","multipart":{"version":1},"chunk":"e30"}`, push.ErrMultipartChunk, "_multipart", ""},
		{"message not a string", `{"messageKind":"content","message":5}`, push.ErrMalformed, "", "message"},
		{"messageId not a string", `{"messageKind":"content","messageId":5}`, push.ErrMalformed, "", "messageId"},
		{"fractional index", `{"messageKind":"content","messageIndex":1.5}`, push.ErrMalformed, "", "messageIndex"},
		{"boolean taskId", `{"messageKind":"content","taskId":true}`, push.ErrMalformed, "", "taskId"},
		{"huge taskId", `{"messageKind":"content","taskId":99999999999999999999}`, push.ErrMalformed, "", "taskId"},
		{"notification not an object", `{"messageKind":"content","notification":"always"}`, push.ErrMalformed, "", "notification"},
		{"show true", `{"messageKind":"content","notification":{"show":true}}`, push.ErrMalformed, "", "notification.show"},
		{"show string false", `{"messageKind":"content","notification":{"show":"false"}}`, push.ErrMalformed, "", "notification.show"},
		{"show unknown", `{"messageKind":"content","notification":{"show":"sometimes"}}`, push.ErrMalformed, "", "notification.show"},
		{"silent not a boolean", `{"messageKind":"content","notification":{"silent":"yes"}}`, push.ErrMalformed, "", "notification.silent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := push.Decode([]byte(tc.in))
			if !errors.Is(err, tc.is) {
				t.Fatalf("Decode = %v, %v; want %v", p, err, tc.is)
			}
			if p != nil {
				t.Fatalf("Decode returned a push with an error: %#v", p)
			}
			var ke *push.MessageKindError
			if errors.As(err, &ke) && ke.Kind != tc.kind {
				t.Fatalf("MessageKindError.Kind = %q, want %q", ke.Kind, tc.kind)
			}
			var fe *push.FieldError
			if errors.As(err, &fe) != (tc.field != "") || (fe != nil && fe.Field != tc.field) {
				t.Fatalf("error %v: want a FieldError for %q", err, tc.field)
			}
		})
	}
}

func TestDecodeKindSentinelsAreDistinct(t *testing.T) {
	_, err := push.Decode([]byte(`{"messageKind":"_multipart"}`))
	if errors.Is(err, push.ErrUnknownKind) || errors.Is(err, push.ErrMissingKind) || errors.Is(err, push.ErrMalformed) {
		t.Fatalf("a multipart chunk matches another sentinel: %v", err)
	}
}

func TestDecodeSizeLimit(t *testing.T) {
	pad := func(n int) []byte {
		prefix := `{"messageKind":"content","message":"`
		return []byte(prefix + strings.Repeat("x", n-len(prefix)-2) + `"}`)
	}
	if p, err := push.Decode(pad(push.MaxDecodeBytes)); err != nil || len(p.(*push.ContentPush).Message) == 0 {
		t.Fatalf("a payload of exactly MaxDecodeBytes: %v", err)
	}
	if _, err := push.Decode(pad(push.MaxDecodeBytes + 1)); !errors.Is(err, push.ErrTooLarge) {
		t.Fatalf("one byte over MaxDecodeBytes: %v", err)
	}
}

func TestUnmarshalJSONOneKind(t *testing.T) {
	var r push.ReasoningPush
	r.Title = push.Some("stale")
	if err := json.Unmarshal([]byte(`{"messageKind":"reasoning","reasoningContent":"plan","messageIndex":1,"chunkIndex":2}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.ReasoningContent != "plan" || !r.Title.IsAbsent() {
		t.Fatalf("decoded %#v", r)
	}
	// A reasoning push has no index fields; upstream typedef fields stay as
	// unknown members.
	if want := []push.Member{{Key: "messageIndex", Value: raw(`1`)}, {Key: "chunkIndex", Value: raw(`2`)}}; !reflect.DeepEqual(r.Unknown, want) {
		t.Fatalf("unknown = %v, want %v", r.Unknown, want)
	}

	var c push.ContentPush
	err := json.Unmarshal([]byte(`{"messageKind":"reasoning","reasoningContent":"plan"}`), &c)
	var fe *push.FieldError
	if !errors.As(err, &fe) || fe.Field != "messageKind" {
		t.Fatalf("reasoning into ContentPush: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"messageKind":"_multipart"}`), &c); !errors.Is(err, push.ErrMultipartChunk) {
		t.Fatalf("multipart into ContentPush: %v", err)
	}
}

func TestEncodeRefusesWhatItCannotWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		push  push.Push
		field string
	}{
		{"unknown repeats a known key", &push.ContentPush{Common: push.Common{Unknown: []push.Member{{Key: "messageId", Value: raw(`"x"`)}}}}, "messageId"},
		{"unknown repeats messageKind", &push.ErrorPush{Common: push.Common{Unknown: []push.Member{{Key: "messageKind", Value: raw(`"x"`)}}}}, "messageKind"},
		{"unknown repeats itself", &push.ErrorPush{Common: push.Common{Unknown: []push.Member{{Key: "a", Value: raw(`1`)}, {Key: "a", Value: raw(`2`)}}}}, "a"},
		{"unknown not JSON", &push.ErrorPush{Common: push.Common{Unknown: []push.Member{{Key: "a", Value: raw(`{`)}}}}, "a"},
		{"unknown empty", &push.ErrorPush{Common: push.Common{Unknown: []push.Member{{Key: "a"}}}}, "a"},
		{"metadata not JSON", &push.ReasoningPush{Common: push.Common{Metadata: raw(`{"a":}`)}}, "metadata"},
		{"metadata not UTF-8", &push.ReasoningPush{Common: push.Common{Metadata: raw("\"\xff\"")}}, "metadata"},
		{"toolCalls not JSON", &push.ToolRequestPush{ToolCalls: raw(`[`)}, "toolCalls"},
		{"invalid show", &push.ContentPush{Common: push.Common{Notification: &push.Notification{Show: push.Some(push.Show("sometimes"))}}}, "notification.show"},
		{"notification unknown clash", &push.ContentPush{Common: push.Common{Notification: &push.Notification{Unknown: []push.Member{{Key: "tag", Value: raw(`"x"`)}}}}}, "notification.tag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := push.Encode(tc.push)
			var fe *push.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, push.ErrMalformed) {
				t.Fatalf("Encode = %s, %v; want a FieldError for %q", out, err, tc.field)
			}
		})
	}
}

func TestMarshalJSONMatchesEncodeStructure(t *testing.T) {
	p := goldenPushes[0].push.(*push.ContentPush)
	viaJSON, err := json.Marshal(*p) // a value, not a pointer
	if err != nil {
		t.Fatal(err)
	}
	encoded, _ := push.Encode(p)
	var a, b any
	if json.Unmarshal(viaJSON, &a) != nil || json.Unmarshal(encoded, &b) != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("json.Marshal %s\nEncode       %s", viaJSON, encoded)
	}
	if !bytes.Contains(viaJSON, []byte(`\u003c3`)) {
		t.Fatalf("json.Marshal is expected to HTML-escape (the reason Encode exists): %s", viaJSON)
	}
}

// FuzzDecode feeds arbitrary bytes to Decode. Whatever it accepts must
// encode, and the encoding must decode and encode again to the same bytes.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"messageKind":"error","x":1,"code":"A","x":{"y":[1,2]},"messageKind":"error"}`,
		`{"messageKind":"content","message":"<\u2028>","avatarUrl":null,"taskId":-0,"notification":{"show":false,"data":null,"z":[]}}`,
		`{"messageKind":"tool_request","toolCalls":{"not":"an array"},"message":null}`,
		`{"messageKind":"reasoning","notification":null,"metadata":"text","occurrenceMs":1e3}`,
		`{"messageKind":"_multipart","multipart":{},"chunk":""}`,
		`{"messageKind":"content","message":"\ud800 lone surrogate"}`,
		`{"messageKind":"content"}   `,
		`{}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := push.Decode(in)
		if err != nil {
			if p != nil {
				t.Fatalf("Decode returned a push with an error: %v", err)
			}
			if !errors.Is(err, push.ErrMalformed) && !errors.Is(err, push.ErrTooLarge) &&
				!errors.Is(err, push.ErrMissingKind) && !errors.Is(err, push.ErrUnknownKind) && !errors.Is(err, push.ErrMultipartChunk) {
				t.Fatalf("error matches no sentinel: %v", err)
			}
			return
		}
		first, err := push.Encode(p)
		if err != nil {
			t.Fatalf("Encode of a decoded push: %v", err)
		}
		again, err := push.Decode(first)
		if err != nil {
			t.Fatalf("Decode of %s: %v", first, err)
		}
		if again.Kind() != p.Kind() {
			t.Fatalf("kind changed: %s → %s", p.Kind(), again.Kind())
		}
		second, err := push.Encode(again)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("not stable:\n first %s\nsecond %s", first, second)
		}
	})
}

func BenchmarkEncodeContent(b *testing.B) {
	p := goldenPushes[0].push
	b.ReportAllocs()
	for b.Loop() {
		if _, err := push.Encode(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeContent(b *testing.B) {
	in, err := os.ReadFile(filepath.Join("testdata", "content.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := push.Decode(in); err != nil {
			b.Fatal(err)
		}
	}
}
