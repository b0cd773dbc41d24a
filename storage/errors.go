package storage

import (
	"errors"
	"fmt"
	"io"

	"github.com/lochdata/loch/internal/base"
)

// Error records a failed Store operation: what was done, on which store, to
// which key, and why. Every Store returned by this package reports failures
// as an *Error (possibly wrapped); use errors.Is with the package sentinels
// to branch on the cause and errors.As to recover Op and Key.
//
// Its message reads like
//
//	storage: get s3://bkt/pfx key "chunks/ab.chk": not found
type Error struct {
	// Op is the operation: "get", "read", "put", "put-if-absent", "delete",
	// "stat", "list" or "open".
	Op string
	// URL is the store's URL, with secrets removed.
	URL string
	// Key is the object key, or the prefix for "list"; empty for "open".
	Key string
	// Err is the cause. It wraps a sentinel (ErrNotFound, ErrExists, ...)
	// when one applies.
	Err error
}

func (e *Error) Error() string {
	switch {
	case e.Op == "list":
		return fmt.Sprintf("storage: list %s prefix %q: %v", e.URL, e.Key, e.Err)
	case e.Key == "":
		return fmt.Sprintf("storage: %s %s: %v", e.Op, e.URL, e.Err)
	default:
		return fmt.Sprintf("storage: %s %s key %q: %v", e.Op, e.URL, e.Key, e.Err)
	}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// The errors below are base.Mark errors: their messages do not repeat the
// "storage:" prefix of the sentinels (an *Error says it once), while
// errors.Is finds both the sentinel and the cause.

// errBucketNotFound is the kind of a missing bucket, told apart from a
// missing object; it is a kind of ErrNotFound.
var errBucketNotFound = base.Mark(ErrNotFound, "bucket not found", nil)

func notFound(cause error) error {
	return base.Mark(ErrNotFound, "not found", cause)
}

func bucketNotFound(bucket string, cause error) error {
	return base.Mark(errBucketNotFound, fmt.Sprintf("bucket %q not found", bucket), cause)
}

// IsBucketNotFound reports whether err, one of a Store's, says that the
// bucket (or container) itself is missing, not only an object in it.
func IsBucketNotFound(err error) bool {
	return errors.Is(err, errBucketNotFound)
}

func exists() error {
	return base.Mark(ErrExists, "already exists", nil)
}

func permission(bucket string, cause error) error {
	msg := "permission denied"
	if bucket != "" {
		msg = fmt.Sprintf("permission denied on bucket %q (missing or refused credentials)", bucket)
	}
	return base.Mark(ErrPermission, msg, cause)
}

// denied is an ErrPermission error with a message of its own (which
// credentials, where to set them).
func denied(msg string, cause error) error {
	return base.Mark(ErrPermission, msg, cause)
}

func transient(cause error) error {
	return base.Mark(ErrTransient, "transient failure", cause)
}

func invalidKey(msg string) error {
	return base.Mark(ErrInvalidKey, msg, nil)
}

func invalidURL(msg string, cause error) error {
	return base.Mark(ErrInvalidURL, msg, cause)
}

// pastEnd reports a ReadRange beyond the end of the object. It wraps
// io.ErrUnexpectedEOF, as the Store contract says, and not ErrTransient:
// trying again cannot help.
func pastEnd(off int64, n int, size int64) error {
	return base.Markf(io.ErrUnexpectedEOF, "range [%d, %d) past end of %d-byte object", off, off+int64(n), size)
}

// truncated reports a read that ended before the bytes the object holds: a
// connection cut mid-body. It is transient, and deliberately does not wrap
// io.ErrUnexpectedEOF, which callers may take for a read past the end.
func truncated(got, want int) error {
	return base.Markf(ErrTransient, "transient failure: read cut short after %d of %d bytes", got, want)
}

// tooLarge reports an object of size bytes (-1: unknown, found by reading
// past the limit) over the limit of WithMaxBytes.
func tooLarge(size, limit int64) error {
	if size < 0 {
		return base.Markf(ErrTooLarge, "object too large: over the limit of %d bytes", limit)
	}
	return base.Markf(ErrTooLarge, "object too large: %d bytes, over the limit of %d", size, limit)
}
