package storage

import (
	"os"
	"sync"

	"github.com/lochdata/loch/internal/lru"
)

// maxOpenFiles bounds the files a local store keeps open for range reads.
const maxOpenFiles = 128

// openFiles keeps recently range-read files open, so that the many small
// reads of one chunk (a loader reading samples by range) cost a pread each
// rather than an open, a stat, a pread and a close. An entry is dropped
// when its key is written or deleted through the store; a file replaced by
// another process is not noticed, which only objects that are never
// rewritten may rely on (ReadRange's callers read chunks, which are
// immutable).
type openFiles struct {
	mu    sync.Mutex
	files *lru.Cache[string, *openFile]
}

// openFile is an open file with the readers using it; it is closed when it
// has left the cache and its last reader is done.
type openFile struct {
	f       *os.File
	size    int64
	readers int
	dropped bool
}

func newOpenFiles() *openFiles {
	return &openFiles{files: lru.New(maxOpenFiles, func(_ string, of *openFile, _ int64) { of.drop() })}
}

// acquire returns the open file of path, opening it if needed; release
// must follow.
func (c *openFiles) acquire(path string) (*openFile, error) {
	c.mu.Lock()
	if of, ok := c.files.Get(path); ok {
		of.readers++
		c.mu.Unlock()
		return of, nil
	}
	c.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, notFound(nil)
	}
	of := &openFile{f: f, size: fi.Size(), readers: 1}
	c.mu.Lock()
	if old, ok := c.files.Get(path); ok {
		old.drop() // opened twice at once: keep the newer
	}
	c.files.Add(path, of, 1)
	c.mu.Unlock()
	return of, nil
}

// release ends a read of of.
func (c *openFiles) release(of *openFile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	of.readers--
	if of.dropped && of.readers == 0 {
		of.f.Close()
	}
}

// forget drops path's open file (it is being written or deleted).
func (c *openFiles) forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if of, ok := c.files.Get(path); ok {
		c.files.Remove(path)
		of.drop()
	}
}

// drop marks of as out of the cache, closing it if no read uses it
// (c.mu held).
func (of *openFile) drop() {
	of.dropped = true
	if of.readers == 0 {
		of.f.Close()
	}
}
