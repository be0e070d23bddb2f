package builders_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"amsg/builders"
	"amsg/push"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// fixed is a Builder whose clock and ids tests control, for a page at
// pageURL.
var fixed = builders.Builder{
	Now:          func() time.Time { return time.Date(2026, 11, 22, 12, 10, 56, 869_000_000, time.FixedZone("CET", 3600)) },
	NewMessageID: func() string { return "msg_00000000-0000-4000-8000-000000000001" },
	PageURL:      pageURL,
}

const pageURL = "https://amsg.example"

func instant() builders.Common {
	return builders.Common{
		MessageType: push.TypeInstant,
		Source:      push.SourceInstant,
		SessionID:   "sess_8c7d6e5f-4a3b-4c2d-9e1f-0a9b8c7d6e5f",
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// checkGolden compares an encoded push with testdata/<name>, rewriting the
// file under -update.
func checkGolden(t *testing.T, name string, p push.Push) {
	t.Helper()
	got, err := push.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name)
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
		t.Fatalf("%s:\n got %s\nwant %s", name, got, want)
	}
}

func TestGoldenContent(t *testing.T) {
	c := builders.Common{
		MessageType:  push.TypeFixed,
		Source:       push.SourceScheduled,
		MessageID:    "msg_task_42@1795000000000_0",
		SessionID:    "sess_task_42@1795000000000",
		Timestamp:    time.UnixMilli(1795000000000),
		Metadata:     raw(`{"charId":"rei"}`),
		Notification: &push.Notification{Show: push.Some(push.ShowWhenHidden), Tag: push.Some("morning")},
		TaskIdentity: push.TaskIdentity{
			TaskID:         push.Some(push.NumericTaskID(42)),
			TaskUUID:       push.Some("0f8e4c1a-2b3d-4e5f-8a9b-0c1d2e3f4a5b"),
			RecurrenceType: push.Some(push.RecurrenceWeekly),
			OccurrenceMs:   push.Some(int64(1795000000000)),
		},
	}
	p, w, err := fixed.BuildContentPush(builders.ContentArgs{
		Common:        c,
		Message:       "Time for the <b>weekly</b> check-in & tea",
		Title:         "来自 Rei",
		ContactName:   "Rei",
		AvatarURL:     raw(`"https://example.com/rei.png"`),
		MessageIndex:  2,
		TotalMessages: 2,
	})
	if err != nil || w != nil {
		t.Fatal(err, w)
	}
	checkGolden(t, "content.json", p)
}

func TestGoldenReasoning(t *testing.T) {
	c := instant()
	c.MessageSubtype = "diary"
	p, w, err := fixed.BuildReasoningPush(builders.ReasoningArgs{
		Common:           c,
		ReasoningContent: "They asked about tea; keep it short.",
		ContactName:      "Rei",
	})
	if err != nil || w != nil {
		t.Fatal(err, w)
	}
	checkGolden(t, "reasoning.json", p)
}

func TestGoldenToolRequest(t *testing.T) {
	c := instant()
	c.Metadata = raw(`{"messages":[{"role":"user","content":"where am I?"}]}`)
	c.Notification = &push.Notification{
		Show:    push.Some(push.ShowAlways),
		Body:    push.Some("Rei wants your location"),
		Data:    raw(`{"screen":"tools"}`),
		Unknown: []push.Member{{Key: "futureField", Value: raw(`"kept"`)}},
	}
	p, err := fixed.BuildToolRequestPush(builders.ToolRequestArgs{
		Common:    c,
		ToolCalls: raw(`[{"id":"call_0","type":"function","function":{"name":"get_location","arguments":"{}"}}]`),
		Title:     "来自 Rei",
		Message:   "get_location",
	})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "tool_request.json", p)
}

func TestGoldenError(t *testing.T) {
	c := instant()
	c.MessageID = "msg_1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f_loop_exceeded"
	p, err := fixed.BuildErrorPush(builders.ErrorArgs{
		Common:    c,
		Code:      "LOOP_EXCEEDED",
		Message:   "agent loop stopped after 8 iterations",
		Iteration: push.Some(8),
	})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "error.json", p)
}

