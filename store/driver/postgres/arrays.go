package postgres

import (
	"context"

	"amsg/store/driver/pgarray"

	"github.com/jackc/pgx/v5"
)

// registerArrays names the store's column arrays on each new connection
// (pgarray.Register), for the simple protocol.
func registerArrays(_ context.Context, conn *pgx.Conn) error {
	pgarray.Register(conn.TypeMap())
	return nil
}
