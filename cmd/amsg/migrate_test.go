package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/store"
	"amsg/store/storetest"
)

// amsg migrate copies a data directory into PostgreSQL, where a server
// opened with the directory's keys reads the same tasks.
func TestMigrateCopiesADataDirectoryIntoPostgres(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	src := storetest.Open(t, store.Config{Path: filepath.Join(dir, "amsg.db")})
	task, _, err := src.InsertTask(ctx, store.NewTask{UserID: "550e8400-e29b-41d4-a716-446655440000",
		UUID: "00000000-0000-4000-8000-000000000001", MessageType: push.TypeFixed,
		NextSendAt: time.Now().Add(time.Hour), Payload: json.RawMessage(`{"x":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	sec := src.Secrets()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	url := storetest.DatabaseURL(t)

	keys := map[string]string{"AMSG_MASTER_KEY": sec.MasterKey, "AMSG_VAPID_PUBLIC_KEY": sec.VAPIDPublicKey, "AMSG_VAPID_PRIVATE_KEY": sec.VAPIDPrivateKey}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"migrate", "--from", dir, "--to", url}, &stdout, &stderr, func(name string) string { return keys[name] }); code != 0 {
		t.Fatalf("amsg migrate = %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "tasks: 1 rows\n") {
		t.Errorf("output %q does not count the one task", stdout.String())
	}
	dst := storetest.Open(t, store.Config{DatabaseURL: url, MasterKey: sec.MasterKey,
		VAPIDPublicKey: sec.VAPIDPublicKey, VAPIDPrivateKey: sec.VAPIDPrivateKey})
	got, err := dst.Task(ctx, task.UserID, task.UUID)
	if err != nil || string(got.Payload) != `{"x":1}` || !got.NextSendAt.Equal(task.NextSendAt) {
		t.Errorf("migrated task = %+v, %v; want %+v", got, err, task)
	}
	if dst.Secrets() != sec {
		t.Error("the database does not hold the data directory's keys")
	}
}

func TestMigrateRefusesBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--to", "postgres://x/y"}, "--from must name the SQLite data directory"},
		{[]string{"migrate", "--from", t.TempDir()}, "--to must be a postgres:// or postgresql:// URL"},
		{[]string{"migrate", "--from", t.TempDir(), "--to", "mysql://x"}, "--to must be a postgres:// or postgresql:// URL"},
	} {
		var stderr bytes.Buffer
		if code := run(t.Context(), c.args, &bytes.Buffer{}, &stderr, func(string) string { return "" }); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v = %d %q, want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	var stderr bytes.Buffer
	if code := run(t.Context(), []string{"migrate", "--from", t.TempDir(), "--to", "postgres://x/y"}, &bytes.Buffer{}, &stderr,
		func(string) string { return "" }); code != 1 || !strings.Contains(stderr.String(), "amsg.db") {
		t.Errorf("a directory without a database = %d %q, want 1 naming amsg.db", code, stderr.String())
	}
}
