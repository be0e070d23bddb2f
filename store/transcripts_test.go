package store_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"amsg/store"
	"amsg/store/storetest"
	"amsg/store/usercrypt"
)

func entry(id, typ, body string, usage store.TokenUsage, pushes ...string) store.TranscriptEntry {
	return store.TranscriptEntry{ID: id, At: time.UnixMilli(1_772_352_000_000), Type: typ, Usage: usage,
		Pushes: pushes, Body: json.RawMessage(body)}
}

func TestAppendTranscriptAndRead(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()

	head, err := st.AppendTranscript(ctx, store.TranscriptAppend{
		Owner: alice, SessionID: "sess_1", After: 0, Settings: json.RawMessage(`{"tools":[1]}`),
		Entries: []store.TranscriptEntry{
			entry("01A", "input", `{"text":"what time is it?"}`, store.TokenUsage{}),
			entry("01B", "tool-calls", `{"calls":[]}`, store.TokenUsage{Input: 10, Cached: 4, Output: 7, Reasoning: 3}, "msg_r", "msg_t"),
		},
	})
	if err != nil || head != (store.TranscriptHead{LastSeq: 2, Usage: store.TokenUsage{Input: 10, Cached: 4, Output: 7, Reasoning: 3}}) {
		t.Fatalf("first append = %+v, %v; want 2 and its usage", head, err)
	}
	clk.Add(time.Minute)
	head, err = st.AppendTranscript(ctx, store.TranscriptAppend{
		Owner: alice, SessionID: "sess_1", After: 2,
		Entries: []store.TranscriptEntry{entry("01C", "reply", `{"text":"noon"}`, store.TokenUsage{Input: 20, Output: 5}, "msg_c")},
	})
	if err != nil || head.LastSeq != 3 || head.Usage.Total() != 42 {
		t.Fatalf("second append = %+v, %v; want 3 and the sum", head, err)
	}

	tr, err := st.Transcript(ctx, alice, "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	if string(tr.Settings) != `{"tools":[1]}` {
		t.Errorf("settings = %s; an append without settings must keep them", tr.Settings)
	}
	if tr.LastSeq != 3 || tr.Usage != (store.TokenUsage{Input: 30, Cached: 4, Output: 12, Reasoning: 3}) || tr.Usage.Total() != 42 {
		t.Errorf("session = last %d usage %+v", tr.LastSeq, tr.Usage)
	}
	if !tr.CreatedAt.Equal(newClock().now) || !tr.UpdatedAt.Equal(clk.now) {
		t.Errorf("created %v updated %v", tr.CreatedAt, tr.UpdatedAt)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, strings.Join([]string{e.ID, e.Type, string(e.Body), strings.Join(e.Pushes, "+")}, " "))
	}
	want := []string{`01A input {"text":"what time is it?"} `, `01B tool-calls {"calls":[]} msg_r+msg_t`, `01C reply {"text":"noon"} msg_c`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if e := tr.Entries[1]; e.Seq != 2 || e.Usage.Cached != 4 || !e.At.Equal(time.UnixMilli(1_772_352_000_000)) {
		t.Errorf("entry 2 = %+v", e)
	}

	// Settings given later replace the stored ones.
	if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: alice, SessionID: "sess_1", After: store.AnySeq,
		Settings: json.RawMessage(`{"tools":[2]}`)}); err != nil {
		t.Fatal(err)
	}
	if tr, _ := st.Transcript(ctx, alice, "sess_1"); string(tr.Settings) != `{"tools":[2]}` || tr.LastSeq != 3 {
		t.Errorf("after a settings-only append: settings %s, last %d", tr.Settings, tr.LastSeq)
	}
}

func TestTranscriptsBelongToTheirOwner(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	for _, owner := range []string{alice, bob} {
		if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: owner, SessionID: "chat", After: 0,
			Entries: []store.TranscriptEntry{entry("01"+owner[:2], "input", `{"text":"`+owner+`"}`, store.TokenUsage{})}}); err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
	}
	for _, owner := range []string{alice, bob} {
		tr, err := st.Transcript(ctx, owner, "chat")
		if err != nil || len(tr.Entries) != 1 || !strings.Contains(string(tr.Entries[0].Body), owner) {
			t.Errorf("%s reads %+v, %v; want its own single entry", owner, tr, err)
		}
	}
	if _, err := st.Transcript(ctx, alice, "other"); !errors.Is(err, store.ErrTranscriptNotFound) {
		t.Errorf("unknown session: %v, want ErrTranscriptNotFound", err)
	}
}

