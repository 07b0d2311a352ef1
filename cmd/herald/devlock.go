//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// devLockFile in HERALD_DEV_DATA is held (flock) by the `herald dev` using
// the directory and names it: two stacks on one DynamoDB Local database and
// one queues.json would overwrite each other's state.
const devLockFile = ".lock"

// lockDataDir takes the directory's lock for this process, described by
// holder (its pid and API address), or refuses naming the process that holds
// it. The lock ends with the process (or release).
func lockDataDir(dir, holder string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, devLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			other, _ := os.ReadFile(path)
			return nil, fmt.Errorf("HERALD_DEV_DATA %s is in use by another herald dev (%s): stop it, or use another directory", dir, strings.TrimSpace(string(other)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(holder+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
