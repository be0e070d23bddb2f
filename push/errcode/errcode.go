// Package errcode is amsg's one table of error codes, in the manner of
// ntfy's server/errors.go: every code the server writes is defined once
// here, as a Go value with its HTTP status, its English (what clients get by
// default) and the standard's Chinese (what they get when Accept-Language
// prefers zh). A code with more specific messages has them as further
// values of the same code. Producers pick a message by its value, never by
// its text; the api package renders the language.
//
// It is standard library only, the lowest floor, so the scheduler, the
// agent loop, the courier and the api package all write the same codes.
package errcode

import (
	"fmt"
	"strings"
)

// Message is one message of an error code in both languages. A code's
// first message, made by define, is its default; more specific ones, made
// by also, share its code and status.
type Message struct {
	code   string
	status int
	en, zh string
	// general is the code's default message, which this one specialises.
	general *Message
}

// table is every message in the order defined: the one table.
var table []*Message

// define is a code's default message. status is the HTTP status it answers
// with, 0 for a code that is never an answer's own code (one written into a
// task's lastError, or a detail of another answer).
func define(code string, status int, en, zh string) *Message {
	m := &Message{code: code, status: status, en: en, zh: zh}
	m.general = m
	table = append(table, m)
	return m
}

// also is another message of m's code. An empty en says the message has
// no English of its own: its English is the code's default followed by the
// fields the error names (see English).
func (m *Message) also(en, zh string) *Message {
	n := &Message{code: m.code, status: m.status, en: en, zh: zh, general: m.general}
	table = append(table, n)
	return n
}

// Code is the wire code, such as "INVALID_PARAMETERS".
func (m *Message) Code() string { return m.code }

// Status is the HTTP status the code answers with; 0 for a code that is
// never an answer's own.
func (m *Message) Status() int { return m.status }

// English is the English text; "" when the message has none of its own,
// and the writer then says its code's General English followed by the
// fields the error names.
func (m *Message) English() string { return m.en }

// Chinese is the standard's Chinese text.
func (m *Message) Chinese() string { return m.zh }

// General is the default message of m's code.
func (m *Message) General() *Message { return m.general }

// With is m with its verbs filled from args, in both languages. A text
// without verbs (an English that stays general) is kept as it is.
func (m *Message) With(args ...any) *Message {
	c := *m
	c.en, c.zh = format(m.en, args), format(m.zh, args)
	return &c
}

// Quoting is a message of m's code whose text, in both languages, is the
// words of whatever failed (an LLM's or a push service's error, a
// validator's reason), which amsg passes on and does not translate.
func (m *Message) Quoting(text string) *Message {
	c := *m
	c.en, c.zh = text, text
	return &c
}

// Under is m said with code's code and status: a check shared by routes
// that answer with different codes. A code's default said under another
// code keeps its Chinese and takes the other code's General English.
func (m *Message) Under(code *Message) *Message {
	if m.code == code.code {
		return m
	}
	c := *m
	c.code, c.status, c.general = code.code, code.status, code.general
	if m.general == m {
		c.en = ""
	}
	return &c
}

func format(text string, args []any) string {
	if !strings.Contains(text, "%") {
		return text
	}
	return fmt.Sprintf(text, args...)
}

// Table is every message, each code's default first among its code's.
func Table() []*Message { return append([]*Message(nil), table...) }

// byCode holds each code's default message. It is filled in init, once
// every message of the table exists.
var byCode = make(map[string]*Message)

func init() {
	for _, m := range table {
		if _, ok := byCode[m.code]; !ok {
			byCode[m.code] = m
		}
	}
}

// Lookup is code's default message, for a code carried as a string (a
// task's stored lastError).
func Lookup(code string) (*Message, bool) {
	m, ok := byCode[code]
	return m, ok
}
