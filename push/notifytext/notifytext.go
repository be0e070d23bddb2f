// Package notifytext holds the notification texts amsg writes itself, one
// table per language, so that a device hears amsg in the language it
// reported and adding a language is adding one file.
//
// Texts a producer gives (a notification's title, a task's title) are never
// looked up here: only the words amsg chooses on its own (a default title,
// a quiet notification's body, an approval's outcome) are.
package notifytext

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Key names one text. Its value is stable: tests and logs may name it.
type Key string

// The texts amsg writes. A text with %s takes the arguments its comment
// names, in that order.
const (
	FromContact      Key = "fromContact"      // a reply's or reminder's title; %s the contact's name
	DefaultTitle     Key = "defaultTitle"     // a title when there is no contact
	DefaultBody      Key = "defaultBody"      // a body when the push has no text
	Receiving        Key = "receiving"        // the quiet body shown while a message is still arriving
	ToolRequestBody  Key = "toolRequestBody"  // a tool request's body; %s the contact's name
	Thinking         Key = "thinking"         // a reasoning push's quiet body; %s the contact's name
	Companion        Key = "companion"        // the contact's name when a push names none
	ReplyInterrupted Key = "replyInterrupted" // an error push's title

	// An approval's notification and its outcomes (issue 21).
	ApprovalBody      Key = "approvalBody"      // %s the contact's name, %s the tool's name
	ApproveAction     Key = "approveAction"     // the Approve button's title
	DenyAction        Key = "denyAction"        // the Deny button's title
	Approved          Key = "approved"          // shown on the device that approved
	Declined          Key = "declined"          // shown on the device that declined
	ApprovedElsewhere Key = "approvedElsewhere" // replaces the notification on the other devices
	DeclinedElsewhere Key = "declinedElsewhere" // likewise for a denial
	NoLongerWaiting   Key = "noLongerWaiting"   // replaces the notification once the approval expired
	AlreadyAnswered   Key = "alreadyAnswered"   // a decision that came too late
)

// English is the language of a device that reported none, or one without a
// table.
const English = "en"

// tables holds each language's texts by its primary subtag; each language's
// file adds its own.
var tables = map[string]map[Key]string{}

// Languages lists the languages that have a table, English first. The
// caller must not change the slice.
func Languages() []string { return languages() }

// languages is computed once, after every table's init.
var languages = sync.OnceValue(func() []string {
	out := []string{English}
	for lang := range tables {
		if lang != English {
			out = append(out, lang)
		}
	}
	slices.Sort(out[1:])
	return out
})

// Tables returns a copy of every language's texts, for the service worker,
// which picks the browser's language itself.
func Tables() map[string]map[Key]string {
	out := make(map[string]map[Key]string, len(tables))
	for lang, table := range tables {
		out[lang] = maps.Clone(table)
	}
	return out
}

// Language maps a BCP 47 tag (zh-CN, en-GB, zh-Hant-TW, an Accept-Language
// value) to the language of a table: its primary subtag when a table has it,
// else English.
func Language(tag string) string {
	tag = strings.TrimSpace(tag)
	if i := strings.IndexAny(tag, ",;"); i >= 0 {
		tag = strings.TrimSpace(tag[:i]) // the first of an Accept-Language list
	}
	if i := strings.IndexAny(tag, "-_"); i >= 0 {
		tag = tag[:i]
	}
	tag = strings.ToLower(tag)
	if _, ok := tables[tag]; ok {
		return tag
	}
	return English
}

// Text is key's text in the language of tag, formatted with args. A key a
// language lacks falls back to English.
func Text(tag string, key Key, args ...any) string {
	text, ok := tables[Language(tag)][key]
	if !ok {
		text = tables[English][key]
	}
	if len(args) == 0 {
		return text
	}
	return fmt.Sprintf(text, args...)
}
