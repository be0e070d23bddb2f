package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
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

// The info strings of RFC 8291 §3.4 and RFC 8188 §2.2-2.3, each followed
// by HKDF-Expand's counter of its first block.
const (
	webPushInfo = "WebPush: info\x00"
	cekInfo     = "Content-Encoding: aes128gcm\x00\x01"
	nonceInfo   = "Content-Encoding: nonce\x00\x01"
)

// uaKeys are a subscription's keys, decoded and checked once per send.
type uaKeys struct {
	public      *ecdh.PublicKey
	publicBytes []byte // its 65 bytes, as key_info takes them
	auth        []byte
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
	size := max(padTo, headerLen+len(plaintext)+1+tagLen)
	body := make([]byte, size)
	copy(body, salt)
	binary.BigEndian.PutUint32(body[saltLen:], recordSizeRS)
	body[saltLen+4] = keyLen
	asPublic := body[saltLen+5 : headerLen]
	copy(asPublic, as.PublicKey().Bytes())
	cek, nonce := contentKeys(secret, ua, asPublic, salt)
	block, err := aes.NewCipher(cek[:])
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	record := body[headerLen : size-tagLen]
	copy(record, plaintext)
	record[len(plaintext)] = lastRecord // the zeros after it are the padding
	gcm.Seal(record[:0], nonce[:], record, nil)
	return body, nil
}

// contentKeys derives the content-encryption key and nonce of RFC 8291
// §3.3-3.4 and RFC 8188 §2.2-2.3 from the ECDH secret. Every HKDF-Expand
// here asks for at most one SHA-256 block, T(1) = HMAC(PRK, info || 0x01),
// so the derivation is five HMACs, computed on the stack.
func contentKeys(secret []byte, ua uaKeys, asPublic, salt []byte) (cek [16]byte, nonce [12]byte) {
	// key_info = "WebPush: info" || 0x00 || ua_public || as_public, then
	// HKDF-Expand's counter.
	var info [len(webPushInfo) + 2*keyLen + 1]byte
	n := copy(info[:], webPushInfo)
	n += copy(info[n:], ua.publicBytes)
	n += copy(info[n:], asPublic)
	info[n] = 1
	prkKey := hmacSHA256(ua.auth, secret)
	ikm := hmacSHA256(prkKey[:], info[:])
	prk := hmacSHA256(salt, ikm[:])
	cekFull := hmacSHA256(prk[:], []byte(cekInfo))
	nonceFull := hmacSHA256(prk[:], []byte(nonceInfo))
	copy(cek[:], cekFull[:])
	copy(nonce[:], nonceFull[:])
	return cek, nonce
}

// hmacSHA256 is RFC 2104's HMAC-SHA256 for a key of at most one block
// and a message of at most maxHMACMessage bytes (all of contentKeys'),
// on the stack: crypto/hmac allocates a hash state per key.
func hmacSHA256(key, msg []byte) [sha256.Size]byte {
	var buf [sha256.BlockSize + maxHMACMessage]byte
	copy(buf[:], key)
	for i := range sha256.BlockSize {
		buf[i] ^= 0x36
	}
	n := sha256.BlockSize + copy(buf[sha256.BlockSize:], msg)
	inner := sha256.Sum256(buf[:n])
	for i := range sha256.BlockSize {
		buf[i] ^= 0x36 ^ 0x5c
	}
	copy(buf[sha256.BlockSize:], inner[:])
	return sha256.Sum256(buf[:sha256.BlockSize+sha256.Size])
}

// maxHMACMessage is contentKeys' longest HMAC message: key_info and the
// counter.
const maxHMACMessage = len(webPushInfo) + 2*keyLen + 1
