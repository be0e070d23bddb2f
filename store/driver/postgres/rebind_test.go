package postgres

import (
	"strconv"
	"strings"
	"testing"
)

func TestRebindNumbersPlaceholdersOutsideLiterals(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE b = ? AND c IN (SELECT value FROM json_array_elements_text(?::json))`,
			`SELECT a FROM t WHERE b = $1 AND c IN (SELECT value FROM json_array_elements_text($2::json))`},
		{`SELECT '?', "a?", ? -- what?` + "\n" + `, ?`, `SELECT '?', "a?", $1 -- what?` + "\n" + `, $2`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{`DO $$ BEGIN PERFORM '?'; END $$; SELECT ?`, `DO $$ BEGIN PERFORM '?'; END $$; SELECT $1`},
		{`UPDATE t SET a = $1 WHERE b = $2`, `UPDATE t SET a = $1 WHERE b = $2`},
		{`SELECT 'unterminated ?`, `SELECT 'unterminated ?`},
	} {
		if got := rebind(c.in); got != c.want {
			t.Errorf("rebind(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// rebindByChar is rebind as it was before the scan jumped to the next
// special character: every character tried as the start of a literal.
func rebindByChar(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i++
			continue
		}
		end := max(literalEnd(query, i), i+1)
		b.WriteString(query[i:end])
		i = end
	}
	return b.String()
}

var rebindCases = []string{
	`SELECT 1`, `?`, `??`, `'?`, `"?"?`, `-?`, `--?`, `-- ?` + "\n?", `$?`, `$1?`, `$$?$$?`, `$$ ? $`,
	`SELECT '?', "a?", ? -- what?` + "\n" + `, ?`, `SELECT 'it''s ?', ?`, `a - ? - '-' $ ?`,
	`DO $$ BEGIN PERFORM '?'; END $$; SELECT ?`, `SELECT 'unterminated ?`, `SELECT "unterminated ?`,
}

func TestRebindScanAgreesWithTheCharacterByCharacterRebind(t *testing.T) {
	for _, q := range rebindCases {
		if got, want := rebindScan(q), rebindByChar(q); strings.Contains(q, "?") && got != want {
			t.Errorf("rebindScan(%q) = %q, want %q", q, got, want)
		}
		// Twice: the second comes from the cache.
		for range 2 {
			if got, want := rebind(q), rebindByChar(q); got != want {
				t.Errorf("rebind(%q) = %q, want %q", q, got, want)
			}
		}
	}
}

func FuzzRebind(f *testing.F) {
	for _, q := range rebindCases {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if got, want := rebindScan(q), rebindByChar(q); strings.Contains(q, "?") && got != want {
			t.Errorf("rebindScan(%q) = %q, want %q", q, got, want)
		}
	})
}

// benchQuery is the shape of the store's statement of a batch of
// completions: 1 KB of multi-row inserts with 30 placeholders.
var benchQuery = strings.Repeat(`INSERT INTO delivery_log (at, message_id, user_id) SELECT * FROM unnest(?::bigint[], ?::text[], ?::text[]) `, 10)

func BenchmarkRebind(b *testing.B) {
	b.Run("by-char", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = rebindByChar(benchQuery)
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = rebindScan(benchQuery)
		}
	})
	b.Run("kept", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = rebind(benchQuery)
		}
	})
}

func TestRebindPastItsBoundStillRebindsButKeepsNothing(t *testing.T) {
	kept := reboundBytes.Load()
	reboundBytes.Store(maxReboundBytes)
	defer reboundBytes.Store(kept)
	q := `SELECT ? -- past the bound`
	for range 2 {
		if got, want := rebind(q), `SELECT $1 -- past the bound`; got != want {
			t.Errorf("rebind(%q) = %q, want %q", q, got, want)
		}
	}
	if _, ok := rebound.Load(q); ok {
		t.Errorf("%q was kept past the bound", q)
	}
	if reboundBytes.Load() != maxReboundBytes {
		t.Errorf("kept bytes %d, want %d", reboundBytes.Load(), maxReboundBytes)
	}
}