func TestAppendTranscriptComparesTheSequenceNumber(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	appendAfter := func(after int64) error {
		_, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: alice, SessionID: "s", After: after,
			Entries: []store.TranscriptEntry{entry("01X", "tool-results", `{}`, store.TokenUsage{})}})
		return err
	}
	if err := appendAfter(3); !errors.Is(err, store.ErrConcurrentAppend) {
		t.Errorf("append after 3 to a new session: %v, want ErrConcurrentAppend", err)
	}
	if _, err := st.Transcript(ctx, alice, "s"); !errors.Is(err, store.ErrTranscriptNotFound) {
		t.Errorf("a refused append left a session behind: %v", err)
	}
	if err := appendAfter(0); err != nil {
		t.Fatal(err)
	}

	// Many appends that all read sequence number 1: exactly one wins.
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = appendAfter(1) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConcurrentAppend):
			t.Errorf("unexpected error %v", err)
		}
	}
	if tr, _ := st.Transcript(ctx, alice, "s"); won != 1 || tr.LastSeq != 2 || len(tr.Entries) != 2 {
		t.Errorf("%d of %d appends won, last seq %d; want exactly one", won, n, tr.LastSeq)
	}
}

func TestTranscriptsAreSealedAtRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, store.Config{Path: path})
	const secret = "my bank password is hunter2"
	if _, err := st.AppendTranscript(t.Context(), store.TranscriptAppend{Owner: alice, SessionID: "s", After: 0,
		Settings: json.RawMessage(`{"tools":"` + secret + `"}`),
		Entries:  []store.TranscriptEntry{entry("01A", "input", `{"text":"`+secret+`"}`, store.TokenUsage{})}}); err != nil {
		t.Fatal(err)
	}
	var settings, body string
	if err := rawDB(t, path).QueryRow(`SELECT s.settings, e.body FROM transcript_sessions s JOIN transcript_entries e ON e.session = s.id`).
		Scan(&settings, &body); err != nil {
		t.Fatal(err)
	}
	for _, sealed := range []string{settings, body} {
		if !atRestShape.MatchString(sealed) || strings.Contains(sealed, "hunter2") {
			t.Errorf("stored %q is not sealed", sealed)
		}
	}
	plaintext, err := userKey(t, alice).OpenAtRest(body)
	if err != nil || !strings.Contains(string(plaintext), secret) {
		t.Errorf("the user key opens the body to %q, %v", plaintext, err)
	}
	if _, err := userKey(t, bob).OpenAtRest(body); !errors.Is(err, usercrypt.ErrDecrypt) {
		t.Errorf("another user's key opened the body: %v", err)
	}
}

func TestPruneTranscripts(t *testing.T) {
	clk := newClock()
	st := storetest.Open(t, store.Config{Now: clk.Now})
	ctx := t.Context()
	at := func(d time.Duration, typ string) store.TranscriptEntry {
		return store.TranscriptEntry{ID: typ, At: clk.now.Add(d), Type: typ, Body: json.RawMessage(`{}`)}
	}
	// "old" was last written 40 days ago; "live" started then but is still in use.
	if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: alice, SessionID: "old", After: store.AnySeq,
		Entries: []store.TranscriptEntry{at(0, "input"), at(0, "reply")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: alice, SessionID: "live", After: store.AnySeq,
		Entries: []store.TranscriptEntry{at(0, "input")}}); err != nil {
		t.Fatal(err)
	}
	clk.Add(40 * 24 * time.Hour)
	if _, err := st.AppendTranscript(ctx, store.TranscriptAppend{Owner: alice, SessionID: "live", After: store.AnySeq,
		Entries: []store.TranscriptEntry{at(0, "reply")}}); err != nil {
		t.Fatal(err)
	}
	n, err := st.PruneTranscripts(ctx, clk.now.Add(-30*24*time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("PruneTranscripts = %d, %v; want the 3 old entries", n, err)
	}
	if _, err := st.Transcript(ctx, alice, "old"); !errors.Is(err, store.ErrTranscriptNotFound) {
		t.Errorf("old session survived: %v", err)
	}
	tr, err := st.Transcript(ctx, alice, "live")
	if err != nil || len(tr.Entries) != 1 || tr.Entries[0].Type != "reply" || tr.LastSeq != 2 {
		t.Errorf("live session = %+v, %v; want its recent entry, sequence kept", tr, err)
	}
}
