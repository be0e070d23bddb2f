package builders_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"amsg/builders"
	"amsg/push"
)

// Localize turns the texts amsg wrote into a device's language and leaves a
// producer's alone.
func TestLocalize(t *testing.T) {
	b := builders.Builder{PageURL: "https://amsg.example"}
	common := func(id string) builders.Common {
		return builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: id, SessionID: "sess_l"}
	}
	ours, _, err := b.BuildContentPush(builders.ContentArgs{Common: common("m_ours"), Message: "Hi.", ContactName: "Rei",
		Title: builders.FromContactTitle("Rei")})
	if err != nil {
		t.Fatal(err)
	}
	theirs, _, err := b.BuildContentPush(builders.ContentArgs{Common: common("m_theirs"), Message: "Hi.", ContactName: "Rei", Title: "Rei says"})
	if err != nil {
		t.Fatal(err)
	}
	tool, err := b.BuildToolRequestPush(builders.ToolRequestArgs{Common: common("m_tool"), ContactName: "Rei",
		ToolCalls: json.RawMessage(`[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	fail, err := b.BuildErrorPush(builders.ErrorArgs{Common: common("m_err"), Code: "LLM_CALL_FAILED", Message: "boom"})
	if err != nil {
		t.Fatal(err)
	}
	type texts struct{ Title, NotificationTitle, NotificationBody string }
	textsOf := func(payload []byte) texts {
		var p struct {
			Title        string `json:"title"`
			Notification struct {
				Title string `json:"title"`
				Body  string `json:"body"`
			} `json:"notification"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			t.Fatal(err)
		}
		return texts{p.Title, p.Notification.Title, p.Notification.Body}
	}
	for _, tt := range []struct {
		name string
		p    push.Push
		tag  string
		want texts
	}{
		{"ours in Chinese", ours, "zh-CN", texts{"来自 Rei", "来自 Rei", "Hi."}},
		{"ours in English", ours, "en-US", texts{"From Rei", "From Rei", "Hi."}},
		{"a producer's title", theirs, "zh-CN", texts{"Rei says", "Rei says", "Hi."}},
		{"a tool request", tool, "zh", texts{"", "来自 Rei", "Rei 需要这台设备继续"}},
		{"an error", fail, "zh-Hant-TW", texts{"", "回复中断了", "boom"}},
	} {
		t.Run(tt.name, func(t *testing.T) { localizesTo(t, tt.p, tt.tag, "en", tt.want, textsOf) })
	}
	payload, _ := push.Encode(theirs)
	if got, _ := builders.Localize(payload, "zh-CN"); &got[0] != &payload[0] {
		t.Error("a push with nothing to translate was encoded again")
	}
	if _, err := builders.Localize([]byte(`{"messageKind":`), "zh"); err == nil {
		t.Error("a payload that does not decode: no error")
	}
}

// BenchmarkLocalize is what a Chinese device costs per push: one decode and
// encode of a content push.
func BenchmarkLocalize(b *testing.B) {
	p, _, err := builders.Builder{PageURL: "https://amsg.example"}.BuildContentPush(builders.ContentArgs{
		Common:  builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: "m", SessionID: "s"},
		Message: "Hello there, this is a reply of a typical length.", ContactName: "Rei", Title: builders.FromContactTitle("Rei")})
	if err != nil {
		b.Fatal(err)
	}
	payload, _ := push.Encode(p)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := builders.Localize(payload, "zh-CN"); err != nil {
			b.Fatal(err)
		}
	}
}

