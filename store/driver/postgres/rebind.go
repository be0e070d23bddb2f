package postgres

import (
	"context"
	"database/sql/driver"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// connector opens pgx stdlib connections that accept the store's ?
// placeholders.
func connector(config pgx.ConnConfig) driver.Connector {
	return rebindConnector{stdlib.GetConnector(config)}
}

type rebindConnector struct{ driver.Connector }

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rebindConn{conn.(*stdlib.Conn)}, nil
}

// rebindConn is a pgx stdlib connection whose statements are rebound; every
// other method (transactions, pings, value checks) is pgx's own.
type rebindConn struct{ *stdlib.Conn }

func (c rebindConn) Prepare(query string) (driver.Stmt, error) {
	return c.Conn.Prepare(rebind(query))
}

func (c rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.PrepareContext(ctx, rebind(query))
}

func (c rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(query), args)
}

func (c rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(query), args)
}

// rebind numbers the ? placeholders of query $1, $2, … It leaves alone
// string literals, quoted identifiers, dollar-quoted bodies and comments,
// and a query that has no ? at all (one written with $n already).
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		switch c := query[i]; {
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		case c == '\'' || c == '"':
			end := strings.IndexByte(query[i+1:], c)
			if end < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+end+2])
			i += end + 1
			continue
		case c == '-' && strings.HasPrefix(query[i:], "--"):
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+end])
			i += end - 1
			continue
		case c == '$' && strings.HasPrefix(query[i:], "$$"):
			end := strings.Index(query[i+2:], "$$")
			if end < 0 {
				b.WriteString(query[i:])
				return b.String()
			}
			b.WriteString(query[i : i+end+4])
			i += end + 3
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}
