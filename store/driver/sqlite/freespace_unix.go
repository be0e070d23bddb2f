//go:build unix

package sqlite

import "syscall"

// freeBytes is the space left to unprivileged writers on dir's volume.
func freeBytes(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
