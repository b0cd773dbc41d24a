package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"unsafe"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/transform"
)

// Errors of the ABI itself.
var (
	errNotImplemented = errors.New("not implemented")
	errTimeout        = errors.New("timeout")
	errClosed         = errors.New("closed")
)

// status is the code that classifies err for the caller (loch.h). The loch
// sentinels are tested before ErrInvalidArgument because a read-only or
// permission error may wrap it too.
func status(err error) C.int {
	switch {
	case err == nil:
		return C.LOCH_OK
	case errors.Is(err, io.EOF):
		return C.LOCH_EOF
	case errors.Is(err, errTimeout), errors.Is(err, context.DeadlineExceeded):
		return C.LOCH_TIMEOUT
	case errors.Is(err, errClosed), errors.Is(err, loader.ErrClosed):
		return C.LOCH_CLOSED
	case errors.Is(err, context.Canceled):
		return C.LOCH_CANCELED
	case errors.Is(err, errNotImplemented):
		return C.LOCH_NOT_IMPLEMENTED
	case errors.Is(err, loch.ErrNotFound):
		return C.LOCH_NOT_FOUND
	case errors.Is(err, loch.ErrExists):
		return C.LOCH_EXISTS
	case errors.Is(err, loch.ErrCorrupt), errors.Is(err, transform.ErrDecode):
		return C.LOCH_CORRUPT
	case errors.Is(err, loch.ErrConflict):
		return C.LOCH_CONFLICT
	case errors.Is(err, loch.ErrReadOnly):
		return C.LOCH_READ_ONLY
	case errors.Is(err, loch.ErrPermission):
		return C.LOCH_PERMISSION
	case errors.Is(err, loch.ErrNewerFormat):
		return C.LOCH_NEWER_FORMAT
	case errors.Is(err, loch.ErrInvalidArgument), errors.Is(err, schema.ErrInvalid),
		errors.Is(err, order.ErrInvalid), errors.Is(err, order.ErrMismatch),
		errors.Is(err, transform.ErrSpec), errors.Is(err, transform.ErrInput):
		return C.LOCH_INVALID_ARGUMENT
	}
	return C.LOCH_ERR
}

// fail stores err's message in *errOut (when errOut is not nil) and
// returns its status.
func fail(errOut **C.char, err error) C.int {
	if errOut != nil {
		*errOut = C.CString(err.Error())
	}
	return status(err)
}

// result is fail for a possibly nil error.
func result(errOut **C.char, err error) C.int {
	if err == nil {
		return C.LOCH_OK
	}
	return fail(errOut, err)
}

// guard turns a panic of an exported function into LOCH_INTERNAL. Every
// export defers it with its named status result.
func guard(st *C.int, errOut **C.char) {
	r := recover()
	if r == nil {
		return
	}
	fail(errOut, fmt.Errorf("loch: internal error (please report it): %v\n%s", r, debug.Stack()))
	*st = C.LOCH_INTERNAL
}

// invalidf is an ErrInvalidArgument error.
func invalidf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", loch.ErrInvalidArgument, fmt.Sprintf(format, a...))
}

// goString copies a C string that may be NULL.
func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

// setString stores a newly allocated copy of s in *out.
func setString(out **C.char, s string) error {
	if out == nil {
		return invalidf("output pointer is NULL")
	}
	*out = C.CString(s)
	return nil
}

// loch_free_string frees a string returned by any loch function.
//
//export loch_free_string
func loch_free_string(s *C.char) {
	C.free(unsafe.Pointer(s))
}

// loch_abi_version returns LOCH_ABI_VERSION.
//
//export loch_abi_version
func loch_abi_version() C.int { return C.LOCH_ABI_VERSION }
