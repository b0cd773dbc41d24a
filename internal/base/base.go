package base

import (
	"errors"
	"fmt"
)

// The shared kinds. Package loch re-exports each under the same name; its
// documentation is the users' reference.
var (
	// ErrNotFound: no dataset, version, column, row, object or bucket of
	// that name.
	ErrNotFound = errors.New("not found")
	// ErrExists: what was to be created exists already.
	ErrExists = errors.New("already exists")
	// ErrCorrupt: stored bytes fail their checksums or contradict each
	// other.
	ErrCorrupt = errors.New("corrupt")
	// ErrConflict: a concurrent change conflicts with this one.
	ErrConflict = errors.New("conflict")
	// ErrInvalidArgument: a value, shape, dtype, name or option is wrong.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNewerFormat: the data was written by a newer major format version.
	ErrNewerFormat = errors.New("newer format version")
	// ErrReadOnly: a write through something that cannot be written.
	ErrReadOnly = errors.New("read-only")
	// ErrPermission: credentials are missing or refused.
	ErrPermission = errors.New("permission denied")
)

// Error is an error of a kind: the one wrapper type that marks errors in
// loch. Mark and Markf make them; errors.As finds them. An *Error is
// immutable and safe to share.
type Error struct {
	kind  error
	msg   string
	cause error
}

// Mark returns an error of the given kind. Its message is msg, followed by
// ": " and cause's message when cause is not nil, or cause's message alone
// when msg is empty; the kind adds no text (see the package doc). The
// error matches kind (and whatever kind matches) and cause with errors.Is
// and errors.As. A nil kind is allowed and marks nothing.
//
// With a nil cause, Mark also defines a package's own kind:
//
//	var ErrInvalidKey = base.Mark(base.ErrInvalidArgument, "storage: invalid key", nil)
func Mark(kind error, msg string, cause error) error {
	return &Error{kind: kind, msg: msg, cause: cause}
}

// Markf returns an error of the given kind whose message is
// fmt.Sprintf(format, a...). A %w verb wraps its operand as fmt.Errorf
// does, so the error matches the operand too.
func Markf(kind error, format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	if errors.Unwrap(err) == nil && !isMulti(err) {
		return &Error{kind: kind, msg: err.Error()}
	}
	return &Error{kind: kind, cause: err}
}

// isMulti reports whether err wraps several errors (fmt.Errorf with more
// than one %w).
func isMulti(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}

// Error returns the message.
func (e *Error) Error() string {
	switch {
	case e.cause == nil:
		return e.msg
	case e.msg == "":
		return e.cause.Error()
	default:
		return e.msg + ": " + e.cause.Error()
	}
}

// Unwrap returns the kind and the cause, leaving out whichever is nil.
func (e *Error) Unwrap() []error {
	switch {
	case e.kind == nil && e.cause == nil:
		return nil
	case e.kind == nil:
		return []error{e.cause}
	case e.cause == nil:
		return []error{e.kind}
	default:
		return []error{e.kind, e.cause}
	}
}
