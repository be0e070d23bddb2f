package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A server whose synchronous_commit is off (a common setting for speed)
// made every claim walk the index entries of the tasks delivered in the last
// second or so (issue 24: 61 to 900 buffers a claim, a saw-tooth). A scan
// marks an entry dead only once it knows the row's deleting transaction
// committed, from a hint bit on the row; PostgreSQL may set that bit only
// when the WAL of the commit is flushed, and for an asynchronous commit
// "the commit" is the latest asynchronous commit of the 32 transaction ids
// around it (its clog page's LSN group). Under a steady stream of
// asynchronous commits that LSN keeps moving past the flushed one, so the
// bits wait until a whole group of 32 ids has been used and flushed (0.5–1 s
// of a burst), and until then every claim reads the rows of every task
// delivered since. So amsg's own connections commit with
// synchronous_commit = local where the server says off: a commit returns
// once its WAL is flushed on the server (as by PostgreSQL's default, which
// amsg leaves as it is, like remote_write or remote_apply), so its
// deletions can be marked dead by the next claim.
//
// A database URL that sets synchronous_commit itself (a runtime parameter,
// or in options) keeps it: then the operator chose. Behind a transaction
// pooler a session setting would stay on a server session other clients
// share, so pooled connections are left as they are.

// localFlushSQL raises the session's synchronous_commit from off to local
// and leaves any other value.
const localFlushSQL = `SELECT set_config('synchronous_commit', 'local', false)
	WHERE current_setting('synchronous_commit') = 'off'`

// flushCommits makes config's connections commit with a local flush where
// the server does not (localFlushSQL), unless the URL chose.
func flushCommits(config *pgx.ConnConfig) {
	if choosesSynchronousCommit(config) {
		return
	}
	config.AfterConnect = func(ctx context.Context, conn *pgconn.PgConn) error {
		if err := conn.Exec(ctx, localFlushSQL).Close(); err != nil {
			return fmt.Errorf("synchronous_commit: %w", err)
		}
		return nil
	}
}

// choosesSynchronousCommit reports whether config's URL sets
// synchronous_commit, as a runtime parameter or in options (-c …).
func choosesSynchronousCommit(config *pgx.ConnConfig) bool {
	if _, ok := config.RuntimeParams["synchronous_commit"]; ok {
		return true
	}
	return strings.Contains(config.RuntimeParams["options"], "synchronous_commit")
}
