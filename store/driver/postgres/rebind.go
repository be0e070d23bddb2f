package postgres

import (
	"context"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// connector opens pgx stdlib connections that accept the store's ?
// placeholders and the store's column arrays (registerArrays).
// clientStatements keeps prepared statements on the client (clientStmt),
// as a transaction pooler needs.
func connector(config pgx.ConnConfig, clientStatements bool) driver.Connector {
	return rebindConnector{stdlib.GetConnector(config, stdlib.OptionAfterConnect(registerArrays)), clientStatements}
}

type rebindConnector struct {
	driver.Connector
	clientStatements bool
}

func (c rebindConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rebindConn{conn.(*stdlib.Conn), c.clientStatements}, nil
}

// rebindConn is a pgx stdlib connection whose statements are rebound; every
// other method (transactions, pings, value checks) is pgx's own.
type rebindConn struct {
	*stdlib.Conn
	clientStatements bool
}

func (c rebindConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c rebindConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.clientStatements {
		return clientStmt{c, rebind(query)}, nil
	}
	return c.Conn.PrepareContext(ctx, rebind(query))
}

func (c rebindConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.ExecContext(ctx, rebind(query), args)
}

func (c rebindConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.QueryContext(ctx, rebind(query), args)
}

// clientStmt is a statement prepared on the client only. Behind a
// transaction pooler a server-side prepared statement would live in a
// server session other clients share, and be missing from the session the
// next transaction gets: each execution sends the statement's text instead.
type clientStmt struct {
	conn  rebindConn
	query string // rebound
}

func (s clientStmt) Close() error  { return nil }
func (s clientStmt) NumInput() int { return -1 }

func (s clientStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

func (s clientStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

func (s clientStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.conn.Conn.ExecContext(ctx, s.query, args)
}

func (s clientStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.conn.Conn.QueryContext(ctx, s.query, args)
}

func namedValues(args []driver.Value) []driver.NamedValue {
	named := make([]driver.NamedValue, len(args))
	for i, v := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return named
}

// rebind numbers the ? placeholders of query $1, $2, … It leaves alone
// string literals, quoted identifiers, dollar-quoted bodies and comments,
// and a query that has no ? at all (one written with $n already).
//
// Every statement that is not prepared passes through it on each
// execution (the delivery's one statement of a batch of completions, 1 KB
// with 30 placeholders, took 20 µs and a copy), so the result is kept per
// query text: the store's statements are a fixed set, and the multi-row
// ones have one text per row count. maxReboundBytes bounds what is kept
// (the texts and their rebound texts); past it a query is rebound each
// time, as before.
func rebind(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	if r, ok := rebound.Load(query); ok {
		return r.(string)
	}
	r := rebindScan(query)
	size := int64(len(query) + len(r))
	if reboundBytes.Load()+size <= maxReboundBytes {
		if _, loaded := rebound.LoadOrStore(query, r); !loaded {
			reboundBytes.Add(size)
		}
	}
	return r
}

const maxReboundBytes = 4 << 20

var (
	rebound      sync.Map // query text → its rebound text
	reboundBytes atomic.Int64
)

// rebindScan is rebind without the cache: it copies query up to the next
// character that may start a placeholder or a literal at a time.
func rebindScan(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); {
		next := strings.IndexAny(query[i:], "?'\"-$")
		if next < 0 {
			b.WriteString(query[i:])
			break
		}
		b.WriteString(query[i : i+next])
		i += next
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
