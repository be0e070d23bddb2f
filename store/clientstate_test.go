package store_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"amsg/store"
	"amsg/store/storetest"
)

const (
	chunkedRoot = "\x1famsg-chunked\x1fv1\x1f"
	chunkNS     = "\x1famsg-chunks\x1f"
)

// openWithPath opens a store whose database file the test can also read raw.
func openWithPath(t *testing.T, cfg store.Config) (*store.Store, *sql.DB) {
	t.Helper()
	cfg.Path = filepath.Join(t.TempDir(), "amsg.db")
	st := storetest.Open(t, cfg)
	return st, rawDB(t, cfg.Path)
}

type rawStateRow struct {
	namespace, key, value string
	updatedAt             int64
}

func rawStateRows(t *testing.T, db *sql.DB, userID string) []rawStateRow {
	t.Helper()
	rows, err := db.Query(`SELECT namespace, key, value, updated_at FROM client_state WHERE user_id = ? ORDER BY namespace, key`, userID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []rawStateRow
	for rows.Next() {
		var r rawStateRow
		if err := rows.Scan(&r.namespace, &r.key, &r.value, &r.updatedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func putState(t *testing.T, st *store.Store, userID string, entries ...store.ClientStateEntry) store.ClientStatePut {
	t.Helper()
	put, err := st.PutClientState(t.Context(), userID, entries)
	if err != nil {
		t.Fatal(err)
	}
	return put
}

func getState(t *testing.T, st *store.Store, userID, namespace string) []store.ClientStateEntry {
	t.Helper()
	entries, err := st.ClientState(t.Context(), userID, namespace)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestCheckStateNames(t *testing.T) {
	for _, c := range []struct {
		name string
		max  int
		want error
	}{
		{"ok", 128, nil},
		{"", 128, store.ErrStateNameBlank},
		{" \t\n", 128, store.ErrStateNameBlank},
		{"\u3000\ufeff\u00a0\u2028", 128, store.ErrStateNameBlank}, // JavaScript's trim, not Go's TrimSpace
		{"\u0085", 128, nil},                                       // NEL: Go's TrimSpace removes it, JavaScript's trim keeps it
		{strings.Repeat("a", 128), 128, nil},
		{strings.Repeat("a", 129), 128, store.ErrStateNameTooLong},
		{strings.Repeat("记", 128), 128, nil}, // 384 bytes, 128 code units
		{strings.Repeat("😀", 64), 128, nil},  // surrogate pairs: 128 code units
		{strings.Repeat("😀", 64) + "a", 128, store.ErrStateNameTooLong},
		{"a\x1fb", 128, store.ErrStateNameReserved},
		{"a\x00", 128, store.ErrStateNameReserved},
		{"tab\tinside", 128, store.ErrStateNameReserved},
		{"a\x7f", 128, nil}, // DEL is not in the reserved range
		{strings.Repeat("k", 256), 256, nil},
		{strings.Repeat("k", 257), 256, store.ErrStateNameTooLong},
		{strings.Repeat("k", 200) + "\x01", 256, store.ErrStateNameReserved},
	} {
		check := store.CheckStateNamespace
		if c.max == 256 {
			check = store.CheckStateKey
		}
		if got := check(c.name); !errors.Is(got, c.want) || (c.want == nil && got != nil) {
			t.Errorf("check(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestClientStateRoundTripAndSealing(t *testing.T) {
	st, db := openWithPath(t, store.Config{})
	put := putState(t, st, alice,
		store.ClientStateEntry{Namespace: "chat", Key: "b", Value: "second", UpdatedAt: 20},
		store.ClientStateEntry{Namespace: "chat", Key: "a", Value: "first <&>", UpdatedAt: 10},
		store.ClientStateEntry{Namespace: "other", Key: "a", Value: "elsewhere", UpdatedAt: 30},
		store.ClientStateEntry{Namespace: "chat", Key: "empty", Value: "", UpdatedAt: 40},
	)
	if put.Upserted != 4 || len(put.Skipped) != 0 {
		t.Errorf("put = %+v, want 4 upserted", put)
	}
	got := getState(t, st, alice, "chat")
	want := []store.ClientStateEntry{
		{Namespace: "chat", Key: "a", Value: "first <&>", UpdatedAt: 10},
		{Namespace: "chat", Key: "b", Value: "second", UpdatedAt: 20},
		{Namespace: "chat", Key: "empty", Value: "", UpdatedAt: 40},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ClientState(chat) = %+v, want %+v", got, want)
	}
	if got := getState(t, st, bob, "chat"); len(got) != 0 {
		t.Errorf("bob reads alice's state: %+v", got)
	}
	key := userKey(t, alice)
	for _, r := range rawStateRows(t, db, alice) {
		plaintext, err := key.OpenAtRest(r.value)
		if err != nil || (len(plaintext) > 0 && strings.Contains(r.value, string(plaintext))) {
			t.Errorf("row %s/%s = %q: not sealed with the user key (%v)", r.namespace, r.key, r.value, err)
		}
	}
}

// TestClientStateChunksLargeValues writes values around the slice size made
// of 1-, 3- and 4-byte characters and checks the raw rows: one sealed row up
// to the limit, above it a plaintext root marker and sealed slices cut on
// code points, each at most StateSliceBytes.
func TestClientStateChunksLargeValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		value  string
		slices int // 0: stored as one row
	}{
		{"exactly one row", strings.Repeat("a", store.StateSliceBytes), 0},
		{"one byte over", strings.Repeat("a", store.StateSliceBytes+1), 2},
		{"3-byte characters across the cut", "a" + strings.Repeat("记", 100_000), 2},
		{"4-byte characters across the cut", "ab" + strings.Repeat("😀", 120_000), 3},
		{"1 MiB mixed", strings.Repeat("x记😀é", 1<<20/10), 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, db := openWithPath(t, store.Config{})
			putState(t, st, alice, store.ClientStateEntry{Namespace: "ns", Key: "k", Value: c.value, UpdatedAt: 7})
			rows := rawStateRows(t, db, alice)
			key := userKey(t, alice)
			if c.slices == 0 {
				if len(rows) != 1 || !atRestShape.MatchString(rows[0].value) {
					t.Fatalf("rows = %d (%v), want one sealed row", len(rows), rowNames(rows))
				}
			} else {
				if len(rows) != c.slices+1 {
					t.Fatalf("rows = %v, want a root and %d slices", rowNames(rows), c.slices)
				}
				// Ordered by namespace: the slices' "\x1f…" namespace sorts first.
				root := rows[len(rows)-1]
				if root.namespace != "ns" || root.key != "k" || root.value != chunkedRoot+fmt.Sprint(c.slices) || root.updatedAt != 7 {
					t.Errorf("root row = %+v, want the plaintext marker for %d slices", root, c.slices)
				}
				var joined strings.Builder
				for i, r := range rows[:c.slices] {
					if r.namespace != chunkNS+"ns" || r.key != "k\x1f"+fmt.Sprint(i) || r.updatedAt != 7 || !atRestShape.MatchString(r.value) {
						t.Errorf("slice row %d = %q/%q updated %d, want sealed k\\x1f%d in the chunk namespace", i, r.namespace, r.key, r.updatedAt, i)
					}
					plaintext, err := key.OpenAtRest(r.value)
					if err != nil || len(plaintext) > store.StateSliceBytes || !utf8.Valid(plaintext) {
						t.Errorf("slice %d: %d bytes, valid UTF-8 %v, err %v", i, len(plaintext), utf8.Valid(plaintext), err)
					}
					joined.Write(plaintext)
				}
				if joined.String() != c.value {
					t.Errorf("slices do not join back to the value")
				}
			}
			got := getState(t, st, alice, "ns")
			if len(got) != 1 || got[0].Value != c.value || got[0].UpdatedAt != 7 {
				t.Errorf("read back %d entries, value equal %v", len(got), len(got) == 1 && got[0].Value == c.value)
			}
		})
	}
}

func rowNames(rows []rawStateRow) []string {
	var names []string
	for _, r := range rows {
		names = append(names, fmt.Sprintf("%q/%q", r.namespace, r.key))
	}
	return names
}

func TestClientStateLastWriteWins(t *testing.T) {
	st := storetest.New(t)
	entry := func(value string, at int64) store.ClientStateEntry {
		return store.ClientStateEntry{Namespace: "ns", Key: "k", Value: value, UpdatedAt: at}
	}
	putState(t, st, alice, entry("v100", 100))
	put := putState(t, st, alice, entry("older", 99), store.ClientStateEntry{Namespace: "ns", Key: "other", Value: "x", UpdatedAt: 1})
	if put.Upserted != 1 || len(put.Skipped) != 1 || put.Skipped[0] != (store.StateKey{Namespace: "ns", Key: "k"}) {
		t.Errorf("older write = %+v, want k skipped and other upserted", put)
	}
	if got := getState(t, st, alice, "ns"); got[0].Value != "v100" {
		t.Errorf("after an older write: %+v", got)
	}
	if put := putState(t, st, alice, entry("tie", 100)); put.Upserted != 1 {
		t.Errorf("tie = %+v, want it to overwrite", put)
	}
	// In one call, entries apply in order: the later, newer one wins, and a
	// stale one after it is skipped.
	put = putState(t, st, alice, entry("v200", 200), entry("v150", 150))
	if put.Upserted != 1 || len(put.Skipped) != 1 {
		t.Errorf("batch = %+v, want one upserted and one skipped", put)
	}
	if got := getState(t, st, alice, "ns"); got[0].Value != "v200" || got[0].UpdatedAt != 200 {
		t.Errorf("after the batch: %+v, want v200 at 200", got)
	}
}

// TestClientStateRewritesDropStaleSlices shrinks and grows a chunked value
// and checks no slice row of an earlier write survives, while a sibling key
// that shares the prefix keeps its slices.
func TestClientStateRewritesDropStaleSlices(t *testing.T) {
	st, db := openWithPath(t, store.Config{})
	big := func(n int) string { return strings.Repeat("a", n*store.StateSliceBytes) }
	countSlices := func(key string) int {
		return queryInt(t, db, `SELECT count(*) FROM client_state WHERE namespace = ? AND key LIKE ?`, chunkNS+"ns", key+"\x1f%")
	}
	putState(t, st, alice,
		store.ClientStateEntry{Namespace: "ns", Key: "note", Value: big(4), UpdatedAt: 1},
		store.ClientStateEntry{Namespace: "ns", Key: "notes", Value: big(3), UpdatedAt: 1},
	)
	for _, step := range []struct {
		value  string
		slices int
	}{{big(2), 2}, {"small", 0}, {big(3), 3}} {
		putState(t, st, alice, store.ClientStateEntry{Namespace: "ns", Key: "note", Value: step.value, UpdatedAt: 2})
		if n := countSlices("note"); n != step.slices {
			t.Errorf("after writing %d bytes: %d slice rows of note, want %d", len(step.value), n, step.slices)
		}
		if got := getState(t, st, alice, "ns"); len(got) != 2 || got[0].Value != step.value || got[1].Value != big(3) {
			t.Errorf("after writing %d bytes: read %d entries", len(step.value), len(got))
		}
	}
	if n := countSlices("notes"); n != 3 {
		t.Errorf("sibling key notes has %d slices, want its 3", n)
	}
	// A skipped write leaves the stored slices alone.
	putState(t, st, alice, store.ClientStateEntry{Namespace: "ns", Key: "note", Value: "stale", UpdatedAt: 1})
	if n := countSlices("note"); n != 3 {
		t.Errorf("after a skipped write: %d slices, want 3", n)
	}
}

// TestClientStateOmitsIncompleteChunkSets damages stored rows the way a cut
// write or an old interleaved one would, and checks that readers get whole
// values or none, never a part.
func TestClientStateOmitsIncompleteChunkSets(t *testing.T) {
	large := strings.Repeat("z", 2*store.StateSliceBytes+10) // three slices
	for _, c := range []struct {
		name   string
		damage string
		intact bool
	}{
		{"untouched", ``, true},
		{"slice missing", `DELETE FROM client_state WHERE key = 'big' || char(31) || '1'`, false},
		{"slice from another write", `UPDATE client_state SET updated_at = 4 WHERE key = 'big' || char(31) || '2'`, false},
		{"root claims more slices", `UPDATE client_state SET value = char(31) || 'amsg-chunked' || char(31) || 'v1' || char(31) || '4' WHERE key = 'big'`, false},
		{"root claims a huge count", `UPDATE client_state SET value = char(31) || 'amsg-chunked' || char(31) || 'v1' || char(31) || '999999999999' WHERE key = 'big'`, false},
		{"slice does not decrypt", `UPDATE client_state SET value = (CASE substr(value, 1, 1) WHEN '0' THEN '1' ELSE '0' END) || substr(value, 2) WHERE key = 'big' || char(31) || '0'`, false},
		{"non-canonical slice key", `UPDATE client_state SET key = 'big' || char(31) || '01' WHERE key = 'big' || char(31) || '1'`, false},
		{"extra slice beyond the count", `INSERT INTO client_state SELECT user_id, namespace, 'big' || char(31) || '3', value, updated_at FROM client_state WHERE key = 'big' || char(31) || '0'`, true},
		{"malformed marker is a value that does not decrypt", `UPDATE client_state SET value = char(31) || 'amsg-chunked' || char(31) || 'v1' || char(31) || '03' WHERE key = 'big'`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, db := openWithPath(t, store.Config{})
			putState(t, st, alice,
				store.ClientStateEntry{Namespace: "ns", Key: "a", Value: "before", UpdatedAt: 5},
				store.ClientStateEntry{Namespace: "ns", Key: "big", Value: large, UpdatedAt: 5},
				store.ClientStateEntry{Namespace: "ns", Key: "z", Value: "after", UpdatedAt: 5},
			)
			if c.damage != "" {
				if _, err := db.Exec(c.damage); err != nil {
					t.Fatal(err)
				}
			}
			got := getState(t, st, alice, "ns")
			var keys []string
			for _, e := range got {
				keys = append(keys, e.Key)
				if e.Key == "big" && e.Value != large {
					t.Errorf("big read back as %d bytes, want the whole value or nothing", len(e.Value))
				}
			}
			want := "[a z]"
			if c.intact {
				want = "[a big z]"
			}
			if fmt.Sprint(keys) != want {
				t.Errorf("keys = %v, want %s", keys, want)
			}
		})
	}
}

// TestClientStateReadsUpstreamRows stores rows the way the standard's D1
// server does and reads them back: the layout is shared, so a database
// exported from upstream keeps working.
func TestClientStateReadsUpstreamRows(t *testing.T) {
	st, db := openWithPath(t, store.Config{})
	key := userKey(t, alice)
	rows := []rawStateRow{
		{"char:a", "plain", key.SealAtRest([]byte("single row")), 3},
		{"char:a", "context", chunkedRoot + "2", 9},
		{chunkNS + "char:a", "context\x1f0", key.SealAtRest([]byte("secret ")), 9},
		{chunkNS + "char:a", "context\x1f1", key.SealAtRest([]byte("body")), 9},
	}
	for _, r := range rows {
		if _, err := db.Exec(`INSERT INTO client_state (user_id, namespace, key, value, updated_at) VALUES (?, ?, ?, ?, ?)`,
			alice, r.namespace, r.key, r.value, r.updatedAt); err != nil {
			t.Fatal(err)
		}
	}
	got := getState(t, st, alice, "char:a")
	want := []store.ClientStateEntry{
		{Namespace: "char:a", Key: "context", Value: "secret body", UpdatedAt: 9},
		{Namespace: "char:a", Key: "plain", Value: "single row", UpdatedAt: 3},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ClientState = %+v, want %+v", got, want)
	}
}

func TestClientStateSkipsRowsThatDoNotDecrypt(t *testing.T) {
	logger, logs := logBuffer()
	st, db := openWithPath(t, store.Config{Logger: logger})
	putState(t, st, alice,
		store.ClientStateEntry{Namespace: "ns", Key: "a", Value: "kept", UpdatedAt: 1},
		store.ClientStateEntry{Namespace: "ns", Key: "b", Value: "lost", UpdatedAt: 1},
	)
	if _, err := db.Exec(`UPDATE client_state SET value = ? WHERE key = 'b'`, userKey(t, bob).SealAtRest([]byte("other key"))); err != nil {
		t.Fatal(err)
	}
	if got := getState(t, st, alice, "ns"); len(got) != 1 || got[0].Value != "kept" {
		t.Errorf("ClientState = %+v, want only the row that decrypts", got)
	}
	if !strings.Contains(logs.String(), "does not decrypt") || strings.Contains(logs.String(), "other key") {
		t.Errorf("log = %s, want a warning without the value", logs)
	}
}

func TestPutClientStateRefusesInvalidEntries(t *testing.T) {
	st, db := openWithPath(t, store.Config{MaxStateValueBytes: 10})
	good := store.ClientStateEntry{Namespace: "ns", Key: "k", Value: "ok", UpdatedAt: 1}
	for _, c := range []struct {
		name string
		bad  store.ClientStateEntry
	}{
		{"blank namespace", store.ClientStateEntry{Namespace: " ", Key: "k", UpdatedAt: 1}},
		{"reserved namespace", store.ClientStateEntry{Namespace: chunkNS + "ns", Key: "k", UpdatedAt: 1}},
		{"reserved key", store.ClientStateEntry{Namespace: "ns", Key: "k\x1f0", UpdatedAt: 1}},
		{"long key", store.ClientStateEntry{Namespace: "ns", Key: strings.Repeat("k", 257), UpdatedAt: 1}},
		{"value over the limit", store.ClientStateEntry{Namespace: "ns", Key: "k", Value: "12345678901", UpdatedAt: 1}},
		{"value not UTF-8", store.ClientStateEntry{Namespace: "ns", Key: "k", Value: "\xff", UpdatedAt: 1}},
		{"zero updatedAt", store.ClientStateEntry{Namespace: "ns", Key: "k", Value: "v"}},
	} {
		_, err := st.PutClientState(t.Context(), alice, []store.ClientStateEntry{good, c.bad})
		if !errors.Is(err, store.ErrInvalidClientState) {
			t.Errorf("%s: err = %v, want ErrInvalidClientState", c.name, err)
		}
	}
	tooMany := make([]store.ClientStateEntry, store.MaxStateEntries+1)
	for i := range tooMany {
		tooMany[i] = good
	}
	if _, err := st.PutClientState(t.Context(), alice, tooMany); !errors.Is(err, store.ErrInvalidClientState) {
		t.Errorf("%d entries: err = %v", len(tooMany), err)
	}
	if n := queryInt(t, db, `SELECT count(*) FROM client_state`); n != 0 {
		t.Errorf("%d rows written by refused calls, want none", n)
	}
	if st.MaxStateValueBytes() != 10 {
		t.Errorf("MaxStateValueBytes = %d, want the configured 10", st.MaxStateValueBytes())
	}
	if storetest.New(t).MaxStateValueBytes() != store.DefaultMaxStateValueBytes {
		t.Error("MaxStateValueBytes does not default to 5 MiB")
	}
}

func TestClientStateRefusesReservedNamespaces(t *testing.T) {
	st := storetest.New(t)
	putState(t, st, alice, store.ClientStateEntry{Namespace: "ns", Key: "k", Value: strings.Repeat("a", store.StateSliceBytes+1), UpdatedAt: 1})
	for ns, want := range map[string]error{
		"":             store.ErrStateNameBlank,
		"  ":           store.ErrStateNameBlank,
		chunkNS + "ns": store.ErrStateNameReserved,
	} {
		if _, err := st.ClientState(t.Context(), alice, ns); !errors.Is(err, want) {
			t.Errorf("ClientState(%q) = %v, want %v", ns, err, want)
		}
	}
	// The standard checks no length on reads: a long name is just not found.
	if got := getState(t, st, alice, strings.Repeat("n", 300)); len(got) != 0 {
		t.Errorf("long namespace = %+v", got)
	}
}

func TestDeleteClientStateCountsRawRows(t *testing.T) {
	st := storetest.New(t)
	putState(t, st, alice,
		store.ClientStateEntry{Namespace: "a", Key: "big", Value: strings.Repeat("a", 2*store.StateSliceBytes+1), UpdatedAt: 1}, // root + 3 slices
		store.ClientStateEntry{Namespace: "b", Key: "small", Value: "s", UpdatedAt: 1},
	)
	putState(t, st, bob, store.ClientStateEntry{Namespace: "a", Key: "k", Value: "bob's", UpdatedAt: 1})
	n, err := st.DeleteClientState(t.Context(), alice)
	if err != nil || n != 5 {
		t.Errorf("DeleteClientState = %d, %v; want 5 rows", n, err)
	}
	if n, _ := st.DeleteClientState(t.Context(), alice); n != 0 {
		t.Errorf("second delete = %d, want 0", n)
	}
	if got := getState(t, st, bob, "a"); len(got) != 1 {
		t.Errorf("bob's state after alice's delete: %+v", got)
	}
}

func BenchmarkPutClientState1MiB(b *testing.B) {
	st := storetest.New(b)
	value := strings.Repeat("x记😀é", 1<<20/10)
	b.SetBytes(int64(len(value)))
	for i := 0; b.Loop(); i++ {
		if _, err := st.PutClientState(b.Context(), alice, []store.ClientStateEntry{{Namespace: "ns", Key: "k", Value: value, UpdatedAt: int64(i + 1)}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClientState1MiB(b *testing.B) {
	st := storetest.New(b)
	value := strings.Repeat("x记😀é", 1<<20/10)
	if _, err := st.PutClientState(b.Context(), alice, []store.ClientStateEntry{{Namespace: "ns", Key: "k", Value: value, UpdatedAt: 1}}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(value)))
	for b.Loop() {
		entries, err := st.ClientState(b.Context(), alice, "ns")
		if err != nil || len(entries) != 1 {
			b.Fatal(entries, err)
		}
	}
}
