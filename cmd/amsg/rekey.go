package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"amsg/store"
)

// secretFromEnv reads a secret from the variable name or from the file
// named by name_FILE (surrounding white space dropped), not both; "" when
// neither is set.
func secretFromEnv(getenv func(string) string, name string) (string, error) {
	value, file := getenv(name), getenv(name+"_FILE")
	switch {
	case file == "":
		return value, nil
	case value != "":
		return "", fmt.Errorf("%w: set %s or %s_FILE, not both", errUsage, name, name)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%w: %s_FILE: %v", errUsage, name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// runRekey re-seals every stored value under a new master key. The server
// must be stopped (the data directory lock says so); the current key is
// AMSG_MASTER_KEY(_FILE) or the stored one, the new key
// AMSG_NEW_MASTER_KEY(_FILE).
func runRekey(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("amsg rekey", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./amsg-data", "directory of the SQLite database (AMSG_DATA_DIR)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: AMSG_NEW_MASTER_KEY=<64 hex> amsg rekey [--data-dir DIR]\n\n"+
			"Re-seals every stored value under the new master key, with the server stopped. The current key is\n"+
			"AMSG_MASTER_KEY (or AMSG_MASTER_KEY_FILE), or the stored one; the new key is AMSG_NEW_MASTER_KEY\n"+
			"(or AMSG_NEW_MASTER_KEY_FILE). Afterwards start amsg with the new key.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if v := getenv(envName("data-dir")); v != "" && !flagGiven(fs, "data-dir") {
		*dataDir = v
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "amsg rekey: "+format+"\n", a...)
		return code
	}
	current, err := secretFromEnv(getenv, "AMSG_MASTER_KEY")
	if err != nil {
		return fail(2, "%v", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
	}
	next, err := secretFromEnv(getenv, "AMSG_NEW_MASTER_KEY")
	if err != nil {
		return fail(2, "%v", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
	}
	if next == "" {
		return fail(2, "set AMSG_NEW_MASTER_KEY (or AMSG_NEW_MASTER_KEY_FILE) to the new 64-hex key")
	}
	path := filepath.Join(*dataDir, "amsg.db")
	if _, err := os.Stat(path); err != nil {
		return fail(2, "no database at %s: %v", path, err)
	}
	lock, err := lockDataDir(*dataDir)
	if err != nil && !errors.Is(err, errNoDataDirLock) {
		return fail(2, "%v (stop the server first)", err)
	}
	defer closeFile(lock)
	st, err := store.Open(ctx, store.Config{Path: path, MasterKey: current})
	if err != nil {
		return fail(2, "%v", err)
	}
	res, err := st.Rekey(ctx, next)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	fmt.Fprintf(stdout, "re-sealed %d values under the new master key; start amsg with AMSG_MASTER_KEY set to it\n", res.Resealed)
	return 0
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
