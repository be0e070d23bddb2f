package usercrypt

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
)

// SealStream seals a wire envelope whose plaintext is given in pieces, so an
// answer of any size is encrypted without holding it whole. Its ciphertext
// and tag are those Seal gives for the same IV and plaintext: AES-256-GCM is
// AES in counter mode plus GHASH over the ciphertext, and both run a block
// at a time. The envelope's authTag comes before its encryptedData, so a
// caller that streams an answer seals it twice: once for the tag, once to
// send (same IV, same ciphertext), and compares the tags to learn that the
// plaintext did not change between the two (api's GET /client-state).
type SealStream struct {
	block   cipher.Block
	product [16]fieldElement // multiples of H, see newGHASH
	tagMask [aes.BlockSize]byte
	counter [aes.BlockSize]byte // the next keystream block's counter

	hash fieldElement // GHASH of the whole blocks of ciphertext so far
	// pending is the ciphertext of a block not yet whole, and keystream the
	// rest of its keystream (pending holds len bytes of the block).
	pending   [aes.BlockSize]byte
	keystream [aes.BlockSize]byte
	len       int
	total     uint64 // plaintext bytes sealed
}

// maxStreamBytes is where GCM's 32-bit block counter would wrap (2^32 - 2
// blocks): more is refused, as crypto/cipher refuses it.
const maxStreamBytes = (1<<32 - 2) * aes.BlockSize

// ErrStreamTooLong reports a plaintext longer than one GCM message may be.
var ErrStreamTooLong = errors.New("usercrypt: plaintext too long for one AES-GCM message")

// NewEnvelopeIV returns a fresh random IV for a wire envelope.
func NewEnvelopeIV() []byte { return randomBytes(envelopeIVLen) }

// SealStream starts sealing under k with iv, which must be envelopeIVLen
// (12) bytes, as NewEnvelopeIV gives.
func (k Key) SealStream(iv []byte) (*SealStream, error) {
	if len(iv) != envelopeIVLen {
		return nil, errors.New("usercrypt: a stream IV is 12 bytes")
	}
	block, err := aes.NewCipher(k.b[:])
	if err != nil {
		return nil, err
	}
	s := &SealStream{block: block}
	var h [aes.BlockSize]byte
	block.Encrypt(h[:], h[:])
	s.product = ghashTable(h)
	// J0 = IV || 0^31 || 1; the tag is masked with E(K, J0) and the
	// keystream starts at J0 + 1.
	copy(s.counter[:], iv)
	binary.BigEndian.PutUint32(s.counter[12:], 1)
	block.Encrypt(s.tagMask[:], s.counter[:])
	binary.BigEndian.PutUint32(s.counter[12:], 2)
	return s, nil
}

// Seal appends the ciphertext of plaintext to dst and returns it.
func (s *SealStream) Seal(dst, plaintext []byte) ([]byte, error) {
	if s.total+uint64(len(plaintext)) > maxStreamBytes {
		return dst, ErrStreamTooLong
	}
	s.total += uint64(len(plaintext))
	for _, p := range plaintext {
		if s.len == 0 {
			s.block.Encrypt(s.keystream[:], s.counter[:])
			binary.BigEndian.PutUint32(s.counter[12:], binary.BigEndian.Uint32(s.counter[12:])+1)
		}
		c := p ^ s.keystream[s.len]
		s.pending[s.len] = c
		dst = append(dst, c)
		if s.len++; s.len == aes.BlockSize {
			s.absorb(s.pending[:])
			s.len = 0
		}
	}
	return dst, nil
}

// Tag finishes the stream and returns its 16-byte authentication tag.
// The stream takes no more plaintext afterwards.
func (s *SealStream) Tag() []byte {
	if s.len > 0 {
		var last [aes.BlockSize]byte
		copy(last[:], s.pending[:s.len])
		s.absorb(last[:])
		s.len = 0
	}
	var lengths [aes.BlockSize]byte // bit lengths of the (empty) additional data and the ciphertext
	binary.BigEndian.PutUint64(lengths[8:], s.total*8)
	s.absorb(lengths[:])
	tag := make([]byte, aes.BlockSize)
	binary.BigEndian.PutUint64(tag, s.hash.low)
	binary.BigEndian.PutUint64(tag[8:], s.hash.high)
	for i := range tag {
		tag[i] ^= s.tagMask[i]
	}
	return tag
}

// absorb adds one 16-byte block to the hash.
func (s *SealStream) absorb(block []byte) {
	s.hash.low ^= binary.BigEndian.Uint64(block)
	s.hash.high ^= binary.BigEndian.Uint64(block[8:])
	ghashMul(&s.product, &s.hash)
}

// GHASH, after Go's generic implementation (crypto/internal/fips140/aes/gcm,
// ghash.go; BSD licence), which the standard library does not export. The
// tests hold it to crypto/cipher's GCM.

// fieldElement is an element of GF(2^128) with GCM's bit order: the
// coefficient of x^0 is low>>63, of x^127 high&1.
type fieldElement struct{ low, high uint64 }

// ghashTable returns the sixteen multiples of H, indexed by their
// multiplier's bits reversed (lookups take bits of a field element, which
// run the other way).
func ghashTable(h [aes.BlockSize]byte) [16]fieldElement {
	var product [16]fieldElement
	x := fieldElement{binary.BigEndian.Uint64(h[:8]), binary.BigEndian.Uint64(h[8:])}
	product[reverseBits(1)] = x
	for i := 2; i < 16; i += 2 {
		product[reverseBits(i)] = ghashDouble(product[reverseBits(i/2)])
		p := product[reverseBits(i)]
		product[reverseBits(i+1)] = fieldElement{p.low ^ x.low, p.high ^ x.high}
	}
	return product
}

// reverseBits reverses the four bits of i.
func reverseBits(i int) int {
	i = ((i << 2) & 0xc) | ((i >> 2) & 0x3)
	return ((i << 1) & 0xa) | ((i >> 1) & 0x5)
}

// ghashDouble multiplies x by x (the polynomial), a right shift in this bit
// order, reduced by x^128 + x^7 + x^2 + x + 1.
func ghashDouble(x fieldElement) fieldElement {
	d := fieldElement{low: x.low >> 1, high: x.high>>1 | x.low<<63}
	if x.high&1 == 1 {
		d.low ^= 0xe100000000000000
	}
	return d
}

var ghashReduction = [16]uint16{
	0x0000, 0x1c20, 0x3840, 0x2460, 0x7080, 0x6ca0, 0x48c0, 0x54e0,
	0xe100, 0xfd20, 0xd940, 0xc560, 0x9180, 0x8da0, 0xa9c0, 0xb5e0,
}

// ghashMul sets y to y·H, four bits at a time (Horner's rule over the
// table of multiples of H).
func ghashMul(product *[16]fieldElement, y *fieldElement) {
	var z fieldElement
	for _, word := range [2]uint64{y.high, y.low} {
		for range 16 {
			msw := z.high & 0xf
			z.high = z.high>>4 | z.low<<60
			z.low = z.low>>4 ^ uint64(ghashReduction[msw])<<48
			t := product[word&0xf]
			z.low ^= t.low
			z.high ^= t.high
			word >>= 4
		}
	}
	*y = z
}
