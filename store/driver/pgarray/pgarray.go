// Package pgarray is the column arrays the store binds a batch of rows as
// where the driver binds arrays (driver.Dialect.ArrayParams: PostgreSQL's
// pgx; store/arrays.go), and their registration on a pgx connection.
//
// pgx encodes a Go slice it does not know by reflection, which for
// []*int64 or []*string copies every value out of its pointer into a new
// allocation, after the store allocated the pointer itself: two
// allocations a value, about seventy a push over a completion's batched
// tables (issue 24). An Array hands pgx pointers into its own backing
// array, which go into an interface without allocating, and its elements
// encode through pgx's valuer interfaces, without reflection.
package pgarray

import "github.com/jackc/pgx/v5/pgtype"

// Bigint and Text are a bigint and a text column's value; Valid false is
// NULL.
type (
	Bigint = pgtype.Int8
	Text   = pgtype.Text
)

// Bytea is a bytea column's value; nil is NULL.
type Bytea []byte

// BytesValue is pgx's bytea encoder's view of b.
func (b *Bytea) BytesValue() ([]byte, error) { return *b, nil }

// Array is one column of a batch, bound as a one-dimensional array.
type Array[T Bigint | Text | Bytea] []T

// Dimensions is the array's one dimension; nil (a NULL array) for a nil
// Array.
func (a Array[T]) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index is a pointer to element i: its encoder, and no allocation.
func (a Array[T]) Index(i int) any { return &a[i] }

// IndexType is what Index returns.
func (a Array[T]) IndexType() any { return new(T) }

// Register names the Arrays' SQL types on a connection's type map m: the
// simple protocol (behind a transaction pooler) gets no parameter types
// from the server, and finds an argument's type by its Go type.
func Register(m *pgtype.Map) {
	m.RegisterDefaultPgType(Array[Bigint]{}, "_int8")
	m.RegisterDefaultPgType(Array[Text]{}, "_text")
	m.RegisterDefaultPgType(Array[Bytea]{}, "_bytea")
}
