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

// literals are the spans rebind copies as they are, by what opens and what
// closes them.
var literals = []struct{ open, close string }{{"'", "'"}, {`"`, `"`}, {"--", "\n"}, {"$$", "$$"}}

// literalEnd is the end of the literal that starts at query[i], the end of
// query for one left open, or i when none starts there.
func literalEnd(query string, i int) int {
	for _, l := range literals {
		if strings.HasPrefix(query[i:], l.open) {
			rest := i + len(l.open)
			j := strings.Index(query[rest:], l.close)
			if j < 0 {
				return len(query)
			}
			return rest + j + len(l.close)
		}
	}
	return i
}
