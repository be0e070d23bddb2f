package builders_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"amsg/builders"
	"amsg/builders/declarativetest"
	"amsg/push"
)

func parse(t *testing.T, p push.Push) declarativetest.Message {
	t.Helper()
	out, err := push.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := declarativetest.Parse(out)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return m
}

// A content push is a declarative message showing what amsg-sw would show:
// the title chain, the text, the message id as tag, the conversation.
func TestDeclarativeContent(t *testing.T) {
	c := instant()
	c.MessageID = "msg_a@1"
	c.SessionID = "sess_task_7@1795000000000"
	p, _, err := fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "Tea?", ContactName: "Rei"})
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, p)
	if m.Title != "From Rei" || m.Body != "Tea?" || m.Tag != "msg_a@1" || !m.Mutable || m.Silent ||
		m.Navigate.String() != pageURL+"/#/chat/sess_task_7@1795000000000" {
		t.Fatalf("%+v navigate %s", m, m.Navigate)
	}
	// The title the push names wins; without any, amsg-sw's default.
	p, _, _ = fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "x", Title: "Morning", ContactName: "Rei"})
	if m := parse(t, p); m.Title != "Morning" {
		t.Fatalf("title %q", m.Title)
	}
	p, _, _ = fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "  "})
	if m := parse(t, p); m.Title != "New notification" || m.Body != "" {
		t.Fatalf("%+v", m)
	}
}

// notification.body is the text cut to NotificationBodyMax bytes on a rune
// boundary; message keeps it whole.
func TestDeclarativeBodyIsBounded(t *testing.T) {
	text := strings.Repeat("お茶", 300) // 1800 bytes
	p, _, err := fixed.BuildContentPush(builders.ContentArgs{Common: instant(), Message: text})
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, p)
	if len(m.Body) > builders.NotificationBodyMax || !utf8.ValidString(m.Body) || !strings.HasSuffix(m.Body, "…") ||
		!strings.HasPrefix(text, strings.TrimSuffix(m.Body, "…")) || p.Message != text {
		t.Fatalf("body %d bytes %q", len(m.Body), m.Body)
	}
	// The declarative members cost a bounded number of bytes.
	bare := *p
	bare.Notification, bare.Unknown = nil, nil
	with, _ := push.Encode(p)
	without, _ := push.Encode(&bare)
	overhead := len(with) - len(without)
	limit := builders.NotificationBodyMax + len(p.MessageID) + len(builders.ConversationURL(pageURL, p.SessionID)) + 140
	if overhead > limit {
		t.Fatalf("declarative members cost %d bytes, over %d", overhead, limit)
	}
	t.Logf("declarative overhead for a long text: %d bytes", overhead)
}

// notification.title and .body stay banner-sized whoever names them: a
// 5 000-character contactName, or a caller's own directive (issue 22).
func TestNotificationTitleAndBodyAreBounded(t *testing.T) {
	long := strings.Repeat("名", 5000)
	c := instant()
	p, _, err := fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "x", ContactName: long})
	if err != nil {
		t.Fatal(err)
	}
	if m := parse(t, p); len(m.Title) > builders.NotificationTitleMax || !utf8.ValidString(m.Title) || !strings.HasPrefix(m.Title, "From 名") {
		t.Fatalf("title %d bytes %q…", len(m.Title), m.Title[:min(len(m.Title), 40)])
	}
	c.Notification = &push.Notification{Title: push.Some(long), Body: push.Some(long)}
	for name, build := range map[string]func() (push.Push, error){
		"content": func() (push.Push, error) {
			p, _, err := fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "x"})
			return p, err
		},
		"error": func() (push.Push, error) {
			return fixed.BuildErrorPush(builders.ErrorArgs{Common: c, Code: "X", Message: "m"})
		},
	} {
		p, err := build()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m := parse(t, p)
		if len(m.Title) > builders.NotificationTitleMax || len(m.Body) > builders.NotificationBodyMax ||
			!strings.HasSuffix(m.Title, "…") || !strings.HasSuffix(m.Body, "…") {
			t.Errorf("%s: title %d bytes, body %d bytes", name, len(m.Title), len(m.Body))
		}
		if long := strings.Repeat("名", 5000); c.Notification.Title != push.Some(long) {
			t.Errorf("%s: the caller's directive was changed", name)
		}
	}
}

