package api

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"amsg/store"
)

// TestGzipRequestBodies sends gzipped encrypted bodies to routes of several
// features: they are inflated; another encoding is 415 and corrupt gzip 400,
// and neither changes what is stored.
func TestGzipRequestBodies(t *testing.T) {
	onBothBackends(t, store.Config{}, func(t *testing.T, st *store.Store) {
		s := newTestServer(t, Config{MaxClientStateBodyBytes: 64 << 10}, Deps{Store: st})
		key := browserUserKey(testUserID)
		gz := func(h map[string]string, encoding string) map[string]string {
			h["Content-Encoding"] = encoding
			return h
		}
		put := browserEncrypt(t, key, entries(stateEntry{Namespace: "ns", Key: "k", Value: "zipped", UpdatedAt: 1}))
		wantBody(t, "PUT /client-state gzipped", send(s, http.MethodPut, "/api/v1/client-state", gzipped(t, put), gz(encryptedHeaders(testUserID), "gzip")),
			200, `{"success":true,"data":{"upserted":1,"skipped":0}}`)
		wantBody(t, "DELETE /outbox gzipped", send(s, http.MethodDelete, "/api/v1/outbox", gzipped(t, browserEncryptRaw(t, key, `{"all":true}`)), gz(encryptedHeaders(testUserID), " GZIP ")),
			200, `{"success":true,"data":{"deleted":0}}`)

		overwrite := browserEncrypt(t, key, entries(stateEntry{Namespace: "ns", Key: "k", Value: "overwritten", UpdatedAt: 2}))
		bomb := gzipped(t, `{"entries":[{"value":"`+strings.Repeat("A", 64<<20)+`"}]}`) // 64 MiB from about 65 KB
		for _, c := range []struct {
			name, encoding, body string
			status               int
			want                 string
		}{
			{"br", "br", overwrite, 415, `{"success":false,"error":{"code":"UNSUPPORTED_CONTENT_ENCODING","message":"不支持的 Content-Encoding（只支持 gzip）"}}`},
			{"deflate", "deflate", overwrite, 415, `{"success":false,"error":{"code":"UNSUPPORTED_CONTENT_ENCODING","message":"不支持的 Content-Encoding（只支持 gzip）"}}`},
			{"two layers", "gzip, gzip", gzipped(t, gzipped(t, overwrite)), 415, `{"success":false,"error":{"code":"UNSUPPORTED_CONTENT_ENCODING","message":"不支持的 Content-Encoding（只支持 gzip）"}}`},
			{"not gzip", "gzip", overwrite, 400, `{"success":false,"error":{"code":"INVALID_CONTENT_ENCODING","message":"请求体不是有效的 gzip 数据"}}`},
			{"truncated", "gzip", gzipped(t, overwrite)[:40], 400, `{"success":false,"error":{"code":"INVALID_CONTENT_ENCODING","message":"请求体不是有效的 gzip 数据"}}`},
			{"bomb", "gzip", bomb[:min(len(bomb), 60<<10)], 413, `{"success":false,"error":{"code":"PAYLOAD_TOO_LARGE","message":"请求体超过 65536 字节上限","details":{"maxBytes":65536}}}`},
		} {
			wantBody(t, c.name, send(s, http.MethodPut, "/api/v1/client-state", c.body, gz(encryptedHeaders(testUserID), c.encoding)), c.status, c.want)
		}
		if got := getState(t, s, testUserID, "ns"); got != `{"namespace":"ns","entries":[{"namespace":"ns","key":"k","value":"zipped","updatedAt":1}]}` {
			t.Errorf("after the refused bodies: %s", got)
		}
		// A request without a body is not refused for what it claims.
		if got := send(s, http.MethodGet, "/api/v1/client-state?namespace=ns", "", gz(map[string]string{"X-User-Id": testUserID}, "br")); got.status != 200 {
			t.Errorf("GET with Content-Encoding: br = %d %s", got.status, got.body)
		}
	})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestGzipBombInflatesAtMostTheLimit reads a 64 MiB bomb under a 64 KiB
// limit: 413, with no more than the limit (plus the one byte that shows it
// is over) inflated.
func TestGzipBombInflatesAtMostTheLimit(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(bytes.Repeat([]byte("A"), 64<<20))
	_ = zw.Close()
	inflated := &countingReader{r: &gunzipBody{src: io.NopCloser(&b)}}
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	req.Body = io.NopCloser(inflated)
	const limit = 64 << 10
	_, err := readBody(httptest.NewRecorder(), req, limit)
	if e, ok := err.(*Error); !ok || e.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("err = %v, want 413", err)
	}
	if inflated.n > limit+1 {
		t.Errorf("inflated %d bytes for a limit of %d", inflated.n, limit)
	}
}

// FuzzGzipContentEncoding sends arbitrary bytes as a gzipped PUT
// /client-state body: the answer is one of the standard's, never a 500.
func FuzzGzipContentEncoding(f *testing.F) {
	f.Add([]byte(gzipped(f, `{"iv":"","authTag":"","encryptedData":""}`)))
	f.Add([]byte(gzipped(f, strings.Repeat(" ", 1<<20))))
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"))
	f.Add([]byte(gzipped(f, "{}") + "garbage"))
	s := newTestServer(f, Config{MaxClientStateBodyBytes: 64 << 10, Limits: Limits{RateLimitOff: true}}, Deps{})
	headers := encryptedHeaders(testUserID)
	headers["Content-Encoding"] = "gzip"
	f.Fuzz(func(t *testing.T, body []byte) {
		got := send(s, http.MethodPut, "/api/v1/client-state", string(body), headers)
		if got.status != 200 && got.status != 400 && got.status != 413 {
			t.Fatalf("%q: %d %s", body, got.status, got.body)
		}
	})
}
