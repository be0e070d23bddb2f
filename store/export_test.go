package store

// ClaimSQL is the claim as the store runs it (the dialect's plan setting
// and statement), for the test of PostgreSQL's claim.
func (s *Store) ClaimSQL() (plan, claim string) { return s.dialect.ClaimPlan, s.claimDueSQL() }
