package loch

import (
	"fmt"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
)

// Errors that callers branch on with errors.Is. They are the sentinels of
// every layer of loch (storage, chunk and metadata decoding, schemas,
// the loader's order), so an error from any of them matches these.
var (
	// ErrNotFound: no dataset, version, column, row or object of that name.
	ErrNotFound = base.ErrNotFound
	// ErrNoDataset: no dataset at the URL (where the store itself is
	// reachable). It matches ErrNotFound too; a missing branch, tag or
	// version of an existing dataset is ErrNotFound only.
	ErrNoDataset = fmt.Errorf("no loch dataset there: %w", ErrNotFound)
	// ErrExists: a dataset already exists at the URL.
	ErrExists = base.ErrExists
	// ErrCorrupt: stored bytes fail their checksums or contradict each other.
	ErrCorrupt = base.ErrCorrupt
	// ErrConflict: a concurrent commit changed what this commit changes.
	ErrConflict = base.ErrConflict
	// ErrInvalidArgument: a value, shape, dtype, column or option is wrong.
	ErrInvalidArgument = base.ErrInvalidArgument
	// ErrNewerFormat: the data was written by a newer major format version.
	ErrNewerFormat = base.ErrNewerFormat
	// ErrReadOnly: a write through a handle opened at a fixed version.
	ErrReadOnly = base.ErrReadOnly
	// ErrPermission: credentials are missing or refused by the store.
	ErrPermission = base.ErrPermission
	// ErrTooLarge: a sample or file whose decoded size is more than the
	// decode limit (MaxDecodeBytes), refused from its header before it is
	// decoded. It matches ErrInvalidArgument too, never ErrCorrupt.
	ErrTooLarge = decodelimit.ErrTooLarge
)

// invalidf is an ErrInvalidArgument error: the message, then the kind.
func invalidf(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), ErrInvalidArgument)
}