// tool_request and error pushes are quiet notifications every worker shows:
// show:'always', silent, under the session's tag; declarative too.
func TestQuietToolRequestAndError(t *testing.T) {
	tr, err := fixed.BuildToolRequestPush(builders.ToolRequestArgs{Common: instant(), ToolCalls: raw(`[{"id":"a"}]`), ContactName: "Rei"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := fixed.BuildErrorPush(builders.ErrorArgs{Common: instant(), Code: "LLM_CALL_FAILED", Message: "AI API error: HTTP 500"})
	if err != nil {
		t.Fatal(err)
	}
	tag := builders.SessionTag(instant().SessionID)
	for _, tc := range []struct {
		p           push.Push
		title, body string
	}{
		{tr, "From Rei", "Rei needs this device to continue"},
		{ep, "The reply was interrupted", "AI API error: HTTP 500"},
	} {
		m := parse(t, tc.p)
		n := tc.p.CommonFields().Notification
		if show, _ := n.Show.Get(); show != push.ShowAlways || !m.Silent || m.Tag != tag || m.Title != tc.title || m.Body != tc.body || !m.Mutable {
			t.Errorf("%s: %+v show %q", tc.p.Kind(), m, show)
		}
	}
}

// show:false keeps a push silent (upstream's choice to make): it is not
// made declarative, which would show it anyway; reasoning never is; and
// without the page's URL nothing is, since Safari refuses a declarative
// message whose navigate is not absolute.
func TestNotDeclarative(t *testing.T) {
	c := instant()
	c.Notification = &push.Notification{Show: push.Some(push.ShowNever)}
	cp, _, _ := fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "x"})
	tr, _ := fixed.BuildToolRequestPush(builders.ToolRequestArgs{Common: c, ToolCalls: raw(`[{"id":"a"}]`)})
	rp, _, _ := fixed.BuildReasoningPush(builders.ReasoningArgs{Common: instant(), ReasoningContent: "plan"})
	noPage := fixed
	noPage.PageURL = ""
	plain, _, _ := noPage.BuildContentPush(builders.ContentArgs{Common: instant(), Message: "x"})
	for _, bad := range []string{"amsg.example", "ftp://amsg.example", "https://user@amsg.example", "/"} {
		noPage.PageURL = bad
		p, _, _ := noPage.BuildContentPush(builders.ContentArgs{Common: instant(), Message: "x"})
		if p.Notification != nil || p.Unknown != nil {
			t.Errorf("page URL %q: the push was changed: %+v", bad, p.Notification)
		}
	}
	for _, p := range []push.Push{cp, tr, rp, plain} {
		out, _ := push.Encode(p)
		if _, err := declarativetest.Parse(out); err == nil {
			t.Errorf("%s is declarative: %s", p.Kind(), out)
		}
	}
	if plain.Notification != nil || plain.Unknown != nil {
		t.Errorf("without the page's URL the push was changed: %+v %+v", plain.Notification, plain.Unknown)
	}
}

// Safari refuses a declarative message with an empty title or a relative
// icon: the builders fill the one and resolve the other against the page.
func TestDeclarativeRepairsWhatSafariRefuses(t *testing.T) {
	c := instant()
	c.Notification = &push.Notification{Title: push.Some(""), Icon: push.Some("/avatar.png")}
	p, _, err := fixed.BuildContentPush(builders.ContentArgs{Common: c, Message: "x", ContactName: "Rei"})
	if err != nil {
		t.Fatal(err)
	}
	m := parse(t, p)
	if icon, _ := p.Notification.Icon.Get(); m.Title != "From Rei" || icon != pageURL+"/avatar.png" {
		t.Errorf("title %q icon %q", m.Title, icon)
	}
}
