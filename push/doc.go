// Package push is the wire schema of ReiStandard Active Messaging: the three
// axes of a push (dispatch messageType, business messageSubtype, content
// messageKind), the four business pushes, the notification directive, the
// `_multipart` split, and a JSON codec. It imports only the standard
// library; every other amsg package builds on it.
//
// # Types
//
// [ContentPush], [ReasoningPush], [ToolRequestPush] and [ErrorPush] embed
// [Common] (the fields every push carries) and implement [Push]. Builders in
// package amsg/builders validate and stamp them; this package only says what
// they look like on the wire.
//
// Absent and null are different on the wire (the standard treats them apart in
// many places), so every optional member is an [Optional], which is absent,
// null, or holds a value. Members passed through for the caller (metadata,
// toolCalls, notification.data) are [encoding/json.RawMessage]: nil is absent,
// and the bytes are never interpreted or rewritten apart from dropping
// insignificant whitespace.
//
// # Codec
//
// [Decode] reads a business push of any kind; each type also implements
// [encoding/json.Unmarshaler] for one kind. Decoding keeps every member it
// does not know, at top level and inside notification, in [Common.Unknown] and
// [Notification.Unknown]. A duplicated key keeps the position of its first
// occurrence and the value of its last, as JavaScript's JSON.parse does.
// Decode refuses input over [MaxDecodeBytes], input that is not UTF-8 JSON or
// not an object, a known member of the wrong JSON type ([*FieldError]), and a
// missing or unknown messageKind ([*MessageKindError]); a `_multipart` transport
// chunk is refused with [ErrMultipartChunk] so the caller can hand it to the
// multipart decoder instead (pushtest has one). Decode does not validate: a
// push lacking messageId decodes with an empty MessageID. Validation is the builders' job.
//
// [Encode] (and MarshalJSON) writes compact JSON the way JavaScript's
// JSON.stringify does: no HTML escaping, U+2028 and U+2029 unescaped, so byte
// counts against [MaxPayloadBytes] match what a JavaScript producer would
// send. Keys come in one fixed order, the order of the upstream builders:
//
//	messageKind, messageType, source, messageId, sessionId, timestamp,
//	the kind's members (below),
//	taskId, taskUuid, recurrenceType, occurrenceMs,
//	metadata, notification,
//	unknown members in the order they arrived.
//
//	content:      message, title, contactName, avatarUrl, messageSubtype, messageIndex, totalMessages
//	reasoning:    reasoningContent, title, contactName, avatarUrl, messageSubtype
//	tool_request: toolCalls, title, contactName, message, messageSubtype
//	error:        code, message, iteration, messageSubtype
//
// The scheduling identity sits before metadata because the upstream content
// builder puts taskId there (the verified instant ContentPush ends
// `"taskId":null,"metadata":{}`). Notification members have a fixed order
// too: show, title, body, icon, badge, tag, renotify, requireInteraction,
// silent, data, then unknown members. Absent members are not written; string members a
// kind requires are written only when non-empty, except the message of content
// and error pushes, which the standard requires even when empty. Decoding the
// output of Encode and encoding again gives the same bytes.
//
// # Adding a field
//
//  1. Add the Go field to the push type (or to [Common] or [Notification] when
//     every kind carries it), as an [Optional] unless the standard requires it.
//  2. Add one binding to that type's bindings method at the field's wire
//     position. That single line gives the decoder, the encoder and the
//     unknown-member check the new key; nothing else lists keys.
//  3. If the Go type is new to the codec, add a case for it to
//     (*objectWriter).member in codec.go; until then Encode fails with
//     "no encoder for <type>". Decoding needs nothing: it hands the raw value
//     to encoding/json.
//  4. Add the field to the golden files under testdata (run
//     `go test ./push -update` and read the diff), and teach package builders
//     to accept and validate it.
package push
