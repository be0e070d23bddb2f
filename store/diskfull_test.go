package store_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"amsg/store"
	"amsg/store/storetest"
)

// Issue 22, finding 8, on a real full volume (an 8 MiB tmpfs; root only):
// while the disk refuses writes the health probe fails, and once space
// returns the probe passes and writes go through again, with no restart.
func TestAFullDiskHeals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	st := storetest.Open(t, store.Config{Path: filepath.Join(dir, "amsg.db")})
	ctx := t.Context()
	put := func(key string) error {
		_, err := st.PutClientState(ctx, alice, []store.ClientStateEntry{{Namespace: "ns", Key: key, Value: strings.Repeat("x", 1<<20), UpdatedAt: 1}})
		return err
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	_ = f.Close()

	if err := put("full"); err == nil {
		t.Fatal("a 1 MiB write on a full volume succeeded")
	}
	if err := st.Probe(ctx); err == nil {
		t.Fatal("the health probe passes while the disk refuses writes")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := st.Probe(ctx); err != nil {
		t.Fatalf("the probe after space returned: %v", err)
	}
	if err := put("after"); err != nil {
		t.Fatalf("a write after space returned: %v", err)
	}
}
