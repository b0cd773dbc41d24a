package chunkcache

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeebo/xxh3"
)

// Names inside a Disk cache's directory (see the package documentation).
const (
	objectsDir    = "objects"    // the objects, one file per key, at objects/<key>
	tmpDir        = "tmp"        // temporary files of Puts in progress
	stateFile     = "state"      // the recorded total; its flock guards every change
	usersFile     = "users.lock" // flocked shared by every open Disk
	locksDir      = "locks"      // the fill turns' lock files, locks/<3 hex digits>
	tmpFilePrefix = "put-"       // names of temporary files in tmp/
)

// The state file: 16 bytes.
//
//	offset  size  field
//	0       4     magic "LCC1"
//	4       4     zero
//	8       8     total length of the objects, int64 little-endian
const (
	stateMagic = "LCC1"
	stateSize  = 16
)

// Defaults for Options.
const (
	// DefaultTouchInterval is how old a hit's recency mark must be before the
	// hit renews it.
	DefaultTouchInterval = time.Second
	// DefaultStaleTempAge is the age after which a temporary file is taken
	// for the leftover of a killed process and removed while other processes
	// use the cache.
	DefaultStaleTempAge = 15 * time.Minute
	// DefaultFillWait is the longest FillTurn waits for another user's turn
	// on the same key: far longer than fetching a chunk takes, retries
	// included, so that only a holder that hangs is not waited for.
	DefaultFillWait = 2 * time.Minute
)

// fillStripes is the number of fill turns' lock files, among which keys are
// spread by hash: two keys share a turn with this probability, so the
// hundred or so fetches a node's processes have in flight rarely wait for
// each other's.
const fillStripes = 4096

// evictBatch is how many of the least recently used objects one directory
// scan keeps as eviction candidates.
const evictBatch = 1024

// Options tune a Disk cache. The zero value gives the defaults.
type Options struct {
	// NoVerify turns off the content-hash checks: Get then returns what the
	// file holds without hashing it, and Put stores data without checking it
	// against its key. By default both check keys whose last segment is a
	// content hash.
	NoVerify bool
	// TouchInterval throttles recency marks: a hit sets its file's
	// modification time to now only if that time is at least TouchInterval
	// old, so a hot object costs one metadata write per interval, and
	// eviction order is least-recently-used to within TouchInterval. Zero
	// means DefaultTouchInterval; a negative value marks every hit.
	TouchInterval time.Duration
	// StaleTempAge is the age after which a temporary file left in tmp/ is
	// removed by a directory scan or an Open while other processes use the
	// cache (an Open that finds no other user removes them all). Zero means
	// DefaultStaleTempAge.
	StaleTempAge time.Duration
	// FillWait bounds FillTurn's wait for another user's turn (see
	// Filler). Zero means DefaultFillWait.
	FillWait time.Duration
	// OpenFiles bounds the object files the handle keeps open for ReadRange
	// (the least recently read are closed first), so that a range read of
	// a held object is one pread. Zero means DefaultOpenFiles; a negative
	// value keeps none (each ReadRange opens and closes the file).
	OpenFiles int
}

// Disk is a Cache in a local directory that any number of processes on the
// machine may share (see the package documentation for the layout, the
// locking and the exact size bound). Safe for concurrent use by goroutines
// and processes. It starts no goroutines.
type Disk struct {
	dir, objects, tmp string
	locks             string
	max               int64
	verify            bool
	touchInterval     time.Duration // negative: every hit
	staleTempAge      time.Duration
	fillWait          time.Duration
	tmpBase           string // random, so that temporary names never collide
	tmpSeq            atomic.Uint64
	stats             counters
	files             *openFiles // held open for ReadRange

	closeMu sync.RWMutex // held shared by calls in progress, exclusive by Close
	closed  bool

	// mu serialises this handle's holding of the state file's flock: a flock
	// belongs to an open file, so goroutines sharing the file are not kept
	// apart by it. mu also guards cands.
	mu    sync.Mutex
	state *os.File
	users *os.File
	cands []candidate // eviction candidates, least recently used first
}

var (
	_ Cache       = (*Disk)(nil)
	_ RangeReader = (*Disk)(nil)
	_ Filler      = (*Disk)(nil)
)

