package storage

import (
	"context"
	"errors"
	"time"

	"github.com/lochdata/loch/internal/base"
)

// Sentinel errors. Every error returned by a Store wraps one of these when
// it applies, so callers branch with errors.Is. ErrNotFound, ErrExists and
// ErrPermission are loch's shared sentinels (loch.ErrNotFound, ...);
// ErrInvalidURL and ErrInvalidKey are storage's own and match
// loch.ErrInvalidArgument too.
var (
	// ErrNotFound: the object (or the bucket) does not exist.
	ErrNotFound = base.ErrNotFound
	// ErrExists: PutIfAbsent found the key already present.
	ErrExists = base.ErrExists
	// ErrInvalidURL: the URL names no supported backend or is malformed.
	ErrInvalidURL = base.Mark(base.ErrInvalidArgument, "storage: invalid url", nil)
	// ErrPermission: credentials are missing or refused.
	ErrPermission = base.ErrPermission
	// ErrInvalidKey: the key is not a valid relative key (see ValidateKey);
	// such keys are rejected before any I/O, by every Store.
	ErrInvalidKey = base.Mark(base.ErrInvalidArgument, "storage: invalid key", nil)
	// ErrTransient: a failure that may succeed when tried again (a timeout,
	// throttling, an HTTP 5xx, a reset connection, a truncated read). The
	// retrying Store returned by Open retries these; an error that still
	// wraps ErrTransient was retried until the RetryPolicy gave up.
	ErrTransient = errors.New("storage: transient failure")
	// ErrTooLarge: ReadURL found the object larger than its WithMaxBytes
	// limit. It matches loch.ErrInvalidArgument too.
	ErrTooLarge = base.Mark(base.ErrInvalidArgument, "storage: object too large", nil)
)

// Attrs describes one stored object.
type Attrs struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// Store is a flat key space of immutable-ish objects: a local directory, a
// memory bucket or a prefix in an object store. Keys use '/' as separator and
// never start with '/' nor contain "." or ".." segments.
//
// All methods are safe for concurrent use. Slices passed in are not retained;
// slices returned belong to the caller.
//
// Keys are checked with ValidateKey before any I/O. Failures are *Error
// values (naming the operation, URL and key) wrapping the sentinels above
// where one applies; a store never returns an error holding credentials.
// Implementations pass the suite in package storagetest.
type Store interface {
	// Get returns the whole object.
	Get(ctx context.Context, key string) ([]byte, error)
	// ReadRange fills dst with the object's bytes [off, off+len(dst)).
	// Reading past the end is an error wrapping io.ErrUnexpectedEOF.
	ReadRange(ctx context.Context, key string, off int64, dst []byte) error
	// Put writes the object, replacing any previous one. The object becomes
	// visible whole or not at all.
	Put(ctx context.Context, key string, data []byte) error
	// PutIfAbsent writes the object only if the key does not exist, atomically
	// with respect to every other writer (processes and machines included). If
	// it exists, it returns an error wrapping ErrExists and changes nothing.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// Delete removes the object; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Stat returns the object's attributes, or ErrNotFound.
	Stat(ctx context.Context, key string) (Attrs, error)
	// List calls fn for each object whose key starts with prefix, in
	// lexicographic key order. An error from fn stops the listing and is
	// returned.
	List(ctx context.Context, prefix string, fn func(Attrs) error) error
	// URL returns the store's URL with any secrets removed; safe to print.
	URL() string
	// Close releases the store's resources.
	Close() error
}
