//go:build linux

package storage

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A local object of at least directMin bytes is written to its temporary
// file past the page cache (O_DIRECT): its whole 4 KiB blocks through an
// aligned staging buffer of directPiece bytes, its tail as usual. Writing a
// large object through the page cache costs the writer a copy into newly
// allocated cache pages (large folios, which on a fragmented machine means
// direct compaction), then their writeback at fsync and their reclaim: on
// the 2-core VM three times the kernel time of an image folder's ingest
// (bench/history/2026-11-30-ing-2.md). A direct write hands the device the
// staging buffer, which stays in the CPU's cache. The file is synced all
// the same: Put's durability is fsync's, not O_DIRECT's. A file system
// that refuses O_DIRECT (EINVAL when it is set, or on a write) gets the
// rest of the bytes through the page cache; any other error is the
// write's. What the direct path costs: the object is not in the page cache
// after its Put, so its first read comes from the device, and the cache
// pages that read fills are smaller than a write's, which makes mapping
// them cost more faults. Hence a store does it only when opened
// WithDirectWrites (see directWrites).
const (
	directMin   = 1 << 20
	directAlign = 4096
	directPiece = 1 << 20
)

// directBytes counts the bytes written past the page cache (for tests).
var directBytes atomic.Int64

// directBufs holds staging buffers with room for directPiece aligned bytes.
var directBufs = sync.Pool{New: func() any {
	b := make([]byte, directPiece+directAlign)
	return &b
}}

// writeData writes data to the new, empty file f, past the page cache
// where direct is set and data is large enough.
func writeData(f *os.File, data []byte, direct bool) error {
	done := 0
	if direct && len(data) >= directMin {
		var err error
		done, err = writeDirect(f, data[:len(data)&^(directAlign-1)])
		if err != nil {
			return err
		}
	}
	_, err := f.Write(data[done:])
	return err
}

// writeDirect writes data, a multiple of directAlign bytes long, at the
// start of the empty file f with O_DIRECT set for the while, and returns
// how many bytes it wrote: fewer than asked where the file system refused
// direct writes or wrote short, which the caller writes as usual.
func writeDirect(f *os.File, data []byte) (int, error) {
	fd := f.Fd()
	flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
	if err != nil {
		return 0, nil
	}
	if _, err := unix.FcntlInt(fd, unix.F_SETFL, flags|unix.O_DIRECT); err != nil {
		return 0, nil // not supported here
	}
	done, err := writeAligned(f, data)
	if _, cerr := unix.FcntlInt(fd, unix.F_SETFL, flags); err == nil && cerr != nil {
		err = &os.PathError{Op: "fcntl", Path: f.Name(), Err: cerr}
	}
	directBytes.Add(int64(done))
	if errors.Is(err, unix.EINVAL) {
		err = nil // refused after all: the caller writes the rest
	}
	return done, err
}

// writeAligned writes data to f, which has O_DIRECT set and its offset at
// a multiple of directAlign: from data itself when its address is aligned,
// else through a staging buffer.
func writeAligned(f *os.File, data []byte) (int, error) {
	fd := int(f.Fd())
	src := func(b []byte) []byte { return b }
	if uintptr(unsafe.Pointer(unsafe.SliceData(data)))%directAlign != 0 {
		bp := directBufs.Get().(*[]byte)
		defer directBufs.Put(bp)
		off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(*bp))) & (directAlign - 1))
		buf := (*bp)[off : off+directPiece]
		src = func(b []byte) []byte { return buf[:copy(buf, b)] }
	}
	done := 0
	for done < len(data) {
		piece := src(data[done:min(done+directPiece, len(data))])
		n, err := unix.Write(fd, piece)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return done, &os.PathError{Op: "write", Path: f.Name(), Err: err}
		}
		done += n
		if n != len(piece) {
			return done, nil // short: the rest goes through the page cache
		}
	}
	return done, nil
}
