package api

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
	"amsg/store/usercrypt"
)

// Issue 22 §2: GET /client-state is made from the store a value at a time,
// and its bytes are what the answer built whole was: the outer envelope as
// writeEncrypted marshals it, and a plaintext that is marshalJSON of the
// namespace's entries, escaping included (HTML characters kept, U+2028
// escaped, control characters, characters of 2 to 4 bytes, chunked values,
// more keys than a page).
func TestGetClientStateStreamsTheAnswerBuiltWhole(t *testing.T) {
	st := storetest.Open(t, store.Config{})
	s := newTestServer(t, Config{}, Deps{Store: st})
	values := []string{"<a href='x'>&amp;</a>", "line\u2028sep\u2029", "\x00\x01\t\n\"\\", "é记😀", strings.Repeat("x记😀é\x07", 25_000), ""}
	for batch := range 2 {
		var es []stateEntry
		for i := range 100 {
			es = append(es, stateEntry{Namespace: "ns<&>", Key: fmt.Sprintf("k%d-%d\u2028", batch, i), Value: values[i%len(values)], UpdatedAt: int64(1 + i)})
		}
		if got := putState(t, s, testUserID, entries(es...)); got.status != http.StatusOK {
			t.Fatalf("put: %d %s", got.status, got.body)
		}
	}
	for _, namespace := range []string{"ns<&>", "empty"} {
		got := send(s, http.MethodGet, "/api/v1/client-state?namespace="+strings.ReplaceAll(namespace, "&", "%26"), "", map[string]string{"X-User-Id": testUserID})
		var outer struct {
			Success   bool               `json:"success"`
			Encrypted bool               `json:"encrypted"`
			Version   int                `json:"version"`
			Data      usercrypt.Envelope `json:"data"`
		}
		if err := json.Unmarshal([]byte(got.body), &outer); err != nil {
			t.Fatalf("%s: %d %.200s: %v", namespace, got.status, got.body, err)
		}
		if whole, _ := marshalJSON(outer); string(whole) != got.body {
			t.Errorf("%s: the envelope is not the one writeEncrypted marshals", namespace)
		}
		stored, err := st.ClientState(t.Context(), testUserID, namespace)
		if err != nil {
			t.Fatal(err)
		}
		type entryJSON struct {
			Namespace string `json:"namespace"`
			Key       string `json:"key"`
			Value     string `json:"value"`
			UpdatedAt int64  `json:"updatedAt"`
		}
		built := []entryJSON{}
		for _, e := range stored {
			built = append(built, entryJSON{e.Namespace, e.Key, e.Value, e.UpdatedAt})
		}
		want, err := marshalJSON(struct {
			Namespace string      `json:"namespace"`
			Entries   []entryJSON `json:"entries"`
		}{namespace, built})
		if err != nil {
			t.Fatal(err)
		}
		if plaintext := openResponse(t, testUserID, got) + "\n"; plaintext != string(want) {
			t.Errorf("%s: the plaintext (%d bytes) is not the answer built whole (%d bytes, %d entries)", namespace, len(plaintext), len(want), len(built))
		}
	}
}

// stallRead sends GET /client-state on a connection of its own and reads
// only the status line, as a reader that then stops reading.
func stallRead(t *testing.T, addr, userID string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /api/v1/client-state?namespace=ns HTTP/1.1\r\nHost: amsg\r\nX-User-Id: %s\r\nConnection: close\r\n\r\n", userID)
	r := bufio.NewReader(conn)
	status, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("the stalled read: %q", status)
	}
	return conn, r
}

// putBig stores a namespace "ns" of userID bigger than the sockets between
// a stalled reader and the server can hold.
func putBig(t *testing.T, s http.Handler, userID string) {
	t.Helper()
	for i := range 4 {
		value := strings.Repeat(fmt.Sprint(i), 4<<20)
		if got := putState(t, s, userID, entries(stateEntry{Namespace: "ns", Key: fmt.Sprint("k", i), Value: value, UpdatedAt: 1})); got.status != http.StatusOK {
			t.Fatalf("put: %d %s", got.status, got.body)
		}
	}
}

// Answers in flight share a memory budget counted in answers' working sets:
// with room for one, a second read while the first stalls gets 429, and
// once the first reader has read its answer the next read fits.
func TestClientStateReadsShareAMemoryBudget(t *testing.T) {
	s := newTestServer(t, Config{Limits: Limits{ClientStateReadBudget: streamedAnswerBytes, WriteTimeout: 10 * time.Minute, RateLimitOff: true}}, Deps{})
	putBig(t, s, testUserID)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	stalled, _ := stallRead(t, strings.TrimPrefix(srv.URL, "http://"), testUserID)
	get := func() int {
		got := send(s, http.MethodGet, "/api/v1/client-state?namespace=ns", "", map[string]string{"X-User-Id": testUserID})
		return got.status
	}
	if status := get(); status != http.StatusTooManyRequests {
		t.Fatalf("a second read while one stalls: %d", status)
	}
	if _, err := io.Copy(io.Discard, stalled); err != nil {
		t.Fatal(err)
	}
	if status := get(); status != http.StatusOK {
		t.Fatalf("a read once the first was read: %d", status)
	}
}

// A namespace that changes between the pass that learns the tag and the
// pass that sends the ciphertext gets its answer cut off before its closing
// bytes: the client sees a broken answer, never a whole one that does not
// open.
func TestClientStateAnswerChangedWhileSentIsCutOff(t *testing.T) {
	s := newTestServer(t, Config{Limits: Limits{WriteTimeout: 10 * time.Minute, RateLimitOff: true}}, Deps{})
	putBig(t, s, testUserID)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	_, r := stallRead(t, strings.TrimPrefix(srv.URL, "http://"), testUserID)
	// The sender is blocked in the first value (16 MiB do not fit the
	// sockets); the last one changes under it.
	if got := putState(t, s, testUserID, entries(stateEntry{Namespace: "ns", Key: "k3", Value: "changed", UpdatedAt: 2})); got.status != http.StatusOK {
		t.Fatalf("put: %d %s", got.status, got.body)
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader("HTTP/1.1 200 OK\r\n"), r)), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the changed answer ended with %v after %d bytes, want it cut off", err, len(body))
	}
	if strings.HasSuffix(string(body), `"}}`+"\n") {
		t.Fatal("the changed answer was sent whole")
	}
	// The next read is whole and carries the change.
	if plaintext := getState(t, s, testUserID, "ns"); !strings.Contains(plaintext, `"value":"changed"`) {
		t.Fatal("the read after the change does not carry it")
	}
}
