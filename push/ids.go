package push

import (
	"crypto/rand"
	"encoding/hex"
)

// NewUUID returns a random RFC 4122 version 4 UUID in lowercase, the form
// JavaScript's crypto.randomUUID() prints and the standard's ids embed
// (msg_<uuid>, sess_<uuid>, mp_<uuid>, blob keys).
func NewUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])  // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], u[10:16])
	return string(s[:])
}

// NewMessageID returns "msg_" and a fresh UUID, the id producers give a push
// that has none.
func NewMessageID() string { return "msg_" + NewUUID() }
