package store

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"amsg/store/driver"
	"amsg/store/driver/postgres"
	"amsg/store/driver/sqlite"
)

// databaseName checks that cfg names a database and says which, for
// errors.
func databaseName(cfg Config) (string, error) {
	switch {
	case cfg.DatabaseURL != "":
		if !postgres.IsURL(cfg.DatabaseURL) {
			return "", errors.New("the database URL must start postgres:// or postgresql://")
		}
		return "the PostgreSQL database", nil
	case cfg.Path == "":
		return "", errors.New("no database path")
	}
	return cfg.Path, nil
}

// openDriver opens the database cfg names with its driver: PostgreSQL for
// a DatabaseURL, else SQLite, whose file it creates if create is set (Open)
// and otherwise must exist (a backup, a restore's check). It is the one
// place in store that names a concrete driver; everything else goes
// through driver.Driver.
func openDriver(ctx context.Context, cfg Config, log *slog.Logger, create bool) (driver.Driver, error) {
	if cfg.DatabaseURL != "" {
		return postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseDirectURL, cfg.DatabasePooler, log)
	}
	if !create {
		if _, err := os.Stat(cfg.Path); err != nil {
			return nil, err
		}
	}
	return sqlite.Open(ctx, cfg.Path, log)
}

// IsPostgresURL reports whether s names a PostgreSQL database
// (postgres:// or postgresql://), which Config.DatabaseURL must.
func IsPostgresURL(s string) bool { return postgres.IsURL(s) }

// PoolerTransaction is Config.DatabasePooler for a DatabaseURL that goes
// through a transaction pooler (postgres.PoolerTransaction).
const PoolerTransaction = postgres.PoolerTransaction
