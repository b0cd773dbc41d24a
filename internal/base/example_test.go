package base_test

import (
	"errors"
	"fmt"

	"github.com/lochdata/loch/internal/base"
)

// A package defines its own kind as a marked shared one, makes leaf errors
// with Mark or Markf, and callers add context in front with fmt.Errorf.
func Example() {
	// In the package: its own kind, and a leaf error of that kind that says
	// what was found and what was expected.
	errInvalidKey := base.Mark(base.ErrInvalidArgument, "store: invalid key", nil)
	leaf := base.Markf(errInvalidKey, "key %q has a %q segment, want none", "a/../b", "..")

	// In its caller: context first, then the cause.
	err := fmt.Errorf("read chunk %s: %w", "a/../b", leaf)

	fmt.Println(err)
	fmt.Println(errors.Is(err, errInvalidKey), errors.Is(err, base.ErrInvalidArgument), errors.Is(err, base.ErrNotFound))
	// Output:
	// read chunk a/../b: key "a/../b" has a ".." segment, want none
	// true true false
}
