package scheduler

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeStoredPayload reads the payload as amsg stores it (Payload.Encode:
// every key spelled as tagged, strings without escapes, null for what is
// unset) in one pass, without encoding/json's reflection and its separate
// validation pass: about a third of the build of a fixed task's push.
// It reports false, having read nothing it can vouch for, for anything
// else: a key spelled otherwise (encoding/json matches keys without
// regard to case), a string with an escape or a control character or
// invalid UTF-8, a number or a map that is set, a value of the wrong type,
// invalid JSON. DecodePayload then reads it with encoding/json, so both
// paths give the same Payload (FuzzDecodePayload checks it).
func decodeStoredPayload(raw []byte, p *Payload) bool {
	d := payloadReader{data: raw}
	if !d.byte('{') {
		return false
	}
	if d.byte('}') {
		return d.end()
	}
	for {
		key, ok := d.plainString()
		if !ok || !d.byte(':') || !d.member(string(key), p) {
			return false
		}
		if d.byte('}') {
			return d.end()
		}
		if !d.byte(',') {
			return false
		}
	}
}

// member reads the value of one key into its field. (A switch on the
// key's bytes converted to string allocates nothing.)
func (d *payloadReader) member(key string, p *Payload) bool {
	switch key {
	case "contactName":
		return d.stringInto(&p.ContactName)
	case "messageType":
		return d.stringInto((*string)(&p.MessageType))
	case "messageSubtype":
		return d.stringInto(&p.MessageSubtype)
	case "firstSendTime":
		return d.stringInto(&p.FirstSendTime)
	case "recurrenceType":
		return d.stringInto((*string)(&p.RecurrenceType))
	case "cronExpr":
		return d.stringInto(&p.CronExpr)
	case "priority":
		return d.stringInto(&p.Priority)
	case "avatarUrl":
		return d.optionalString(&p.AvatarURL)
	case "userMessage":
		return d.optionalString(&p.UserMessage)
	case "tzId":
		return d.optionalString(&p.TzID)
	case "apiUrl":
		return d.optionalString(&p.APIURL)
	case "apiKey":
		return d.optionalString(&p.APIKey)
	case "primaryModel":
		return d.optionalString(&p.PrimaryModel)
	case "completePrompt":
		return d.optionalString(&p.CompletePrompt)
	case "messages":
		return d.rawValue(&p.Messages)
	case "splitPattern":
		return d.rawValue(&p.SplitPattern)
	case "llmExtraBody":
		return d.rawValue(&p.LLMExtraBody)
	case "metadata":
		return d.rawValue(&p.Metadata)
	case "maxTokens":
		if d.null() {
			p.MaxTokens = nil
			return true
		}
	case "temperature":
		if d.null() {
			p.Temperature = nil
			return true
		}
	case "credRefs":
		if d.null() {
			p.CredRefs = nil
			return true
		}
	}
	// A set number or map, or a key that is none of the above: some
	// spelling of a field's name may be one to encoding/json.
	return false
}

// payloadReader reads the subset of JSON decodeStoredPayload accepts.
type payloadReader struct {
	data []byte
	at   int
}

func (d *payloadReader) space() {
	for d.at < len(d.data) {
		switch d.data[d.at] {
		case ' ', '\t', '\n', '\r':
			d.at++
		default:
			return
		}
	}
}

// byte consumes c, after white space, if it is next.
func (d *payloadReader) byte(c byte) bool {
	d.space()
	if d.at < len(d.data) && d.data[d.at] == c {
		d.at++
		return true
	}
	return false
}

// end reports whether nothing but white space is left.
func (d *payloadReader) end() bool {
	d.space()
	return d.at == len(d.data)
}

func (d *payloadReader) null() bool {
	d.space()
	if len(d.data)-d.at >= 4 && string(d.data[d.at:d.at+4]) == "null" {
		d.at += 4
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters, in
// valid UTF-8: its text is its bytes.
func (d *payloadReader) plainString() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.at
	for d.at < len(d.data) {
		c := d.data[d.at]
		switch {
		case c == '"':
			s := d.data[start:d.at]
			d.at++
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		d.at++
	}
	return nil, false
}

// stringInto reads a string, or null, which leaves a string as it was
// (as encoding/json does).
func (d *payloadReader) stringInto(s *string) bool {
	if d.null() {
		return true
	}
	v, ok := d.plainString()
	*s = string(v)
	return ok
}

func (d *payloadReader) optionalString(s **string) bool {
	if d.null() {
		*s = nil
		return true
	}
	v, ok := d.plainString()
	text := string(v)
	*s = &text
	return ok
}

// rawValue keeps a value's bytes, null included, as json.RawMessage does:
// the extent found by brackets and strings, then validated whole (but for
// null and {}, which most payloads hold).
func (d *payloadReader) rawValue(m *json.RawMessage) bool {
	if d.null() {
		*m = json.RawMessage("null")
		return true
	}
	start, depth := d.at, 0
	for d.at < len(d.data) {
		switch c := d.data[d.at]; c {
		case '"':
			if !d.skipString() {
				return false
			}
			if depth == 0 {
				return d.keep(start, m)
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // a literal ended by its object's close
				return d.keep(start, m)
			}
			if depth--; depth == 0 {
				d.at++
				return d.keep(start, m)
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return d.keep(start, m)
			}
		}
		d.at++
	}
	return false
}

// skipString passes the string at d.at, escapes and all.
func (d *payloadReader) skipString() bool {
	for d.at++; d.at < len(d.data); d.at++ {
		switch d.data[d.at] {
		case '\\':
			d.at++
		case '"':
			d.at++
			return true
		}
	}
	return false
}

func (d *payloadReader) keep(start int, m *json.RawMessage) bool {
	v := d.data[start:d.at]
	if string(v) != "{}" && (len(v) == 0 || !json.Valid(v)) {
		return false
	}
	*m = append(json.RawMessage(nil), v...)
	return true
}
