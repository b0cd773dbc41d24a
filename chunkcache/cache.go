package chunkcache

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/zeebo/xxh3"
)

// Errors that callers branch on with errors.Is.
var (
	// ErrInvalidKey: the key is not a valid cache key (see ValidateKey).
	// Such keys are rejected before any I/O by Get and Put of every Cache.
	// It matches loch.ErrInvalidArgument too.
	ErrInvalidKey = base.Mark(base.ErrInvalidArgument, "chunkcache: invalid key", nil)
	// ErrCorrupt: Put was given bytes that do not hash to the content hash
	// their key names. (Get never returns it: a cached object that fails
	// verification is removed and reported as a miss.) It is loch's shared
	// ErrCorrupt (loch.ErrCorrupt).
	ErrCorrupt = base.ErrCorrupt
	// ErrCacheWrite: Put could not store the object: a full disk, an
	// unwritable directory, an object larger than the whole cache. The cache
	// is left as it was (the key may or may not be cached, nothing is
	// corrupt), so a caller that uses the cache as an optimisation may
	// ignore this error.
	ErrCacheWrite = errors.New("chunkcache: cache write failed")
	// ErrCacheRead: Get found the object but could not read it for a reason
	// other than its absence or corruption (permissions, an I/O error). A
	// caller may fetch the object from its origin instead.
	ErrCacheRead = errors.New("chunkcache: cache read failed")
	// ErrClosed: the cache was used after Close.
	ErrClosed = errors.New("chunkcache: cache closed")
)

// Cache holds immutable objects by key, bounded in bytes, dropping the least
// recently used first. Keys are storage keys such as "chunks/ab/ab12...";
// the object under a key never changes (loch's keys name content), so a
// cache never has to invalidate.
//
// All methods are safe for concurrent use. Implementations in this package
// pass the suite in package chunkcachetest.
type Cache interface {
	// Get returns the cached bytes of key and ok=true, or ok=false on a miss.
	// The returned slice is the caller's to keep and modify. A hit makes key
	// the most recently used. When the key's last segment is a content hash
	// (32 lowercase hex digits, the XXH3-128 of the bytes), Get never returns
	// bytes that do not match it: a cached object that fails the check is
	// dropped and reported as a miss.
	//
	// Errors wrap ErrInvalidKey, ErrCacheRead, ErrClosed or the context's
	// error; ok is false whenever err is not nil.
	Get(ctx context.Context, key string) (data []byte, ok bool, err error)

	// Put stores data under key, making it the most recently used, and
	// evicts the least recently used objects until the cache is within its
	// budget again. data is not retained. Put is idempotent: storing a key
	// that is cached already only marks it used; concurrent Puts of the same
	// key (from several goroutines or processes) are safe and store it once.
	// When the key's last segment is a content hash, Put checks data against
	// it first.
	//
	// Errors wrap ErrInvalidKey, ErrCorrupt, ErrCacheWrite (safe to ignore:
	// the cache is unharmed), ErrClosed or the context's error.
	Put(ctx context.Context, key string, data []byte) error

	// Stats returns the counters of the operations made through this Cache
	// value since it was made.
	Stats() Stats

	// Close releases the cache's resources. It waits for calls in progress;
	// later calls fail with ErrClosed. Closing twice is not an error. Close
	// leaves the cached objects in place (a Disk cache keeps them on disk).
	Close() error
}

// RangeReader is implemented by caches that can read part of a cached
// object without reading the rest (Disk and Memory do): a reader that
// needs a few blocks of a large chunk gets them locally.
//
// Range reads are not verified against a content hash (a hash covers the
// whole object): callers verify what they read by other means. loch checks
// chunk headers and blocks against their CRC-32C checksums, and on a
// mismatch calls Get, which verifies the whole object and drops it if it
// is damaged.
type RangeReader interface {
	// ReadRange fills buf with the bytes [off, off+len(buf)) of key's
	// object and returns ok=true, or returns ok=false on a miss: no such
	// object, or one that ends before off+len(buf). A hit makes key the
	// most recently used and counts as a hit of len(buf) bytes in Stats.
	//
	// Errors wrap ErrInvalidKey, ErrCacheRead, ErrClosed, the context's
	// error, or loch's ErrInvalidArgument for a negative off; ok is false
	// whenever err is not nil, and buf's contents are then undefined.
	ReadRange(ctx context.Context, key string, off int64, buf []byte) (ok bool, err error)
}

// Filler is implemented by caches that several processes share (Disk)
// to take turns at filling a missing object: of the users that miss one
// key at once, in any of the processes, one fetches it from its origin
// and puts it while the others wait for their turn, in which they find it
// cached. Without turns each process fetches the object itself: the ranks
// of a node that read the same chunks at the same time (in a block
// shuffle every rank reads from the same window's segments) would each
// fetch every chunk from the object store on a cold cache.
type Filler interface {
	// FillTurn waits until no other user of the cache has key's turn, then
	// gives the caller the turn until it calls done (once). The caller
	// looks the key up again (Get) in its turn before it fetches: another
	// may have put it meanwhile (if the holder could not put it, on a full
	// disk, the next in turn fetches it too). A turn held longer than the
	// cache's fill wait (a holder that hangs) is not waited for beyond it:
	// FillTurn then returns as if the turn were the caller's. Turns are
	// advisory; Put and Get never wait for them. Different keys rarely
	// share a turn (they are spread over a few thousand).
	//
	// Errors wrap ErrInvalidKey, ErrCacheRead (the turn could not be taken:
	// the caller may fetch without it), ErrClosed or the context's error.
	FillTurn(ctx context.Context, key string) (done func(), err error)
}