// candidate is an object file as a directory scan saw it.
type candidate struct {
	path  string
	mtime time.Time
	size  int64
}

// Open opens the cache in dir, creating the directory if needed, with a
// budget of maxBytes bytes of objects; opts may be nil for the defaults.
// Processes sharing a directory should use the same budget: each Put keeps
// the cache within the budget of the handle that makes it.
//
// If no other Disk has dir open, Open removes every temporary file and
// recounts the objects (a walk of the directory); otherwise it removes the
// temporary files older than StaleTempAge. If the cache is over budget, Open
// evicts. The caller must Close the Disk.
func Open(dir string, maxBytes int64, opts *Options) (*Disk, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("chunkcache: open %s: budget of %d bytes is not positive", dir, maxBytes)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TouchInterval == 0 {
		o.TouchInterval = DefaultTouchInterval
	}
	if o.StaleTempAge <= 0 {
		o.StaleTempAge = DefaultStaleTempAge
	}
	if o.FillWait <= 0 {
		o.FillWait = DefaultFillWait
	}
	if o.OpenFiles == 0 {
		o.OpenFiles = DefaultOpenFiles
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	d := &Disk{
		dir:           dir,
		objects:       filepath.Join(dir, objectsDir),
		tmp:           filepath.Join(dir, tmpDir),
		locks:         filepath.Join(dir, locksDir),
		max:           maxBytes,
		verify:        !o.NoVerify,
		touchInterval: o.TouchInterval,
		staleTempAge:  o.StaleTempAge,
		fillWait:      o.FillWait,
		tmpBase:       hex.EncodeToString(rnd[:]),
		files:         newOpenFiles(o.OpenFiles),
	}
	if err := d.open(); err != nil {
		d.closeFiles()
		return nil, fmt.Errorf("chunkcache: open %s: %w", dir, err)
	}
	return d, nil
}

func (d *Disk) open() error {
	for _, p := range []string{d.dir, d.objects, d.tmp, d.locks} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	var err error
	if d.users, err = os.OpenFile(filepath.Join(d.dir, usersFile), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return err
	}
	if d.state, err = os.OpenFile(filepath.Join(d.dir, stateFile), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return err
	}
	// An exclusive lock on the users file means no other Disk has the
	// directory open: nobody is writing a temporary file and the recorded
	// total may be left from a crash, so clean up and recount. Openers that
	// come meanwhile wait in their shared lock until this is done.
	sole, err := tryFlock(d.users, lockExclusive)
	if err != nil {
		return err
	}
	if !sole {
		if err := flock(d.users, lockShared); err != nil {
			return err
		}
	}
	if err := d.recover(sole); err != nil {
		return err
	}
	if sole {
		return flock(d.users, lockShared)
	}
	return nil
}

// recover checks the state at Open: with sole use it removes every temporary
// file and recounts, else it recounts only if the state is unreadable. Then
// it evicts down to the budget (a smaller one than before, or a Put killed
// between its rename and its eviction, may have left the cache over it).
func (d *Disk) recover(sole bool) error {
	return d.locked(func() error {
		var total int64
		var err error
		if sole {
			if total, err = d.scanLocked(0, evictBatch); err == nil {
				err = d.writeTotal(total)
			}
		} else {
			total, err = d.loadTotalLocked()
			d.removeTemps(d.staleTempAge)
		}
		if err != nil || total <= d.max {
			return err
		}
		if total, err = d.evictLocked(total); err != nil {
			return fmt.Errorf("evict: %w", err)
		}
		return d.writeTotal(total)
	})
}

// Get implements Cache. A hit costs an open, a stat and one read of the
// file, the content-hash check, and at most one metadata write per
// TouchInterval. A file that fails the check, or whose length changes while
// it is read, is removed and counted in Stats.Corrupt. ctx is checked once,
// before any I/O.
func (d *Disk) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := ValidateKey(key); err != nil {
		return nil, false, opError("get", key, err)
	}
	if err := d.enter(); err != nil {
		return nil, false, opError("get", key, err)
	}
	defer d.closeMu.RUnlock()
	if err := ctx.Err(); err != nil {
		return nil, false, opError("get", key, err)
	}
	p := d.path(key)
	data, fi, err := readFile(p)
	switch {
	case err == nil:
	case isAbsent(err):
		d.stats.misses.Add(1)
		return nil, false, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		d.dropCorrupt(p, fi)
		return nil, false, nil
	default:
		return nil, false, opError("get", key, readFailed("read", err))
	}
	if d.verify {
		if h, ok := contentHash(key); ok && !matches(h, data) {
			d.dropCorrupt(p, fi)
			return nil, false, nil
		}
	}
	d.touch(p, fi.ModTime())
	d.stats.hit(len(data))
	return data, true, nil
}

