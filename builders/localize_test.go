package builders_test

import (
	"encoding/json"
	"testing"

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
		t.Run(tt.name, func(t *testing.T) {
			payload, err := push.Encode(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := builders.Localize(payload, tt.tag)
			if err != nil {
				t.Fatal(err)
			}
			if textsOf(got) != tt.want {
				t.Errorf("Localize(%s) = %+v, want %+v", tt.tag, textsOf(got), tt.want)
			}
			back, err := builders.Localize(got, "en")
			if err != nil || textsOf(back) != textsOf(payload) {
				t.Errorf("back to English: %+v, %v; want %+v", textsOf(back), err, textsOf(payload))
			}
		})
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
