package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/cgo"

	"github.com/lochdata/loch"
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

// withHandle runs fn on the object of handle h, which of resolves, and
// returns fn's status: the preamble and the end of an export that works
// on one handle. It stores the message of fn's error (or of a closed
// handle's) in *errOut, and turns a panic into LOCH_INTERNAL (guard).
func withHandle[T any](h C.uintptr_t, errOut **C.char, of func(C.uintptr_t) (T, error), fn func(T) error) (st C.int) {
	defer guard(&st, errOut)
	v, err := of(h)
	if err != nil {
		return fail(errOut, err)
	}
	return result(errOut, fn(v))
}

// withDataset is withHandle for a dataset handle.
func withDataset(h C.uintptr_t, errOut **C.char, fn func(*dataset) error) C.int {
	return withHandle(h, errOut, datasetOf, fn)
}

// withCatalog is withHandle for a catalog handle.
func withCatalog(h C.uintptr_t, errOut **C.char, fn func(*catalogObj) error) C.int {
	return withHandle(h, errOut, catalogOf, fn)
}

// withLoader is withHandle for a loader handle.
func withLoader(h C.uintptr_t, errOut **C.char, fn func(*loaderObj) error) C.int {
	return withHandle(h, errOut, loaderOf, fn)
}

// withResult is withDataset for a call with a result: it runs fn on the
// handle's dataset in an interruptible context, setting *out to the JSON
// of its result.
func withResult[R any](h C.uintptr_t, out **C.char, errOut **C.char, fn func(context.Context, *dataset) (R, error)) C.int {
	return withDataset(h, errOut, func(ds *dataset) error {
		ctx, done := interruptible()
		defer done()
		res, err := fn(ctx, ds)
		if err != nil {
			return err
		}
		return setJSON(out, res)
	})
}

// withOptions is withResult for a call that takes options: it parses the
// text of options with parse and runs fn with them.
func withOptions[O, R any](h C.uintptr_t, options *C.char, out **C.char, errOut **C.char,
	parse func(string) (O, error), fn func(*loch.Dataset, context.Context, O) (R, error)) C.int {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (R, error) {
		opts, err := parse(goString(options))
		if err != nil {
			var none R
			return none, err
		}
		return fn(ds.d, ctx, opts)
	})
}
