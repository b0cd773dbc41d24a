//go:build unix

package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

const mapSupported = true

// mapFile maps the first size bytes of f, read-only and shared (the page
// cache's pages themselves). An empty file maps to an empty slice.
func mapFile(f *os.File, size int64) (*Mapped, error) {
	if size == 0 {
		return &Mapped{Data: []byte{}}, nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	page := int64(os.Getpagesize())
	drop := func(off, n int64) {
		s := off &^ (page - 1)
		e := min(off+n, int64(len(b)))
		if s < e {
			// Advice only: a failure leaves the pages resident.
			_ = unix.Madvise(b[s:e], unix.MADV_DONTNEED)
		}
	}
	return &Mapped{Data: b, unmap: func() error { return unix.Munmap(b) }, drop: drop}, nil
}
