//go:build !unix

package sqlite

// freeBytes does not know the free space here.
func freeBytes(string) (int64, bool) { return 0, false }