// An approval and its outcomes, built in one language, reach a device in
// another in that device's: the body (with the contact and the tool), the
// buttons, the outcome's message; a producer's texts and a cut body stay.
func TestLocalizeApprovals(t *testing.T) {
	b := builders.Builder{PageURL: "https://amsg.example"}
	common := builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: "m_ap", SessionID: "sess_l"}
	call := json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"send_email","arguments":"{}"}}]`)
	approval := func(contact, title, body, approve, deny string) push.Push {
		p, err := b.BuildApprovalPush(builders.ToolRequestArgs{Common: common, ToolCalls: call, ContactName: contact},
			builders.Approval{InterruptID: "int_1", ToolCallID: "c1", ExpiresAt: time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC),
				DecisionToken: "tok", Title: title, Body: body, ApproveTitle: approve, DenyTitle: deny, Tag: "amsg-session-s"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	outcome := func(title, text string) push.Push {
		p, err := b.BuildOutcomePush(common, builders.Outcome{InterruptID: "int_1", ToolCallID: "c1", State: "approved",
			Title: title, Text: text, ContactName: "Rei", Tag: "amsg-session-s"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := strings.Repeat("x", builders.NotificationBodyMax)
	type texts struct{ Message, Title, Body, Actions string }
	textsOf := func(payload []byte) texts {
		var p struct {
			Message      string `json:"message"`
			Notification struct {
				Title   string `json:"title"`
				Body    string `json:"body"`
				Actions []struct {
					Action, Title string
				} `json:"actions"`
			} `json:"notification"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, a := range p.Notification.Actions {
			actions = append(actions, a.Action+"="+a.Title)
		}
		return texts{p.Message, p.Notification.Title, p.Notification.Body, strings.Join(actions, ",")}
	}
	for _, tt := range []struct {
		name string
		p    push.Push
		from string // the language p was built in
		tag  string
		want texts
	}{
		{"an approval in Chinese", approval("Rei", "From Rei", "Rei asks for your approval: send_email", "Approve", "Deny"), "en", "zh-CN",
			texts{"", "来自 Rei", "Rei 请你批准：send_email", "approve=批准,deny=拒绝"}},
		{"a Chinese approval in English", approval("Rei", "来自 Rei", "Rei 请你批准：send_email", "批准", "拒绝"), "zh", "en",
			texts{"", "From Rei", "Rei asks for your approval: send_email", "approve=Approve,deny=Deny"}},
		{"an approval without a contact", approval("", "New notification", "Your companion asks for your approval: send_email", "Approve", "Deny"), "en", "zh",
			texts{"", "新通知", "你的伙伴 请你批准：send_email", "approve=批准,deny=拒绝"}},
		{"a body the builder cut", approval("Rei"+long, "From Rei", "Rei"+long+" asks for your approval: send_email", "Approve", "Deny"), "en", "zh",
			texts{"", "From Rei", ("Rei" + long)[:builders.NotificationBodyMax-len("…")] + "…", "approve=批准,deny=拒绝"}},
		{"approved elsewhere", outcome("From Rei", "Approved on another device"), "en", "zh-CN",
			texts{"已在另一台设备上批准", "来自 Rei", "已在另一台设备上批准", ""}},
		{"declined elsewhere", outcome("From Rei", "Declined on another device"), "en", "zh-CN",
			texts{"已在另一台设备上拒绝", "来自 Rei", "已在另一台设备上拒绝", ""}},
		{"no longer waiting", outcome("来自 Rei", "已不再等待"), "zh", "en",
			texts{"No longer waiting", "From Rei", "No longer waiting", ""}},
	} {
		t.Run(tt.name, func(t *testing.T) { localizesTo(t, tt.p, tt.tag, tt.from, tt.want, textsOf) })
	}
	// A producer's content push saying what an outcome says, without the
	// interrupt member, is the producer's.
	theirs, _, err := b.BuildContentPush(builders.ContentArgs{Common: common, Message: "Approved on another device", Title: "Rei says"})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := push.Encode(theirs)
	if got, _ := builders.Localize(payload, "zh-CN"); &got[0] != &payload[0] {
		t.Errorf("a producer's push was changed: %s", got)
	}
}

// localizesTo checks that p localized to tag has the texts want, and that
// localized back into from, the language it was built in, it has its own.
func localizesTo[T comparable](t *testing.T, p push.Push, tag, from string, want T, textsOf func([]byte) T) {
	t.Helper()
	payload, err := push.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := builders.Localize(payload, tag)
	if err != nil {
		t.Fatal(err)
	}
	if textsOf(got) != want {
		t.Errorf("Localize(%s) = %+v, want %+v", tag, textsOf(got), want)
	}
	back, err := builders.Localize(got, from)
	if err != nil || textsOf(back) != textsOf(payload) {
		t.Errorf("back to %s: %+v, %v; want %+v", from, textsOf(back), err, textsOf(payload))
	}
}
