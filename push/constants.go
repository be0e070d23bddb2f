package push

import "time"

// Kind is the content axis (messageKind): what a push carries.
type Kind string

// The four business kinds, plus the transport-only multipart chunk kind.
const (
	KindContent     Kind = "content"
	KindReasoning   Kind = "reasoning"
	KindToolRequest Kind = "tool_request"
	KindError       Kind = "error"

	// KindMultipart marks a transport chunk of an oversized push. It is not
	// part of the business union and never reaches business code.
	KindMultipart Kind = "_multipart"
)

// MessageType is the dispatch axis (messageType): how a push was produced.
type MessageType string

// Dispatch types.
const (
	TypeInstant  MessageType = "instant"
	TypeFixed    MessageType = "fixed"
	TypePrompted MessageType = "prompted"
	TypeAuto     MessageType = "auto"
)

// Valid reports whether t is one of the four dispatch types.
func (t MessageType) Valid() bool {
	switch t {
	case TypeInstant, TypeFixed, TypePrompted, TypeAuto:
		return true
	}
	return false
}

// Source returns the source t pairs with: SourceInstant for TypeInstant,
// SourceScheduled for the other three, "" when t is not a dispatch type.
func (t MessageType) Source() Source {
	switch t {
	case TypeInstant:
		return SourceInstant
	case TypeFixed, TypePrompted, TypeAuto:
		return SourceScheduled
	}
	return ""
}

// Source is the routing origin: instant for the instant paths, scheduled for
// the scheduler. TypeInstant pairs with SourceInstant, the other three types
// with SourceScheduled.
type Source string

// Sources.
const (
	SourceInstant   Source = "instant"
	SourceScheduled Source = "scheduled"
)

// Valid reports whether s is one of the two sources.
func (s Source) Valid() bool { return s == SourceInstant || s == SourceScheduled }

// Recurrence is how a scheduled task repeats (recurrenceType). Scheduled
// pushes carry it as part of their task identity.
type Recurrence string

// Recurrences.
const (
	RecurrenceNone   Recurrence = "none"
	RecurrenceDaily  Recurrence = "daily"
	RecurrenceWeekly Recurrence = "weekly"
	// RecurrenceCron repeats on a five-field cron expression (cronExpr), read
	// in the task's zone. It is amsg's extension of the standard.
	RecurrenceCron Recurrence = "cron"
)

// Valid reports whether r is one of the four recurrences.
func (r Recurrence) Valid() bool {
	switch r {
	case RecurrenceNone, RecurrenceDaily, RecurrenceWeekly, RecurrenceCron:
		return true
	}
	return false
}

// DefaultSubtype is the business axis (messageSubtype) producers fill in when
// the caller gives none.
const DefaultSubtype = "chat"

// Size budget of one Web Push message. Push services cap the encrypted body at
// 4096 bytes; a single aes128gcm record costs 103 bytes (salt 16, record size
// 4, key id length 1, key id 65, padding delimiter 1, GCM tag 16).
const (
	MaxEncryptedBytes  = 4096
	EncryptionOverhead = 103
	MaxPayloadBytes    = MaxEncryptedBytes - EncryptionOverhead // 3993
)

// Multipart transport constants, as in @rei-standard/amsg-shared protocol.js.
const (
	MultipartVersion              = 1
	MultipartEncoding             = "json-utf8-base64url"
	DefaultMultipartChunkBytes    = 1800
	DefaultMultipartTTL           = 60 * time.Second
	DefaultMultipartMaxChunks     = 128
	DefaultMultipartMaxTotalBytes = 256000
)
