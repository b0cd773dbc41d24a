//go:build unix

package ingest

import (
	"io/fs"
	"slices"

	"golang.org/x/sys/unix"
)

// appendFile appends the bytes of the local file name, which the listing
// says holds size bytes (negative: unknown), to buf, as os.ReadFile reads
// them but with only the system calls it needs: open, reads to end of
// file, close. os.ReadFile also stats the file and registers it with the
// poller (nine calls instead of four), which is a third of the CPU an
// image folder's ingest spends per file. A read that returns fewer bytes
// than asked, ending at the listed size, ends the file (no read to find
// the end: three calls). A file that grew since it was listed is read
// whole all the same. buf grows (a new array) only when it
// has no room for size+1 more bytes: the read that finds the end needs one.
func appendFile(buf []byte, name string, size int64) ([]byte, error) {
	if size < 0 {
		return appendWhole(buf, name)
	}
	return appendAt(buf, unix.AT_FDCWD, name, name, size)
}

// appendAt is appendFile of the file path, relative to the directory dirfd
// (or unix.AT_FDCWD), whose name for errors is name.
func appendAt(buf []byte, dirfd int, path, name string, size int64) ([]byte, error) {
	var (
		fd  int
		err error
	)
	for {
		fd, err = unix.Openat(dirfd, path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	buf = slices.Grow(buf, int(size)+1)
	start := len(buf)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		asked := cap(buf) - len(buf)
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if n < asked && int64(len(buf)-start) == size {
			// A short read that ends at the listed size is the end of the
			// file: a regular file reads short only there. The read that
			// would return 0 is a tenth of the system calls per file.
			return buf, nil
		}
	}
}

// openDir is the directory a job's files are opened relative to
// (openat(2)): the kernel then looks up one name per file rather than
// every folder of its path, a tenth of the system time an image folder's
// ingest spends opening files. Its zero value holds none; close releases
// it. It is used by one goroutine.
type openDir struct {
	path string
	fd   int
	open bool
}

// appendFile appends the bytes of the file base of the directory dir,
// whose path is name and size bytes are listed, to buf (appendFile).
func (d *openDir) appendFile(buf []byte, dir, base, name string, size int64) ([]byte, error) {
	if size < 0 {
		return appendWhole(buf, name)
	}
	if !d.open || d.path != dir {
		d.close()
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return appendFile(buf, name, size) // its error, if any, names the file
		}
		d.path, d.fd, d.open = dir, fd, true
	}
	return appendAt(buf, d.fd, base, name, size)
}

// close closes the directory held, if any.
func (d *openDir) close() {
	if d.open {
		unix.Close(d.fd)
		d.open = false
	}
}
