package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"amsg/store"
)

// runKeys is `amsg keys export`: the key set of a data directory or
// database as environment lines, for operators who keep the keys outside
// (a secret store, a Kubernetes Secret) or want a copy of them.
func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	const usage = "Usage: amsg keys export [--data-dir DIR | --database-url postgres://…]\n\n" +
		"Prints the master key and the VAPID key pair of the database as AMSG_* environment lines.\n" +
		"A database that keeps only its master key's check value needs AMSG_MASTER_KEY(_FILE), which is checked.\n" +
		"The output opens every user's data: write it only where the data directory itself may go."
	if len(args) == 0 || args[0] != "export" {
		fmt.Fprintln(stderr, usage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	fs := commandFlags("amsg keys export", usage, stderr)
	dataDir := fs.String("data-dir", "", "data directory of the SQLite database (env AMSG_DATA_DIR, default ./amsg-data)")
	url := fs.String("database-url", "", "PostgreSQL database, postgres://… (env AMSG_DATABASE_URL; wins over the data directory)")
	if status, done := parseFlags(fs, args[1:]); done {
		return status
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	cfg := store.Config{DatabaseURL: cmp.Or(*url, getenv(envName("database-url"))),
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	switch {
	case cfg.DatabaseURL != "" && !store.IsPostgresURL(cfg.DatabaseURL):
		fmt.Fprintln(stderr, "amsg keys export: --database-url must start postgres:// or postgresql://")
		return 2
	case cfg.DatabaseURL == "":
		// A data directory without a database has no keys: say so rather
		// than create one.
		cfg.Path = filepath.Join(cmp.Or(*dataDir, getenv(envName("data-dir")), "./amsg-data"), "amsg.db")
		if _, err := os.Stat(cfg.Path); err != nil {
			fmt.Fprintf(stderr, "amsg keys export: %v\n", err)
			return 1
		}
	}
	st, err := openKeepingKeys(ctx, cfg, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "amsg keys export: %v\n", err)
		return 1
	}
	sec := st.Secrets()
	if err := st.Close(); err != nil {
		fmt.Fprintf(stderr, "amsg keys export: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "AMSG_MASTER_KEY=%s\nAMSG_VAPID_PUBLIC_KEY=%s\nAMSG_VAPID_PRIVATE_KEY=%s\n",
		sec.MasterKey, sec.VAPIDPublicKey, sec.VAPIDPrivateKey)
	return 0
}
