//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// giveToDataDirOwner hands the restored database, and the files moved aside,
// to the owner of the data directory when root restores into a directory
// that is someone else's (systemd's DynamicUser= service, whose user could
// not otherwise open the copy root installed).
func giveToDataDirOwner(dir string, paths ...string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	owner, ok := info.Sys().(*syscall.Stat_t)
	if !ok || owner.Uid == 0 {
		return nil
	}
	var errs []error
	for _, path := range paths {
		if path == "" {
			continue
		}
		errs = append(errs, filepath.WalkDir(path, func(p string, _ os.DirEntry, err error) error {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			return os.Lchown(p, int(owner.Uid), int(owner.Gid))
		}))
	}
	return errors.Join(errs...)
}
