package builders_test

import (
	"encoding/json"
	"testing"
	"time"

	"amsg/builders"
	"amsg/push"
)

// An approval is a declarative tool_request whose navigate opens the
// approval screen, with the two actions and the interrupt; its outcome is a
// quiet content push under the same tag.
func TestApprovalAndOutcomePushes(t *testing.T) {
	expires := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	p, err := fixed.BuildApprovalPush(builders.ToolRequestArgs{Common: instant(), ToolCalls: json.RawMessage(`[{"id":"c1"}]`)},
		builders.Approval{InterruptID: "int_1", ToolCallID: "c1", ExpiresAt: expires, DecisionToken: "tok", Title: "From Rei",
			Body: "Rei asks for your approval: send_email", ApproveTitle: "Approve", DenyTitle: "Deny", Tag: "amsg-session-s"})
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, p)
	if m.Title != "From Rei" || m.Tag != "amsg-session-s" || m.Silent || m.Navigate.String() != pageURL+"/#/interrupt/int_1" {
		t.Errorf("approval %+v navigate %s", m, m.Navigate)
	}
	raw, _ := push.Encode(p)
	var got struct {
		Notification struct {
			Show               string            `json:"show"`
			RequireInteraction bool              `json:"requireInteraction"`
			Actions            []json.RawMessage `json:"actions"`
		} `json:"notification"`
		Interrupt map[string]string `json:"interrupt"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Notification.Show != "always" || !got.Notification.RequireInteraction || len(got.Notification.Actions) != 2 ||
		got.Interrupt["expiresAt"] != "2026-06-01T10:00:00.000Z" || got.Interrupt["decisionToken"] != "tok" || got.Interrupt["kind"] != "approval" {
		t.Errorf("approval push %s", raw)
	}

	o, err := fixed.BuildOutcomePush(instant(), builders.Outcome{InterruptID: "int_1", ToolCallID: "c1", State: "approved",
		Title: "From Rei", Text: "Approved on another device", Tag: "amsg-session-s"})
	if err != nil {
		t.Fatal(err)
	}
	om := parse(t, o)
	if om.Body != "Approved on another device" || om.Tag != "amsg-session-s" || !om.Silent {
		t.Errorf("outcome %+v", om)
	}
}
