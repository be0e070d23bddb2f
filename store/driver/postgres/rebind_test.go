package postgres

import "testing"

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