// FillTurn implements Filler with an exclusive flock on one of the files
// in locks/ (the key's hash picks it), polled every 0.5 to 10 ms so that
// the wait ends with ctx. The kernel ends a turn whose process dies.
func (d *Disk) FillTurn(ctx context.Context, key string) (func(), error) {
	if err := ValidateKey(key); err != nil {
		return nil, opError("fill turn", key, err)
	}
	if err := d.enter(); err != nil {
		return nil, opError("fill turn", key, err)
	}
	p := filepath.Join(d.locks, fmt.Sprintf("%03x", xxh3.HashString(key)%fillStripes))
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|openFlags, 0o644)
	d.closeMu.RUnlock() // a wait must not hold Close back
	if err != nil {
		return nil, opError("fill turn", key, readFailed("open lock file", err))
	}
	deadline := time.Now().Add(d.fillWait)
	pause := 500 * time.Microsecond
	for {
		ok, err := tryFlock(f, lockExclusive)
		if err != nil {
			f.Close()
			return nil, opError("fill turn", key, readFailed("lock", err))
		}
		if ok || !time.Now().Before(deadline) {
			var once sync.Once
			return func() { once.Do(func() { f.Close() }) }, nil // closing ends the turn
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, opError("fill turn", key, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 10*time.Millisecond)
	}
}

// ReadRange implements RangeReader: one pread of the object's file, which
// the handle keeps open (Options.OpenFiles; the first read of an object
// opens and stats it), and at most one stat and one metadata write per
// TouchInterval (see "Open files" in the package documentation). The bytes are not
// hashed (see RangeReader). A file shorter than the range is, under a
// content-hash key with verification on, taken for one cut short by a
// crash: it is removed and counted in Stats.Corrupt, so that the caller's
// Put of the object it fetches instead stores it again. ctx is checked
// once, before any I/O.
func (d *Disk) ReadRange(ctx context.Context, key string, off int64, buf []byte) (bool, error) {
	if err := checkReadRange(key, off); err != nil {
		return false, err
	}
	if err := d.enter(); err != nil {
		return false, opError("read range of", key, err)
	}
	defer d.closeMu.RUnlock()
	if err := ctx.Err(); err != nil {
		return false, opError("read range of", key, err)
	}
	p := d.path(key)
	fi, err := d.readAt(p, off, buf)
	switch {
	case err == nil:
	case isAbsent(err):
		d.stats.misses.Add(1)
		return false, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		if _, hashed := contentHash(key); d.verify && hashed {
			d.dropCorrupt(p, fi)
		} else {
			d.stats.misses.Add(1)
		}
		return false, nil
	default:
		return false, opError("read range of", key, readFailed("read", err))
	}
	d.stats.hit(len(buf))
	return true, nil
}

// readAt fills buf from offset off of the object file at p, through the
// handle's open files, and marks the object used. A file that ends before
// off+len(buf) gives io.ErrUnexpectedEOF, with fi set, and leaves the open
// files.
func (d *Disk) readAt(p string, off int64, buf []byte) (fi fs.FileInfo, err error) {
	e, err := d.openObject(p)
	if err != nil {
		return nil, err
	}
	defer d.files.release(e)
	fi = e.fi
	if off > fi.Size() || int64(len(buf)) > fi.Size()-off {
		err = io.ErrUnexpectedEOF
	} else if _, err = e.f.ReadAt(buf, off); err == io.EOF {
		err = io.ErrUnexpectedEOF // cut short since it was opened
	}
	if err != nil {
		d.files.dropFile(e)
	}
	return fi, err
}

