package chunkcache

import (
	"container/list"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultOpenFiles is how many object files a Disk handle keeps open for
// ReadRange by default (Options.OpenFiles).
const DefaultOpenFiles = 256

// openFiles is a Disk handle's bounded set of open object files, the least
// recently used closed first, so that range reads of a cached object cost
// one pread instead of an open, a stat, the pread and a close. Files are
// opened read-only and read with ReadAt, which any number of goroutines may
// call at once.
//
// Lock discipline: mu guards byPath, lru and every entry's refs and elem;
// it is never held across I/O other than a Close of a file no reader holds.
type openFiles struct {
	max    int // at most this many files held; 0: none
	mu     sync.Mutex
	byPath map[string]*openFile
	lru    list.List // of *openFile, most recently used at the front
	opened atomic.Int64
}

// openFile is one open object file.
type openFile struct {
	path   string
	f      *os.File
	fi     fs.FileInfo  // its fstat when it was opened (objects never change)
	marked atomic.Int64 // the recency mark last known, Unix nanoseconds
	refs   int          // readers holding it, plus one while it is in the set
	elem   *list.Element
}

func newOpenFiles(max int) *openFiles {
	return &openFiles{max: max, byPath: make(map[string]*openFile)}
}

// get returns the file held for path, with a reference the caller
// releases, or nil.
func (s *openFiles) get(path string) *openFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byPath[path]
	if e != nil {
		e.refs++
		s.lru.MoveToFront(e.elem)
	}
	return e
}

// add holds f, just opened at path, and returns it with a reference the
// caller releases. If another goroutine added path meanwhile, f is closed
// and that file returned instead. The least recently used files beyond the
// bound leave the set, to be closed by their last reader.
func (s *openFiles) add(path string, f *os.File, fi fs.FileInfo) *openFile {
	s.opened.Add(1)
	e := &openFile{path: path, f: f, fi: fi, refs: 1}
	e.marked.Store(fi.ModTime().UnixNano())
	if s.max <= 0 {
		return e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.byPath[path]; cur != nil {
		_ = f.Close()
		cur.refs++
		s.lru.MoveToFront(cur.elem)
		return cur
	}
	e.refs++
	e.elem = s.lru.PushFront(e)
	s.byPath[path] = e
	for s.lru.Len() > s.max {
		s.removeLocked(s.lru.Back().Value.(*openFile))
	}
	return e
}

// release drops a reference from get or add, closing the file if it has
// left the set and no reader holds it.
func (s *openFiles) release(e *openFile) {
	s.mu.Lock()
	e.refs--
	last := e.refs == 0
	s.mu.Unlock()
	if last {
		_ = e.f.Close()
	}
}

// drop takes the file held for path, if any, out of the set: the object
// was removed or replaced. Readers holding it finish their reads first.
func (s *openFiles) drop(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byPath[path]; e != nil {
		s.removeLocked(e)
	}
}

// dropFile is drop of e only, not of a file added for its path since.
func (s *openFiles) dropFile(e *openFile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byPath[e.path] == e {
		s.removeLocked(e)
	}
}

func (s *openFiles) removeLocked(e *openFile) {
	delete(s.byPath, e.path)
	s.lru.Remove(e.elem)
	e.elem = nil
	if e.refs--; e.refs == 0 {
		_ = e.f.Close()
	}
}

// closeAll empties the set; at Close, when no reader holds a file.
func (s *openFiles) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.byPath {
		s.removeLocked(e)
	}
}

// held returns the number of files in the set.
func (s *openFiles) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byPath)
}

// openObject returns the open file of the object at p, from the set or
// newly opened, with a reference the caller releases, and marks the object
// used (Disk.touch). A held file is checked against the path when its mark
// is due (at most once per TouchInterval): if another process has evicted
// or replaced the object since it was opened, the file leaves the set and
// the path is opened again, so a handle sees another's eviction within one
// TouchInterval, as a miss.
func (d *Disk) openObject(p string) (*openFile, error) {
	now := time.Now()
	if e := d.files.get(p); e != nil {
		if !d.markDue(e.marked.Load(), now) {
			return e, nil
		}
		if cur, err := os.Stat(p); err == nil && os.SameFile(cur, e.fi) {
			d.mark(p, e, now)
			return e, nil
		}
		d.files.dropFile(e)
		d.files.release(e)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	e := d.files.add(p, f, fi)
	if d.markDue(e.marked.Load(), now) {
		d.mark(p, e, now)
	}
	return e, nil
}

// markDue reports whether a hit at now renews a mark made at marked.
func (d *Disk) markDue(marked int64, now time.Time) bool {
	return d.touchInterval < 0 || now.Sub(time.Unix(0, marked)) >= d.touchInterval
}

// mark sets the object's recency mark to now; failures are ignored, as in
// touch.
func (d *Disk) mark(p string, e *openFile, now time.Time) {
	if os.Chtimes(p, now, now) == nil {
		e.marked.Store(now.UnixNano())
	}
}
