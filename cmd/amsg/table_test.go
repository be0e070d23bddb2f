package main

import (
	"strings"
	"testing"
)

func TestPrintTable(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{`{"users":[{"userId":"u1","devices":1,"lastSeen":null},{"userId":"u2","devices":12,"extra":{"a":1}}],"next":"u2"}`,
			"users:\n  userId  devices  lastSeen  extra\n  u1      1        -\n  u2      12                 {\"a\":1}\n" + "next: u2\n"},
		{`{"attempts":[]}`, "attempts:\n  (none)\n"},
		{`[{"a":"x\ty\nz"}]`, "  a\n  x y z\n"},
		{`{"message":"` + strings.Repeat("é", 70) + `"}`, "message: " + strings.Repeat("é", maxCellRunes-1) + "…\n"},
		{`"done"`, "done\n"},
	} {
		var out strings.Builder
		if err := printTable(&out, []byte(c.data)); err != nil || out.String() != c.want {
			t.Errorf("printTable(%s) = %v\n%q\nwant\n%q", c.data, err, out.String(), c.want)
		}
	}
}
