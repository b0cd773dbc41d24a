package loch

import (
	"errors"
	"fmt"

	"github.com/lochdata/loch/chunk"
	"github.com/lochdata/loch/manifest"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// Errors that callers branch on with errors.Is. Errors from lower layers are
// wrapped so that these match them too.
var (
	// ErrNotFound: no dataset, version, column, row or object of that name.
	ErrNotFound = errors.New("not found")
	// ErrNoDataset: no dataset at the URL (where the store itself is
	// reachable). It matches ErrNotFound too; a missing branch, tag or
	// version of an existing dataset is ErrNotFound only.
	ErrNoDataset = fmt.Errorf("no loch dataset there: %w", ErrNotFound)
	// ErrExists: a dataset already exists at the URL.
	ErrExists = errors.New("already exists")
	// ErrCorrupt: stored bytes fail their checksums or contradict each other.
	ErrCorrupt = errors.New("corrupt")
	// ErrConflict: a concurrent commit changed what this commit changes.
	ErrConflict = errors.New("conflict")
	// ErrInvalidArgument: a value, shape, dtype, column or option is wrong.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNewerFormat: the data was written by a newer major format version.
	ErrNewerFormat = errors.New("newer format version")
	// ErrReadOnly: a write through a handle opened at a fixed version.
	ErrReadOnly = errors.New("read-only")
	// ErrPermission: credentials are missing or refused by the store.
	ErrPermission = errors.New("permission denied")
)

// classify wraps err with the loch sentinel matching its lower-layer cause,
// prefixed by a context phrase.
func classify(err error, format string, a ...any) error {
	if err == nil {
		return nil
	}
	ctx := fmt.Sprintf(format, a...)
	var sentinel error
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrExists), errors.Is(err, ErrCorrupt),
		errors.Is(err, ErrConflict), errors.Is(err, ErrInvalidArgument), errors.Is(err, ErrNewerFormat), errors.Is(err, ErrReadOnly), errors.Is(err, ErrPermission):
		return fmt.Errorf("%s: %w", ctx, err)
	case errors.Is(err, storage.ErrNotFound):
		sentinel = ErrNotFound
	case errors.Is(err, storage.ErrExists):
		sentinel = ErrExists
	case errors.Is(err, storage.ErrPermission):
		sentinel = ErrPermission
	case errors.Is(err, chunk.ErrNewerFormat), errors.Is(err, manifest.ErrNewerFormat):
		sentinel = ErrNewerFormat
	case errors.Is(err, chunk.ErrCorrupt), errors.Is(err, manifest.ErrCorrupt):
		sentinel = ErrCorrupt
	case errors.Is(err, schema.ErrInvalid), errors.Is(err, storage.ErrInvalidURL):
		sentinel = ErrInvalidArgument
	default:
		return fmt.Errorf("%s: %w", ctx, err)
	}
	return &wrapped{msg: ctx + ": " + err.Error(), sentinel: sentinel, cause: err}
}

// wrapped carries a loch sentinel beside the original cause.
type wrapped struct {
	msg      string
	sentinel error
	cause    error
}

func (w *wrapped) Error() string   { return w.msg }
func (w *wrapped) Unwrap() []error { return []error{w.sentinel, w.cause} }

func invalidf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, a...))
}
