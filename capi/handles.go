package main

/*
#include "loch.h"
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
)

// newHandle returns a handle on v for the caller.
func newHandle(v any) C.uintptr_t { return C.uintptr_t(cgo.NewHandle(v)) }

// lookup returns the object of handle h. A zero, deleted or foreign handle
// is an errClosed error, not a panic.
func lookup[T any](h C.uintptr_t, what string) (v T, err error) {
	if h == 0 {
		return v, fmt.Errorf("%s handle is closed: %w", what, errClosed)
	}
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("%s handle %d is closed or invalid: %w", what, uint64(h), errClosed)
		}
	}()
	v, ok := cgo.Handle(h).Value().(T)
	if !ok {
		return v, fmt.Errorf("handle %d is not a %s handle: %w", uint64(h), what, errClosed)
	}
	return v, nil
}

// deleteHandle releases handle h (which lookup has just resolved).
func deleteHandle(h C.uintptr_t) { cgo.Handle(h).Delete() }