// upstream reads a verified upstream example kept by package push.
func upstream(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "push", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The builders, given what amsg-instant's legacy path gives its builders,
// produce the verified upstream bytes (reference §1.8).
func TestUpstreamLegacyPushes(t *testing.T) {
	legacy := builders.Common{
		MessageType:    push.TypeInstant,
		Source:         push.SourceInstant,
		SessionID:      "sess_8c7d6e5f-4a3b-4c2d-9e1f-0a9b8c7d6e5f",
		MessageSubtype: "chat",
		Metadata:       raw(`{}`),
	}

	content := legacy
	content.MessageID = "msg_5b0e3f0c-9d1a-4c2e-8f47-1a2b3c4d5e6f_instant_0"
	content.TaskID = push.Null[push.TaskID]()
	cp, w, err := fixed.BuildContentPush(builders.ContentArgs{
		Common:        content,
		Message:       "Hello there. How are you?",
		Title:         "来自 Rei",
		ContactName:   "Rei",
		AvatarURL:     raw(`null`),
		MessageIndex:  1,
		TotalMessages: 3,
	})
	if err != nil || w != nil {
		t.Fatal(err, w)
	}
	// Less the declarative members (TestDeclarativeContent), the bytes are
	// upstream's.
	bare := *cp
	bare.Notification, bare.Unknown = nil, nil
	assertEncodes(t, &bare, upstream(t, "upstream_content.json"))

	reasoning := legacy
	reasoning.MessageID = "msg_2d4f6a8c-1e3b-4d5f-a7c9-e1f3a5c7e9b1_instant_reasoning"
	rp, w, err := fixed.BuildReasoningPush(builders.ReasoningArgs{
		Common:           reasoning,
		ReasoningContent: "plan",
		Title:            "来自 Rei",
		ContactName:      "Rei",
		AvatarURL:        raw(`null`),
	})
	if err != nil || w != nil {
		t.Fatal(err, w)
	}
	assertEncodes(t, rp, upstream(t, "upstream_reasoning.json"))
}

func assertEncodes(t *testing.T, p push.Push, want []byte) {
	t.Helper()
	got, err := push.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestDefaults(t *testing.T) {
	before := time.Now().UTC().Truncate(time.Millisecond)
	p, _, err := builders.Builder{}.BuildContentPush(builders.ContentArgs{Common: instant(), Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^msg_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(p.MessageID) {
		t.Errorf("generated messageId %q is not msg_<uuid v4>", p.MessageID)
	}
	at, err := time.Parse(push.TimestampLayout, p.Timestamp)
	if err != nil || at.Before(before) || at.After(time.Now()) {
		t.Errorf("timestamp %q (%v) is not now", p.Timestamp, err)
	}
	if s, _ := p.MessageSubtype.Get(); s != push.DefaultSubtype {
		t.Errorf("messageSubtype %q", s)
	}
	for _, absent := range []bool{p.Title.IsAbsent(), p.ContactName.IsAbsent(), p.AvatarURL.IsAbsent(),
		p.MessageIndex.IsAbsent(), p.TotalMessages.IsAbsent(), p.TaskID.IsAbsent(), p.Metadata == nil} {
		if !absent {
			t.Fatalf("an optional member was filled: %#v", p)
		}
	}

	// The injected clock is formatted in UTC with milliseconds; the id
	// source is used only when no messageId is given.
	p, _, err = fixed.BuildContentPush(builders.ContentArgs{Common: instant()})
	if err != nil || p.Timestamp != "2026-11-22T11:10:56.869Z" || p.MessageID != "msg_00000000-0000-4000-8000-000000000001" {
		t.Fatalf("fixed builder: %v %q %q", err, p.Timestamp, p.MessageID)
	}
	c := instant()
	c.MessageID = "mine"
	c.Timestamp = time.Date(2030, 1, 2, 3, 4, 5, 6_789_000, time.UTC)
	p, _, err = fixed.BuildContentPush(builders.ContentArgs{Common: c})
	if err != nil || p.Timestamp != "2030-01-02T03:04:05.006Z" || p.MessageID != "mine" {
		t.Fatalf("explicit values: %v %q %q", err, p.Timestamp, p.MessageID)
	}
}

// Metadata and the notification directive belong to the caller: the push
// carries the very bytes it was given, and the directive's members; the
// declarative members go on a copy, never on the caller's directive.
func TestPassThroughIsUntouched(t *testing.T) {
	metadata := raw("{ \"b\" : 1,\n \"a\" : [true] }")
	n := &push.Notification{Unknown: []push.Member{{Key: "futureField", Value: raw(`1`)}}}
	c := instant()
	c.Metadata = metadata
	c.Notification = n
	p, _, err := fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if &p.Metadata[0] != &metadata[0] || string(p.Metadata) != "{ \"b\" : 1,\n \"a\" : [true] }" {
		t.Fatalf("metadata was copied or rewritten: %q", p.Metadata)
	}
	if p.Notification == n || len(n.Unknown) != 1 || !n.Title.IsAbsent() || !n.Tag.IsAbsent() {
		t.Fatalf("the caller's directive was changed: %+v", n)
	}
	out, _ := push.Encode(p)
	if !bytes.Contains(out, []byte(`"metadata":{"b":1,"a":[true]},"notification":{"title":"New notification","body":"x","tag":"msg_00000000-0000-4000-8000-000000000001","futureField":1,"navigate":`)) {
		t.Fatalf("encoded %s", out)
	}
	// A kind that is never declarative carries the very directive.
	r, _, err := fixed.BuildReasoningPush(builders.ReasoningArgs{Common: c, ReasoningContent: "plan"})
	if err != nil || r.Notification != n {
		t.Fatal("reasoning: notification was copied", err)
	}
}

func BenchmarkBuildContentPush(b *testing.B) {
	c := instant()
	c.Metadata = raw(`{"charId":"rei"}`)
	a := builders.ContentArgs{Common: c, Message: "Hello there. How are you?", Title: "来自 Rei", ContactName: "Rei",
		AvatarURL: raw(`"https://cdn.example/rei.png"`), MessageIndex: 1, TotalMessages: 3}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := fixed.BuildContentPush(a); err != nil {
			b.Fatal(err)
		}
	}
}
