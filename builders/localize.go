package builders

import (
	"encoding/json"
	"slices"
	"strings"

	"amsg/push"
	"amsg/push/notifytext"
)

// Localize returns payload with the notification texts amsg wrote in it in
// the language of tag (push/notifytext): a root title "From <contactName>",
// and in the notification directive a title of amsg's (that one, the
// default title, an interrupted reply's) and a tool request's quiet body;
// on an approval (a tool_request push with an interrupt member) its body
// and its two buttons' titles, and on an approval's outcome (a content push
// with one) its message and body. A text is amsg's when it equals one of
// those texts in any language of the table, with the push's contactName
// (or the table's word for a companion) and tool name, so a push built in
// one language (or by an older amsg, in Chinese) turns into another. Texts
// a producer gave never equal them and are left alone (one that does is
// amsg's words anyway), and a text summary() cut is no longer equal either.
// Localize returns payload itself when nothing changes, and an error only
// for a payload that does not decode.
func Localize(payload []byte, tag string) ([]byte, error) {
	p, err := push.Decode(payload)
	if err != nil {
		return nil, err
	}
	lang := notifytext.Language(tag)
	var title, name *push.Optional[string]
	var message *string
	tool := ""
	switch q := p.(type) {
	case *push.ContentPush:
		title, name, message = &q.Title, &q.ContactName, &q.Message
	case *push.ReasoningPush:
		title, name = &q.Title, &q.ContactName
	case *push.ToolRequestPush:
		title, name = &q.Title, &q.ContactName
		tool = onlyToolName(q.ToolCalls)
	}
	contact := ""
	if name != nil {
		contact, _ = name.Get()
	}
	titleArgs := func(string) []any { return []any{contact} }
	// A body names the contact, or in the body's language the companion.
	bodyArgs := func(in string) []any {
		who := contact
		if who == "" {
			who = notifytext.Text(in, notifytext.Companion)
		}
		return []any{who, tool}
	}
	c := p.CommonFields()
	interrupt := slices.ContainsFunc(c.Unknown, func(m push.Member) bool { return m.Key == "interrupt" })
	changed := false
	if title != nil {
		changed = translate(title, lang, titleArgs, notifytext.FromContact) || changed
	}
	if message != nil && interrupt {
		changed = translateString(message, lang, outcomeKeys...) || changed
	}
	if c.Notification != nil {
		n := *c.Notification
		n.Unknown = append([]push.Member(nil), c.Notification.Unknown...)
		edited := translate(&n.Title, lang, titleArgs, notifytext.FromContact, notifytext.DefaultTitle, notifytext.ReplyInterrupted)
		switch {
		case p.Kind() == push.KindToolRequest && interrupt:
			edited = translate(&n.Body, lang, bodyArgs, notifytext.ApprovalBody) || edited
			edited = translateActions(n.Unknown, lang) || edited
		case p.Kind() == push.KindToolRequest:
			edited = translate(&n.Body, lang, bodyArgs, notifytext.ToolRequestBody) || edited
		case p.Kind() == push.KindContent && interrupt:
			edited = translate(&n.Body, lang, noArgs, outcomeKeys...) || edited
		}
		if edited {
			c.Notification = &n
			changed = true
		}
	}
	if !changed {
		return payload, nil
	}
	return push.Encode(p)
}

// outcomeKeys are the texts of an approval's outcome push (BuildOutcomePush).
var outcomeKeys = []notifytext.Key{notifytext.ApprovedElsewhere, notifytext.DeclinedElsewhere, notifytext.NoLongerWaiting}

func noArgs(string) []any { return nil }

// translate replaces *text with its key's text in lang when it is one of
// keys' texts in any language (args gives their %s in a language), and
// reports whether it did.
func translate(text *push.Optional[string], lang string, args func(lang string) []any, keys ...notifytext.Key) bool {
	t, ok := text.Get()
	if !ok || t == "" {
		return false
	}
	for _, key := range keys {
		for _, from := range notifytext.Languages() {
			if t != textOf(from, key, args(from)) {
				continue
			}
			to := textOf(lang, key, args(lang))
			*text = push.Some(to)
			return to != t
		}
	}
	return false
}

// translateString is translate for a plain string and texts without
// arguments.
func translateString(text *string, lang string, keys ...notifytext.Key) bool {
	t := push.Some(*text)
	if !translate(&t, lang, noArgs, keys...) {
		return false
	}
	*text, _ = t.Get()
	return true
}

// textOf is key's text in lang, with as many of args as the text takes.
func textOf(lang string, key notifytext.Key, args []any) string {
	n := strings.Count(notifytext.Text(notifytext.English, key), "%s")
	if n > len(args) {
		return "" // never equal to a text that translate looks at
	}
	return notifytext.Text(lang, key, args[:n]...)
}

// translateActions turns the titles of an approval's buttons (the
// notification's actions member, BuildApprovalPush) into lang, in place,
// and reports whether it changed one.
func translateActions(members []push.Member, lang string) bool {
	for i, m := range members {
		if m.Key != "actions" {
			continue
		}
		var actions []map[string]json.RawMessage
		if json.Unmarshal(m.Value, &actions) != nil {
			return false
		}
		edited := false
		for _, a := range actions {
			var title string
			if json.Unmarshal(a["title"], &title) != nil || !translateString(&title, lang, notifytext.ApproveAction, notifytext.DenyAction) {
				continue
			}
			a["title"] = push.MustMarshalNoEscape(title)
			edited = true
		}
		if edited {
			members[i].Value = push.MustMarshalNoEscape(actions)
		}
		return edited
	}
	return false
}

// onlyToolName is the function name of the one call in a tool_request's
// toolCalls (an approval asks about one), or "" when there is not exactly
// one.
func onlyToolName(toolCalls json.RawMessage) string {
	var calls []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(toolCalls, &calls) != nil || len(calls) != 1 {
		return ""
	}
	return calls[0].Function.Name
}
