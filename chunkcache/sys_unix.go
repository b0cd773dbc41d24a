//go:build unix

package chunkcache

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openFlags are added to the flags of the files Get opens: a FIFO left in
// the directory must not block a Get.
const openFlags = unix.O_NONBLOCK

const (
	lockShared    = unix.LOCK_SH
	lockExclusive = unix.LOCK_EX
	lockUnlock    = unix.LOCK_UN
)

// flock applies an advisory whole-file lock (flock(2)) to f's open file,
// waiting for it. Locks of different open files conflict, whether they are in
// one process or several; the kernel releases them when the file is closed or
// the process dies.
func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINTR) {
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}

// tryFlock is flock without waiting: it reports false if another open file
// holds a conflicting lock.
func tryFlock(f *os.File, how int) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case !errors.Is(err, unix.EINTR):
			return false, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}