// readFile reads the regular file at p whole, in one read of the length a
// stat of the open file gives. A shorter file gives io.ErrUnexpectedEOF, with
// fi set.
func readFile(p string) (data []byte, fi fs.FileInfo, err error) {
	f, err := os.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, errNotRegular
	}
	data = make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fi, err
	}
	return data, fi, nil
}

var errNotRegular = errors.New("not a regular file")

// isAbsent reports whether a read error means there is no object: the file
// is missing, a prefix of the key is a file, or the key names a directory.
func isAbsent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, syscall.EISDIR) || errors.Is(err, errNotRegular)
}

// dropCorrupt counts a corrupt object as a miss and removes its file fi,
// unless another process has replaced it meanwhile. The length the file had
// when it was recorded is unknown (it is corrupt), so the recorded total is
// cleared, and the next operation that needs it recounts.
func (d *Disk) dropCorrupt(p string, fi fs.FileInfo) {
	d.stats.corrupt.Add(1)
	d.stats.misses.Add(1)
	_ = d.locked(func() error {
		cur, err := os.Lstat(p)
		if err != nil || !os.SameFile(cur, fi) {
			return nil
		}
		if err := os.Remove(p); err != nil {
			return nil
		}
		d.files.drop(p)
		_, err = d.state.WriteAt(make([]byte, stateSize), 0)
		return err
	})
}

// Put implements Cache. The data goes to a temporary file in tmp/ first,
// written without holding any lock; then, under the state lock, the file is
// renamed into place, the total updated and, if it is over budget, the least
// recently used objects removed. Put does not sync: after a machine crash a
// content-hash key's object is verified on Get, others are not (see the
// package documentation). ctx is checked once, before any I/O.
func (d *Disk) Put(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return opError("put", key, err)
	}
	if err := d.enter(); err != nil {
		return opError("put", key, err)
	}
	defer d.closeMu.RUnlock()
	if err := ctx.Err(); err != nil {
		return opError("put", key, err)
	}
	if int64(len(data)) > d.max {
		return opError("put", key, tooLarge(len(data), d.max))
	}
	if d.verify {
		if err := checkContent(key, data); err != nil {
			return opError("put", key, err)
		}
	}
	p := d.path(key)
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		d.touch(p, fi.ModTime()) // cached already
		return nil
	}
	tmp, err := d.writeTemp(data)
	if err != nil {
		return opError("put", key, writeFailed("write temporary file", err))
	}
	committed, err := d.commit(tmp, p, int64(len(data)))
	if !committed {
		_ = os.Remove(tmp)
	}
	if err != nil {
		return opError("put", key, err)
	}
	return nil
}

// writeTemp writes data to a new file in tmp/ whose modification time is
// now, precisely (a write alone sets a coarser time), and returns its path.
func (d *Disk) writeTemp(data []byte) (string, error) {
	name := filepath.Join(d.tmp, fmt.Sprintf("%s%s-%d", tmpFilePrefix, d.tmpBase, d.tmpSeq.Add(1)))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) { // tmp/ was removed under us
		if err = os.MkdirAll(d.tmp, 0o755); err == nil {
			f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		}
	}
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		now := time.Now()
		err = os.Chtimes(name, now, now)
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// commit renames tmp to p under the state lock, unless p exists, and evicts.
// It reports whether tmp was renamed (and so must not be removed).
func (d *Disk) commit(tmp, p string, n int64) (committed bool, err error) {
	err = d.locked(func() error {
		total, err := d.loadTotalLocked()
		if err != nil {
			return writeFailed("read state", err)
		}
		switch fi, err := os.Lstat(p); {
		case err == nil && fi.Mode().IsRegular():
			d.touch(p, fi.ModTime()) // another process put it meanwhile
			return nil
		case err == nil:
			return writeFailed(p+" exists and is not a regular file", nil)
		case !errors.Is(err, fs.ErrNotExist):
			return writeFailed("stat", err)
		}
		// Record the object before it appears, so that the recorded total
		// is never less than what is on disk, even if this process dies
		// here.
		if err := d.writeTotal(total + n); err != nil {
			return writeFailed("write state", err)
		}
		if err := d.rename(tmp, p); err != nil {
			_ = d.writeTotal(total)
			return writeFailed("rename into place", err)
		}
		committed = true
		d.files.drop(p) // a file held since another process evicted the object
		total += n
		d.stats.put(int(n))
		if total > d.max {
			var evictErr error
			if total, evictErr = d.evictLocked(total); evictErr != nil {
				// Undo this Put rather than leave the cache over budget.
				if os.Remove(p) == nil {
					d.files.drop(p)
					total -= n
					d.stats.evicted(n)
				}
				_ = d.writeTotal(total)
				return writeFailed("evict", evictErr)
			}
		}
		if err := d.writeTotal(total); err != nil {
			return writeFailed("write state", err)
		}
		return nil
	})
	return committed, err
}

