//go:build unix

package ingest

import (
	"io/fs"
	"slices"
	"syscall"
)

// appendFile appends the bytes of the local file name, which the listing
// says holds size bytes (negative: unknown), to buf, as os.ReadFile reads
// them but with only the system calls it needs: open, reads to end of
// file, close. os.ReadFile also stats the file and registers it with the
// poller (nine calls instead of four), which is a third of the CPU an
// image folder's ingest spends per file. A file that grew since it was
// listed is read whole all the same. buf grows (a new array) only when it
// has no room for size+1 more bytes: the read that finds the end needs one.
func appendFile(buf []byte, name string, size int64) ([]byte, error) {
	if size < 0 {
		return appendWhole(buf, name)
	}
	var (
		fd  int
		err error
	)
	for {
		fd, err = syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	buf = slices.Grow(buf, int(size)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}
