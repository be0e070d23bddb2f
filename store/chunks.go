package store

import "slices"

// On SQLite a multi-row statement of a row count not seen before is a new
// text, compiled afresh, which cost more than its rows saved when each
// batch went in one statement of its own size (docs/performance.md, "The
// SQLite write path after issue 25"). So there the delivery path's
// multi-row statements come in a few row counts, each prepared once at
// Open (preparedRows), and a batch goes in chunks of those, the largest
// that fits first: 30 events in two statements (24 and 6 rows), 10 in two
// (8 and 2). Where the driver binds arrays (PostgreSQL), one text writes
// any number of rows, and a chunk is as large as its statement allows.

// chunkRows are the row counts of the multi-row statements prepared on
// SQLite, largest first: powers of two and three times them, since a
// push's delivery tells three events.
var chunkRows = []int{64, 48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1}

// preparedChunkQueries are the multi-row statements of chunkRows
// (rowStatements), prepared at Open where the driver binds no arrays.
var preparedChunkQueries []string

// rowStatements is a multi-row statement: its text for each of chunkRows,
// indexed as chunkRows is, and how to spell it for any other count.
type rowStatements struct {
	texts []string
	build func(rows int) string
}

// newRowStatements registers build's statement of each of chunkRows rows
// as a prepared chunk. Call it in a package-level var declaration.
func newRowStatements(build func(rows int) string) rowStatements {
	r := rowStatements{texts: make([]string, len(chunkRows)), build: build}
	for i, rows := range chunkRows {
		r.texts[i] = build(rows)
		preparedChunkQueries = append(preparedChunkQueries, r.texts[i])
	}
	return r
}

// text is the statement of rows rows: prepared when rows is one of
// chunkRows.
func (r rowStatements) text(rows int) string {
	if i := slices.Index(chunkRows, rows); i >= 0 {
		return r.texts[i]
	}
	return r.build(rows)
}

// chunk is how many of left rows (at least one) the next multi-row
// statement writes: up to most where the driver binds arrays, else the
// largest of chunkRows that fits.
func (s *Store) chunk(left, most int) int {
	if s.dialect.ArrayParams {
		return min(left, most)
	}
	for _, rows := range chunkRows {
		if rows <= left {
			return rows
		}
	}
	return 1
}
