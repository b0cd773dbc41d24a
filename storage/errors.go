package storage

import (
	"errors"
	"fmt"
	"io"
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

// kindError ties a short message and an optional underlying cause to one of
// the package sentinels, so that messages read "not found" rather than
// repeating the "storage:" prefix of the sentinel, while errors.Is still
// finds the sentinel and the cause.
type kindError struct {
	kind   error
	msg    string
	cause  error
	bucket bool // a missing bucket, not a missing object
}

func (k *kindError) Error() string {
	if k.cause == nil {
		return k.msg
	}
	return k.msg + ": " + k.cause.Error()
}

func (k *kindError) Unwrap() []error {
	if k.cause == nil {
		return []error{k.kind}
	}
	return []error{k.kind, k.cause}
}

func notFound(cause error) error {
	return &kindError{kind: ErrNotFound, msg: "not found", cause: cause}
}

func bucketNotFound(bucket string, cause error) error {
	return &kindError{kind: ErrNotFound, msg: fmt.Sprintf("bucket %q not found", bucket), cause: cause, bucket: true}
}

// isBucketNotFound reports whether err says the bucket itself is missing.
func isBucketNotFound(err error) bool {
	var k *kindError
	return errors.As(err, &k) && k.bucket
}

func exists() error {
	return &kindError{kind: ErrExists, msg: "already exists"}
}

func permission(bucket string, cause error) error {
	msg := "permission denied"
	if bucket != "" {
		msg = fmt.Sprintf("permission denied on bucket %q (missing or refused credentials)", bucket)
	}
	return &kindError{kind: ErrPermission, msg: msg, cause: cause}
}

func transient(cause error) error {
	return &kindError{kind: ErrTransient, msg: "transient failure", cause: cause}
}

func invalidKey(msg string) error {
	return &kindError{kind: ErrInvalidKey, msg: msg}
}

func invalidURL(msg string, cause error) error {
	return &kindError{kind: ErrInvalidURL, msg: msg, cause: cause}
}

// pastEnd reports a ReadRange beyond the end of the object. It wraps
// io.ErrUnexpectedEOF, as the Store contract says, and not ErrTransient:
// trying again cannot help.
func pastEnd(off int64, n int, size int64) error {
	return &kindError{
		kind: io.ErrUnexpectedEOF,
		msg:  fmt.Sprintf("range [%d, %d) past end of %d-byte object", off, off+int64(n), size),
	}
}

// truncated reports a read that ended before the bytes the object holds: a
// connection cut mid-body. It is transient, and deliberately does not wrap
// io.ErrUnexpectedEOF, which callers may take for a read past the end.
func truncated(got, want int) error {
	return &kindError{kind: ErrTransient, msg: fmt.Sprintf("transient failure: read cut short after %d of %d bytes", got, want)}
}
