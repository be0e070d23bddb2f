package push_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/pushtest"
)

// contentJSON is an encoded content push whose message has n runes of
// mixed one-, two- and three-byte UTF-8, so byte cuts land inside runes.
func contentJSON(n int) []byte {
	var msg strings.Builder
	for i := range n {
		msg.WriteRune([]rune("aé寿<")[i%4])
	}
	b, err := push.MarshalNoEscape(map[string]any{
		"messageKind": "content", "messageType": "instant", "source": "instant",
		"messageId": "msg_1", "message": msg.String(),
	})
	if err != nil {
		panic(err)
	}
	return b
}

var fixedCreatedAt = time.UnixMilli(1767225600000) // 2026-01-01T00:00:00Z

func TestSplitMultipartGolden(t *testing.T) {
	payload := contentJSON(1500)
	chunks, err := push.SplitMultipart(payload, push.KindContent, push.MultipartOptions{
		ID: "mp_0f8fad5b-d9cb-469f-a165-70867728950e", CreatedAt: fixedCreatedAt,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := append(bytes.Join(chunks, []byte("\n")), '\n')
	golden := filepath.Join("testdata", "multipart_split.golden")
	if os.Getenv("AMSG_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("chunks differ from %s (AMSG_UPDATE_GOLDEN=1 rewrites it):\n%s", golden, got)
	}
}

func TestSplitMultipartWireFormat(t *testing.T) {
	payload := contentJSON(2000) // 3+ chunks, cuts inside runes
	chunks, err := push.SplitMultipart(payload, push.KindContent, push.MultipartOptions{CreatedAt: fixedCreatedAt, TTL: 4 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	wantTotal := (len(payload) + push.DefaultMultipartChunkBytes - 1) / push.DefaultMultipartChunkBytes
	if len(chunks) != wantTotal {
		t.Fatalf("%d chunks for %d bytes, want %d", len(chunks), len(payload), wantTotal)
	}
	idPattern := regexp.MustCompile(`^mp_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	var joined []byte
	var id string
	for i, c := range chunks {
		if len(c) > push.MaxPayloadBytes {
			t.Errorf("chunk %d is %d bytes, over the %d-byte budget", i+1, len(c), push.MaxPayloadBytes)
		}
		var got push.MultipartChunk
		dec := json.NewDecoder(bytes.NewReader(c))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("chunk %d: %v", i+1, err)
		}
		m := got.Multipart
		if got.MessageKind != push.KindMultipart || m.Version != 1 || m.Index != i+1 || m.Total != wantTotal ||
			m.Encoding != "json-utf8-base64url" || m.OriginalMessageKind == nil || *m.OriginalMessageKind != push.KindContent ||
			m.CreatedAt != fixedCreatedAt.UnixMilli() || m.TTLMs != 4*3600*1000 || !idPattern.MatchString(m.ID) {
			t.Errorf("chunk %d: unexpected metadata %+v", i+1, m)
		}
		if id == "" {
			id = m.ID
		} else if m.ID != id {
			t.Errorf("chunk %d: id %s differs from %s", i+1, m.ID, id)
		}
		if strings.ContainsAny(got.Chunk, "=+/") {
			t.Errorf("chunk %d is not unpadded base64url", i+1)
		}
		part, err := base64.RawURLEncoding.DecodeString(got.Chunk)
		if err != nil {
			t.Fatal(err)
		}
		if i < len(chunks)-1 && len(part) != push.DefaultMultipartChunkBytes {
			t.Errorf("chunk %d carries %d bytes, want %d", i+1, len(part), push.DefaultMultipartChunkBytes)
		}
		joined = append(joined, part...)
	}
	if !bytes.Equal(joined, payload) {
		t.Error("joined chunk bytes differ from the payload")
	}
}

func TestSplitMultipartNullKindAndEmptyPayload(t *testing.T) {
	chunks, err := push.SplitMultipart(nil, "", push.MultipartOptions{ID: "mp_x", CreatedAt: fixedCreatedAt})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messageKind":"_multipart","multipart":{"version":1,"id":"mp_x","index":1,"total":1,` +
		`"encoding":"json-utf8-base64url","originalMessageKind":null,"createdAt":1767225600000,"ttlMs":60000},"chunk":""}`
	if len(chunks) != 1 || string(chunks[0]) != want {
		t.Errorf("got %s\nwant %s", chunks, want)
	}
}

func TestSplitMultipartLimits(t *testing.T) {
	tests := []struct {
		name       string
		bytes      int
		kind       push.Kind
		chunkBytes int
		wantErr    string // substring; "" means success
		wantChunks int
	}{
		{"128 full chunks", 128 * 1800, push.KindContent, 0, "", 128},
		{"one byte over 128 chunks", 128*1800 + 1, push.KindContent, 0, "needs 129 chunks of 1800 bytes; multipart delivery allows at most 128 chunks", 0},
		{"byte limit exactly", 256000, push.KindContent, 2000, "", 128},
		{"over the byte limit", 256001, push.KindContent, 4000, "push payload is 256001 bytes; multipart delivery carries at most 256000 bytes", 0},
		{"byte limit is checked before chunks", 300000, push.KindContent, 0, "at most 256000 bytes", 0},
		{"nested multipart", 10, push.KindMultipart, 0, "cannot itself be split", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := push.SplitMultipart(bytes.Repeat([]byte("x"), tt.bytes), tt.kind, push.MultipartOptions{ChunkBytes: tt.chunkBytes})
			if tt.wantErr == "" {
				if err != nil || len(chunks) != tt.wantChunks {
					t.Fatalf("got %d chunks, %v; want %d chunks", len(chunks), err, tt.wantChunks)
				}
				return
			}
			var tooLarge *push.PayloadTooLargeError
			if !errors.As(err, &tooLarge) || !errors.Is(err, push.ErrPayloadTooLarge) {
				t.Fatalf("err = %v, want a *push.PayloadTooLargeError", err)
			}
			if tooLarge.Code() != "PAYLOAD_TOO_LARGE" || tooLarge.Bytes != tt.bytes || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %q (code %s, %d bytes), want it to say %q", err, tooLarge.Code(), tooLarge.Bytes, tt.wantErr)
			}
		})
	}
}

func TestDecodeMultipartChunk(t *testing.T) {
	const valid = `{"messageKind":"_multipart","multipart":{"version":1,"id":"mp_a","index":2,"total":3,` +
		`"encoding":"json-utf8-base64url","originalMessageKind":"content","createdAt":1767225600000,"ttlMs":60000},"chunk":"eyJh"}`
	edit := func(old, new string) string {
		if !strings.Contains(valid, old) {
			panic("no " + old)
		}
		return strings.Replace(valid, old, new, 1)
	}
	tests := []struct {
		name    string
		in      string
		wantErr error
		check   func(pushtest.MultipartPart) bool
	}{
		{"valid", valid, nil, func(p pushtest.MultipartPart) bool {
			return p.Meta.ID == "mp_a" && p.Meta.Index == 2 && p.Meta.Total == 3 && string(p.Bytes) == `{"a` &&
				*p.Meta.OriginalMessageKind == push.KindContent && p.Meta.CreatedAt == 1767225600000 && p.Meta.TTLMs == 60000
		}},
		{"integers written as floats", edit(`"index":2,"total":3`, `"index":2.0,"total":3e0`), nil,
			func(p pushtest.MultipartPart) bool { return p.Meta.Index == 2 && p.Meta.Total == 3 }},
		{"padded chunk", edit(`"eyJh"`, `"eyI="`), nil, func(p pushtest.MultipartPart) bool { return string(p.Bytes) == `{"` }},
		{"empty chunk", edit(`"eyJh"`, `""`), nil, func(p pushtest.MultipartPart) bool { return len(p.Bytes) == 0 }},
		{"null kind", edit(`"content"`, `null`), nil, func(p pushtest.MultipartPart) bool { return p.Meta.OriginalMessageKind == nil }},
		{"numeric kind is dropped", edit(`"content"`, `7`), nil, func(p pushtest.MultipartPart) bool { return p.Meta.OriginalMessageKind == nil }},
		{"createdAt not a number", edit(`1767225600000`, `"soon"`), nil, func(p pushtest.MultipartPart) bool { return p.Meta.CreatedAt == 0 }},
		{"ttlMs negative", edit(`"ttlMs":60000`, `"ttlMs":-5`), nil, func(p pushtest.MultipartPart) bool { return p.Meta.TTLMs == 0 }},
		{"ttlMs fractional", edit(`"ttlMs":60000`, `"ttlMs":1.5`), nil, func(p pushtest.MultipartPart) bool { return p.Meta.TTLMs == 0 }},
		{"total at the cap", edit(`"index":2,"total":3`, `"index":128,"total":128`), nil,
			func(p pushtest.MultipartPart) bool { return p.Meta.Total == 128 }},

		{"not JSON", `{"messageKind"`, pushtest.ErrNotMultipart, nil},
		{"array", `[1]`, pushtest.ErrNotMultipart, nil},
		{"null", `null`, pushtest.ErrNotMultipart, nil},
		{"content push", `{"messageKind":"content","message":"hi"}`, pushtest.ErrNotMultipart, nil},
		{"key case differs", edit(`"messageKind"`, `"MessageKind"`), pushtest.ErrNotMultipart, nil},
		{"multipart not an object", `{"messageKind":"_multipart","multipart":[],"chunk":""}`, pushtest.ErrNotMultipart, nil},
		{"chunk not a string", edit(`"eyJh"`, `12`), pushtest.ErrNotMultipart, nil},
		{"chunk null", edit(`"eyJh"`, `null`), pushtest.ErrNotMultipart, nil},

		{"version 2", edit(`"version":1`, `"version":2`), pushtest.ErrInvalidMultipartChunk, nil},
		{"version string", edit(`"version":1`, `"version":"1"`), pushtest.ErrInvalidMultipartChunk, nil},
		{"encoding", edit(`json-utf8-base64url`, `json-utf8-base64`), pushtest.ErrInvalidMultipartChunk, nil},
		{"empty id", edit(`"mp_a"`, `""`), pushtest.ErrInvalidMultipartChunk, nil},
		{"numeric id", edit(`"mp_a"`, `5`), pushtest.ErrInvalidMultipartChunk, nil},
		{"total zero", edit(`"index":2,"total":3`, `"index":0,"total":0`), pushtest.ErrInvalidMultipartChunk, nil},
		{"total over the cap", edit(`"index":2,"total":3`, `"index":1,"total":129`), pushtest.ErrInvalidMultipartChunk, nil},
		{"index zero", edit(`"index":2`, `"index":0`), pushtest.ErrInvalidMultipartChunk, nil},
		{"index over total", edit(`"index":2`, `"index":4`), pushtest.ErrInvalidMultipartChunk, nil},
		{"fractional index", edit(`"index":2`, `"index":1.5`), pushtest.ErrInvalidMultipartChunk, nil},
		{"index missing", edit(`"index":2,`, ``), pushtest.ErrInvalidMultipartChunk, nil},
		{"standard alphabet", edit(`"eyJh"`, `"ey+/"`), pushtest.ErrInvalidMultipartChunk, nil},
		{"not base64", edit(`"eyJh"`, `"e"`), pushtest.ErrInvalidMultipartChunk, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := pushtest.DecodeMultipartChunk([]byte(tt.in), 0)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(p) {
				t.Errorf("unexpected part %+v (%q)", p.Meta, p.Bytes)
			}
		})
	}
}

// decodeAll decodes chunk payloads, failing the test on any error.
func decodeAll(t testing.TB, chunks [][]byte) []pushtest.MultipartPart {
	t.Helper()
	parts := make([]pushtest.MultipartPart, len(chunks))
	for i, c := range chunks {
		p, err := pushtest.DecodeMultipartChunk(c, 0)
		if err != nil {
			t.Fatalf("chunk %d: %v", i+1, err)
		}
		parts[i] = p
	}
	return parts
}

func TestReassemblerRules(t *testing.T) {
	now := fixedCreatedAt
	clock := func() time.Time { return now }
	payload := contentJSON(3000)
	chunks, err := push.SplitMultipart(payload, push.KindContent, push.MultipartOptions{CreatedAt: fixedCreatedAt})
	if err != nil {
		t.Fatal(err)
	}
	parts := decodeAll(t, chunks)
	if len(parts) < 3 {
		t.Fatalf("want at least 3 chunks, got %d", len(parts))
	}

	t.Run("reverse order, duplicate, redelivery after completion", func(t *testing.T) {
		r := &pushtest.MultipartReassembler{Now: clock}
		for i := len(parts) - 1; i > 0; i-- {
			if out, err := r.Add(parts[i]); out != nil || err != nil {
				t.Fatalf("chunk %d: %q, %v", i+1, out, err)
			}
		}
		if _, err := r.Add(parts[1]); !errors.Is(err, pushtest.ErrMultipartDuplicate) {
			t.Fatalf("duplicate chunk: %v", err)
		}
		out, err := r.Add(parts[0])
		if err != nil || !bytes.Equal(out, payload) {
			t.Fatalf("completion: %v, equal=%v", err, bytes.Equal(out, payload))
		}
		if _, err := r.Add(parts[0]); !errors.Is(err, pushtest.ErrMultipartDuplicate) {
			t.Fatalf("redelivered chunk after completion: %v", err)
		}
	})
	t.Run("expired chunk", func(t *testing.T) {
		late := now.Add(push.DefaultMultipartTTL)
		r := &pushtest.MultipartReassembler{Now: func() time.Time { return late }}
		if _, err := r.Add(parts[0]); !errors.Is(err, pushtest.ErrMultipartExpired) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("receiver cap below the chunk ttl", func(t *testing.T) {
		long := decodeAll(t, mustSplit(t, payload, push.MultipartOptions{CreatedAt: fixedCreatedAt, TTL: time.Hour}))
		at := now.Add(2 * time.Minute)
		capped := &pushtest.MultipartReassembler{Now: func() time.Time { return at }} // cap 60 s
		if _, err := capped.Add(long[0]); !errors.Is(err, pushtest.ErrMultipartExpired) {
			t.Fatalf("capped receiver: %v", err)
		}
		longer := &pushtest.MultipartReassembler{Now: func() time.Time { return at }, TTL: 24 * time.Hour}
		if _, err := longer.Add(long[0]); err != nil {
			t.Fatalf("receiver with a long cap: %v", err)
		}
	})
	t.Run("pending set expires between chunks", func(t *testing.T) {
		at := now
		r := &pushtest.MultipartReassembler{Now: func() time.Time { return at }}
		if _, err := r.Add(parts[0]); err != nil {
			t.Fatal(err)
		}
		at = now.Add(2 * push.DefaultMultipartTTL)
		fresh := decodeAll(t, mustSplit(t, payload, push.MultipartOptions{ID: parts[0].Meta.ID, CreatedAt: at}))
		for _, p := range fresh[:len(fresh)-1] {
			if out, err := r.Add(p); out != nil || err != nil {
				t.Fatalf("restart of an expired set: %q, %v", out, err)
			}
		}
		if out, err := r.Add(fresh[len(fresh)-1]); err != nil || !bytes.Equal(out, payload) {
			t.Fatalf("restarted set did not complete: %v", err)
		}
	})
	t.Run("total changes", func(t *testing.T) {
		r := &pushtest.MultipartReassembler{Now: clock}
		if _, err := r.Add(parts[0]); err != nil {
			t.Fatal(err)
		}
		other := parts[1]
		other.Meta.Total++
		if _, err := r.Add(other); !errors.Is(err, pushtest.ErrMultipartConflict) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("byte cap", func(t *testing.T) {
		r := &pushtest.MultipartReassembler{Now: clock, MaxTotalBytes: push.DefaultMultipartChunkBytes + 1}
		if _, err := r.Add(parts[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Add(parts[1]); !errors.Is(err, pushtest.ErrMultipartOverflow) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("not JSON after reassembly", func(t *testing.T) {
		r := &pushtest.MultipartReassembler{Now: clock}
		bad := decodeAll(t, mustSplit(t, []byte(`{"broken`), push.MultipartOptions{CreatedAt: fixedCreatedAt}))
		if _, err := r.Add(bad[0]); !errors.Is(err, pushtest.ErrInvalidMultipartChunk) {
			t.Fatalf("err = %v", err)
		}
	})
}

func mustSplit(t testing.TB, payload []byte, opts push.MultipartOptions) [][]byte {
	t.Helper()
	chunks, err := push.SplitMultipart(payload, push.KindContent, opts)
	if err != nil {
		t.Fatal(err)
	}
	return chunks
}

// TestSplitReassembleProperty: for random payloads, chunk sizes and arrival
// orders, reassembly gives back the exact bytes.
func TestSplitReassembleProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		payload := contentJSON(rng.IntN(20000))
		chunkBytes := 1 + rng.IntN(3000)
		if (len(payload)+chunkBytes-1)/chunkBytes > push.DefaultMultipartMaxChunks {
			chunkBytes = (len(payload) + push.DefaultMultipartMaxChunks - 1) / push.DefaultMultipartMaxChunks
		}
		chunks := mustSplit(t, payload, push.MultipartOptions{ChunkBytes: chunkBytes, CreatedAt: fixedCreatedAt})
		parts := decodeAll(t, chunks)
		rng.Shuffle(len(parts), func(a, b int) { parts[a], parts[b] = parts[b], parts[a] })
		r := &pushtest.MultipartReassembler{Now: func() time.Time { return fixedCreatedAt }}
		var out []byte
		for j, p := range parts {
			got, err := r.Add(p)
			if err != nil {
				t.Fatalf("case %d chunk %d: %v", i, j, err)
			}
			if (got != nil) != (j == len(parts)-1) {
				t.Fatalf("case %d: completion after %d of %d chunks", i, j+1, len(parts))
			}
			out = got
		}
		if !bytes.Equal(out, payload) {
			t.Fatalf("case %d: %d bytes in %d chunks of %d did not round-trip", i, len(payload), len(chunks), chunkBytes)
		}
	}
}

func FuzzDecodeMultipartChunk(f *testing.F) {
	for _, c := range mustSplit(f, contentJSON(700), push.MultipartOptions{ChunkBytes: 500, CreatedAt: fixedCreatedAt}) {
		f.Add(c)
	}
	f.Add([]byte(`{"messageKind":"_multipart","multipart":{"version":1.0,"id":"x","index":1,"total":1,"encoding":"json-utf8-base64url","createdAt":1e30,"ttlMs":1e30},"chunk":"e30="}`))
	f.Add([]byte(`{"messageKind":"_multipart","multipart":{},"chunk":""}`))
	f.Add([]byte(`{"messageKind":"content"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := pushtest.DecodeMultipartChunk(data, 0)
		if err != nil {
			if !errors.Is(err, pushtest.ErrNotMultipart) && !errors.Is(err, pushtest.ErrInvalidMultipartChunk) {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		m := p.Meta
		if m.Version != 1 || m.Encoding != push.MultipartEncoding || m.ID == "" ||
			m.Total < 1 || m.Total > push.DefaultMultipartMaxChunks || m.Index < 1 || m.Index > m.Total || m.TTLMs < 0 {
			t.Fatalf("accepted chunk breaks the rules: %+v", m)
		}
		// What we accept, we can write back and read again unchanged.
		again, err := push.MarshalNoEscape(push.MultipartChunk{MessageKind: push.KindMultipart, Multipart: m,
			Chunk: base64.RawURLEncoding.EncodeToString(p.Bytes)})
		if err != nil {
			t.Fatal(err)
		}
		q, err := pushtest.DecodeMultipartChunk(again, 0)
		if err != nil || !bytes.Equal(q.Bytes, p.Bytes) || q.Meta.ID != m.ID || q.Meta.Index != m.Index {
			t.Fatalf("re-encoded chunk does not decode the same: %v", err)
		}
		r := &pushtest.MultipartReassembler{}
		_, _ = r.Add(p) // must not panic whatever the metadata
	})
}

func FuzzMultipartRoundTrip(f *testing.F) {
	f.Add("hello", uint16(1))
	f.Add(strings.Repeat("寿", 2000), uint16(1800))
	f.Add("\xff\xfe invalid utf-8", uint16(3))
	f.Fuzz(func(t *testing.T, message string, chunkBytes uint16) {
		payload, err := push.MarshalNoEscape(map[string]string{"messageKind": "content", "message": message})
		if err != nil {
			t.Skip()
		}
		size := max(int(chunkBytes), (len(payload)+push.DefaultMultipartMaxChunks-1)/push.DefaultMultipartMaxChunks, 1)
		chunks, err := push.SplitMultipart(payload, push.KindContent, push.MultipartOptions{ChunkBytes: size})
		if err != nil {
			if len(payload) > push.DefaultMultipartMaxTotalBytes && errors.Is(err, push.ErrPayloadTooLarge) {
				return
			}
			t.Fatal(err)
		}
		r := &pushtest.MultipartReassembler{}
		var out []byte
		for _, p := range decodeAll(t, chunks) {
			if out, err = r.Add(p); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out, payload) {
			t.Fatalf("round trip changed %d bytes", len(payload))
		}
	})
}