// rename moves tmp to p, making p's directory if it is missing.
func (d *Disk) rename(tmp, p string) error {
	err := os.Rename(tmp, p)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.Rename(tmp, p)
		}
	}
	return err
}

// evictLocked removes the least recently used objects until total is within
// budget, and returns the new total. It takes candidates from the last scan,
// skipping those that are gone or were used or replaced since (those are now
// more recent than every candidate left, so the order stays exact), and
// scans again when they run out. It fails if a scan's candidates all
// resist removal.
func (d *Disk) evictLocked(total int64) (int64, error) {
	batch := evictBatch
	progress := true // since the last scan
	for total > d.max {
		if len(d.cands) == 0 {
			if !progress {
				return total, fmt.Errorf("%d bytes cached, over the budget of %d, and nothing more can be removed", total, d.max)
			}
			scanned, err := d.scanLocked(d.staleTempAge, batch)
			if err != nil {
				return total, fmt.Errorf("scan: %w", err)
			}
			total, progress, batch = scanned, false, 2*batch
			continue
		}
		c := d.cands[0]
		d.cands = d.cands[1:]
		fi, err := os.Lstat(c.path)
		if err != nil || !fi.ModTime().Equal(c.mtime) || fi.Size() != c.size {
			continue
		}
		if err := os.Remove(c.path); err != nil {
			continue
		}
		d.files.drop(c.path)
		total -= c.size
		progress = true
		d.stats.evicted(c.size)
	}
	return total, nil
}

// scanLocked walks the objects and returns their total length. It keeps the
// keep least recently used as eviction candidates and removes the temporary
// files at least staleAge old (all of them if staleAge is 0).
func (d *Disk) scanLocked(staleAge time.Duration, keep int) (int64, error) {
	var (
		total int64
		h     = make(candHeap, 0, keep)
	)
	err := filepath.WalkDir(d.objects, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !e.Type().IsRegular() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		total += fi.Size()
		c := candidate{path: p, mtime: fi.ModTime(), size: fi.Size()}
		switch {
		case len(h) < keep:
			heap.Push(&h, c)
		case c.before(h[0]):
			h[0] = c
			heap.Fix(&h, 0)
		}
		return nil
	})
	if err != nil {
		d.cands = nil
		return 0, err
	}
	// Popping the max-heap yields the most recent first; fill from the back.
	d.cands = make([]candidate, len(h))
	for i := len(d.cands) - 1; i >= 0; i-- {
		d.cands[i] = heap.Pop(&h).(candidate)
	}
	d.removeTemps(staleAge)
	return total, nil
}

// removeTemps removes the temporary files in tmp/ that are at least age old,
// or all of them if age is 0.
func (d *Disk) removeTemps(age time.Duration) {
	entries, err := os.ReadDir(d.tmp)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-age)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpFilePrefix) {
			continue
		}
		if age > 0 {
			fi, err := e.Info()
			if err != nil || fi.ModTime().After(cutoff) {
				continue
			}
		}
		_ = os.Remove(filepath.Join(d.tmp, e.Name()))
	}
}

// before orders candidates by recency, then path.
func (c candidate) before(o candidate) bool {
	if !c.mtime.Equal(o.mtime) {
		return c.mtime.Before(o.mtime)
	}
	return c.path < o.path
}

// candHeap is a max-heap: the most recent candidate on top.
type candHeap []candidate

