package postgres

import (
	"context"
	"errors"
)

// errBackupTool is Backup's answer: amsg copies only a SQLite file.
var errBackupTool = errors.New("the database is PostgreSQL (AMSG_DATABASE_URL); back it up with pg_dump")

// Backup refuses: a PostgreSQL database is backed up with its own tools
// (pg_dump, or the server's base backups), as amsg backup says.
func (db *DB) Backup(context.Context, string) error { return errBackupTool }

// CheckIntegrity has nothing to add: the server checks each page as it
// reads it (with data checksums on).
func (db *DB) CheckIntegrity(context.Context) error { return nil }
