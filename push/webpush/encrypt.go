package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"amsg/push"
)

// RFC 8291 §3.4 and RFC 8188 §2.1: the aes128gcm header is salt(16) ||
// rs(4) || idlen(1) || keyid, where keyid is the application server's
// ephemeral 65-byte public key.
const (
	saltLen      = 16
	keyLen       = 65
	headerLen    = saltLen + 4 + 1 + keyLen
	tagLen       = 16
	lastRecord   = 0x02 // the padding delimiter of the last (only) record
	recordSizeRS = push.MaxEncryptedBytes
)

var (
	webPushInfo = []byte("WebPush: info\x00")
	cekInfo     = "Content-Encoding: aes128gcm\x00"
	nonceInfo   = "Content-Encoding: nonce\x00"
)

// uaKeys are a subscription's keys, decoded and checked once per send.
type uaKeys struct {
	public *ecdh.PublicKey
	auth   []byte
}

// sealPush encrypts plaintext for one subscription as a single aes128gcm
// record with a fresh salt and a fresh ephemeral key, as RFC 8291 §3.1
// requires for every message. The body is padTo bytes when padTo is larger
// than the natural size.
func sealPush(plaintext []byte, ua uaKeys, padTo int) ([]byte, error) {
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate the ephemeral key: %w", err)
	}
	var salt [saltLen]byte
	_, _ = rand.Read(salt[:]) // crypto/rand.Read never fails
	return seal(plaintext, ua, as, salt[:], padTo)
}

// seal is sealPush with the ephemeral key and salt given, so a test can
// reproduce RFC 8291 §5. The body is built in one allocation: header,
// plaintext, delimiter and padding, then sealed in place.
func seal(plaintext []byte, ua uaKeys, as *ecdh.PrivateKey, salt []byte, padTo int) ([]byte, error) {
	secret, err := as.ECDH(ua.public)
	if err != nil {
		return nil, fmt.Errorf("ECDH with the subscription key: %w", err)
	}
	asPublic := as.PublicKey().Bytes()
	// key_info = "WebPush: info" || 0x00 || ua_public || as_public.
	var info [14 + 2*keyLen]byte
	n := copy(info[:], webPushInfo)
	n += copy(info[n:], ua.public.Bytes())
	copy(info[n:], asPublic)
	prkKey, err := hkdf.Extract(sha256.New, secret, ua.auth)
	if err != nil {
		return nil, err
	}
	ikm, err := hkdf.Expand(sha256.New, prkKey, string(info[:]), 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, cekInfo, 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, nonceInfo, 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	size := max(padTo, headerLen+len(plaintext)+1+tagLen)
	body := make([]byte, size)
	copy(body, salt)
	binary.BigEndian.PutUint32(body[saltLen:], recordSizeRS)
	body[saltLen+4] = keyLen
	copy(body[saltLen+5:], asPublic)
	record := body[headerLen : size-tagLen]
	copy(record, plaintext)
	record[len(plaintext)] = lastRecord // the zeros after it are the padding
	gcm.Seal(record[:0], nonce, record, nil)
	return body, nil
}
