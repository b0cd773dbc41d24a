//go:build !unix

package chunkcache

import (
	"errors"
	"os"
)

// Disk needs flock(2); elsewhere Open fails with an error wrapping
// errors.ErrUnsupported.
const openFlags = 0

const (
	lockShared = 1 << iota
	lockExclusive
	lockUnlock
)

func flock(f *os.File, how int) error {
	return &os.PathError{Op: "flock", Path: f.Name(), Err: errors.ErrUnsupported}
}

func tryFlock(f *os.File, how int) (bool, error) {
	return false, flock(f, how)
}
