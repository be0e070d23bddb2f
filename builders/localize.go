package builders

import (
	"strings"

	"amsg/push"
	"amsg/push/notifytext"
)

// Localize returns payload with the notification texts amsg wrote in it in
// the language of tag (push/notifytext): a root title "From <contactName>",
// and in the notification directive a title of amsg's (that one, the
// default title, an interrupted reply's) and a tool request's quiet body. A
// text is amsg's when it equals one of those texts in any language of the
// table, with the push's contactName, so a push built in one language
// (or by an older amsg, in Chinese) turns into another. Texts a producer
// gave never equal them and are left alone (one that does is amsg's words
// anyway). Localize returns payload itself when nothing changes, and an
// error only for a payload that does not decode.
func Localize(payload []byte, tag string) ([]byte, error) {
	p, err := push.Decode(payload)
	if err != nil {
		return nil, err
	}
	lang := notifytext.Language(tag)
	var title, name *push.Optional[string]
	switch q := p.(type) {
	case *push.ContentPush:
		title, name = &q.Title, &q.ContactName
	case *push.ReasoningPush:
		title, name = &q.Title, &q.ContactName
	case *push.ToolRequestPush:
		title, name = &q.Title, &q.ContactName
	}
	contact := ""
	if name != nil {
		contact, _ = name.Get()
	}
	changed := false
	if title != nil {
		changed = translate(title, lang, contact, notifytext.FromContact) || changed
	}
	c := p.CommonFields()
	if c.Notification != nil {
		n := *c.Notification
		n.Unknown = append([]push.Member(nil), c.Notification.Unknown...)
		who := contact
		if who == "" {
			who = notifytext.Text(notifytext.English, notifytext.Companion)
		}
		titled := translate(&n.Title, lang, contact, notifytext.FromContact, notifytext.DefaultTitle, notifytext.ReplyInterrupted)
		bodied := p.Kind() == push.KindToolRequest && translate(&n.Body, lang, who, notifytext.ToolRequestBody)
		if titled || bodied {
			c.Notification = &n
			changed = true
		}
	}
	if !changed {
		return payload, nil
	}
	return push.Encode(p)
}

// translate replaces *text with its key's text in lang when it is one of
// keys' texts in any language (arg fills their %s), and reports whether it
// did.
func translate(text *push.Optional[string], lang, arg string, keys ...notifytext.Key) bool {
	t, ok := text.Get()
	if !ok || t == "" {
		return false
	}
	for _, key := range keys {
		for _, from := range notifytext.Languages() {
			if t != textOf(from, key, arg) {
				continue
			}
			to := textOf(lang, key, arg)
			*text = push.Some(to)
			return to != t
		}
	}
	return false
}

// textOf is key's text in lang, with arg when the text takes one.
func textOf(lang string, key notifytext.Key, arg string) string {
	if strings.Contains(notifytext.Text(notifytext.English, key), "%s") {
		return notifytext.Text(lang, key, arg)
	}
	return notifytext.Text(lang, key)
}
