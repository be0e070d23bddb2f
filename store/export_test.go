package store

import (
	"slices"
	"strings"
)

// ClaimSQL is the claim as the store runs it (the dialect's plan setting
// and statement), for the test of PostgreSQL's claim.
func (s *Store) ClaimSQL() (plan, claim string) { return s.dialect.ClaimPlan, s.claimDueSQL() }

// VersionBefore is the schema version just before the first migration
// step whose SQL contains fragment, so that a test of that step can roll a
// database back to it whatever steps were appended since.
func (s *Store) VersionBefore(fragment string) int {
	return slices.IndexFunc(s.dialect.Migrations, func(m string) bool { return strings.Contains(m, fragment) })
}