// Stats counts the operations made through one Cache value (one process's
// handle, for a Disk cache shared with others).
type Stats struct {
	Hits         int64 // Gets and ReadRanges that returned cached bytes
	Misses       int64 // Gets and ReadRanges that returned ok=false, corrupt objects included
	ReadBytes    int64 // bytes returned by hits
	Puts         int64 // Puts that stored a new object
	WrittenBytes int64 // bytes stored by those Puts
	Evictions    int64 // objects evicted by this handle to stay within budget
	EvictedBytes int64 // bytes of those objects
	Corrupt      int64 // cached objects that failed verification and were dropped
}

// counters is the concurrent form of Stats.
type counters struct {
	hits, misses, readBytes, puts, writtenBytes, evictions, evictedBytes, corrupt atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Hits:         c.hits.Load(),
		Misses:       c.misses.Load(),
		ReadBytes:    c.readBytes.Load(),
		Puts:         c.puts.Load(),
		WrittenBytes: c.writtenBytes.Load(),
		Evictions:    c.evictions.Load(),
		EvictedBytes: c.evictedBytes.Load(),
		Corrupt:      c.corrupt.Load(),
	}
}

func (c *counters) hit(n int) {
	c.hits.Add(1)
	c.readBytes.Add(int64(n))
}

func (c *counters) put(n int) {
	c.puts.Add(1)
	c.writtenBytes.Add(int64(n))
}

func (c *counters) evicted(n int64) {
	c.evictions.Add(1)
	c.evictedBytes.Add(n)
}

// maxSegmentLen bounds a key's segments: a segment is a file name in a Disk
// cache, hence NAME_MAX.
const maxSegmentLen = 255

// ValidateKey returns nil if key is a valid cache key, and otherwise an error
// wrapping ErrInvalidKey that says why. A valid key follows the rules of
// every loch key (keys.CheckPath: non-empty valid UTF-8 of at most 1024
// bytes, made of '/'-separated segments, none empty, "." or "..", with no
// backslash and no control character) and its segments are at most 255
// bytes long. So it is relative and never escapes the cache's directory.
// Every valid storage key with segments of at most 255 bytes is a valid
// cache key.
func ValidateKey(key string) error {
	if err := keys.CheckPath(key, fileName); err != nil {
		return invalidKey(err.Error())
	}
	return nil
}

// fileName refuses a segment too long to be a file name.
func fileName(seg string) error {
	if len(seg) > maxSegmentLen {
		return fmt.Errorf("key segment of %d bytes is longer than %d", len(seg), maxSegmentLen)
	}
	return nil
}

// contentHash returns the hash that key's last segment names, if that
// segment is a content hash: 32 lowercase hex digits.
func contentHash(key string) (h [16]byte, ok bool) {
	seg := key[strings.LastIndexByte(key, '/')+1:]
	if len(seg) != 32 {
		return h, false
	}
	for i := 0; i < len(seg); i++ {
		if c := seg[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return h, false
		}
	}
	if _, err := hex.Decode(h[:], []byte(seg)); err != nil {
		return h, false
	}
	return h, true
}

// matches reports whether data hashes to h.
func matches(h [16]byte, data []byte) bool {
	return xxh3.Hash128(data).Bytes() == h
}

// checkContent returns an error wrapping ErrCorrupt if key names a content
// hash that data does not have.
func checkContent(key string, data []byte) error {
	if h, ok := contentHash(key); ok && !matches(h, data) {
		return base.Markf(ErrCorrupt, "%d bytes hash to %x, not to the key's hash", len(data), xxh3.Hash128(data).Bytes())
	}
	return nil
}

// The errors below are base.Mark errors: their messages do not repeat the
// "chunkcache:" prefix of the sentinels (opError says it once), while
// errors.Is finds both the sentinel and the cause.

func invalidKey(msg string) error { return base.Mark(ErrInvalidKey, "invalid key: "+msg, nil) }

func writeFailed(msg string, cause error) error {
	return base.Mark(ErrCacheWrite, msg, cause)
}

func readFailed(msg string, cause error) error {
	return base.Mark(ErrCacheRead, msg, cause)
}

func closed() error { return base.Mark(ErrClosed, "cache closed", nil) }

// badOffset refuses a range read at a negative offset.
func badOffset(off int64) error {
	return base.Markf(base.ErrInvalidArgument, "range read at offset %d", off)
}

// opError puts the package, the operation and the key in front of err.
func opError(op, key string, err error) error {
	return fmt.Errorf("chunkcache: %s %q: %w", op, key, err)
}

// tooLarge reports a Put of an object bigger than the whole budget.
func tooLarge(n int, max int64) error {
	return writeFailed(fmt.Sprintf("object of %d bytes is larger than the cache's budget of %d bytes", n, max), nil)
}