func (h candHeap) Len() int           { return len(h) }
func (h candHeap) Less(i, j int) bool { return h[j].before(h[i]) }
func (h candHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *candHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// loadTotalLocked returns the recorded total, recounting if the state file
// does not hold a valid one.
func (d *Disk) loadTotalLocked() (int64, error) {
	total, ok, err := d.readTotal()
	if err != nil || ok {
		return total, err
	}
	if total, err = d.scanLocked(d.staleTempAge, evictBatch); err != nil {
		return 0, err
	}
	return total, d.writeTotal(total)
}

// readTotal reads the state file; ok is false if it holds no valid state.
func (d *Disk) readTotal() (total int64, ok bool, err error) {
	var b [stateSize]byte
	if _, err := d.state.ReadAt(b[:], 0); err != nil {
		if err == io.EOF {
			return 0, false, nil
		}
		return 0, false, err
	}
	total = int64(binary.LittleEndian.Uint64(b[8:]))
	if string(b[:4]) != stateMagic || total < 0 {
		return 0, false, nil
	}
	return total, true, nil
}

func (d *Disk) writeTotal(total int64) error {
	var b [stateSize]byte
	copy(b[:], stateMagic)
	binary.LittleEndian.PutUint64(b[8:], uint64(total))
	_, err := d.state.WriteAt(b[:], 0)
	return err
}

// locked runs fn holding mu and the state file's exclusive flock. If the
// state file was removed or replaced since this handle opened it, the lock
// would exclude nobody: locked opens the file at the path again.
func (d *Disk) locked(fn func() error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		if err := flock(d.state, lockExclusive); err != nil {
			return err
		}
		cur, err := d.stateIsCurrent()
		if err != nil || cur {
			if err != nil {
				_ = flock(d.state, lockUnlock)
				return err
			}
			break
		}
		f, err := os.OpenFile(filepath.Join(d.dir, stateFile), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			_ = flock(d.state, lockUnlock)
			return err
		}
		_ = d.state.Close() // releases its lock
		d.state = f
	}
	err := fn()
	if uerr := flock(d.state, lockUnlock); err == nil {
		err = uerr
	}
	return err
}

// stateIsCurrent reports whether the open state file is the one at its path.
func (d *Disk) stateIsCurrent() (bool, error) {
	open, err := d.state.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Stat(filepath.Join(d.dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(open, named), nil
}

// touch marks the object at p used now, unless its mark (mtime) is more
// recent than the touch interval. Failures are ignored: recency is a hint.
func (d *Disk) touch(p string, mtime time.Time) {
	now := time.Now()
	if d.touchInterval >= 0 && now.Sub(mtime) < d.touchInterval {
		return
	}
	_ = os.Chtimes(p, now, now)
}

// Size returns the total length of the cached objects, as recorded by all
// the processes sharing the directory (recounting if the record is lost).
func (d *Disk) Size() (int64, error) {
	if err := d.enter(); err != nil {
		return 0, fmt.Errorf("chunkcache: size: %w", err)
	}
	defer d.closeMu.RUnlock()
	var total int64
	err := d.locked(func() (err error) {
		total, err = d.loadTotalLocked()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("chunkcache: size of %s: %w", d.dir, err)
	}
	return total, nil
}

// Dir returns the cache's directory.
func (d *Disk) Dir() string { return d.dir }

// Stats implements Cache. Evictions counts only those this handle made.
func (d *Disk) Stats() Stats { return d.stats.snapshot() }

// Close implements Cache. It releases the locks and files; the objects stay.
func (d *Disk) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	d.files.closeAll()
	if err := d.closeFiles(); err != nil {
		return fmt.Errorf("chunkcache: close %s: %w", d.dir, err)
	}
	return nil
}

func (d *Disk) closeFiles() error {
	var errs []error
	for _, f := range []*os.File{d.state, d.users} {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// enter starts a call: it fails after Close, and otherwise holds closeMu
// shared; the caller releases it.
func (d *Disk) enter() error {
	d.closeMu.RLock()
	if d.closed {
		d.closeMu.RUnlock()
		return closed()
	}
	return nil
}

func (d *Disk) path(key string) string {
	return filepath.Join(d.objects, filepath.FromSlash(key))
}
