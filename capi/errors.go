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
)

// Errors of the ABI itself.
var (
	errNotImplemented = errors.New("not implemented")
	errTimeout        = errors.New("timeout")
	errClosed         = errors.New("closed")
)

// statuses maps errors to the codes of loch.h, first match wins: the ABI's
// own results and errors, then loch's shared sentinels, which every layer's
// errors match (storage, chunks, schemas, the loader's order, transforms;
// see internal/base). ErrInvalidArgument comes last because a read-only or
// permission error may wrap it too.
var statuses = []struct {
	err  error
	code C.int
}{
	{io.EOF, C.LOCH_EOF},
	// LOCH_TIMEOUT is loch_loader_next's "no batch yet", which callers
	// take for no error: a deadline that ended any other call (a storage
	// request that never answered) is an error, LOCH_ERR below.
	{errTimeout, C.LOCH_TIMEOUT},
	{errClosed, C.LOCH_CLOSED},
	{loader.ErrClosed, C.LOCH_CLOSED},
	{context.Canceled, C.LOCH_CANCELED},
	{errNotImplemented, C.LOCH_NOT_IMPLEMENTED},
	{errors.ErrUnsupported, C.LOCH_NOT_IMPLEMENTED},
	{loch.ErrNotFound, C.LOCH_NOT_FOUND},
	{loch.ErrExists, C.LOCH_EXISTS},
	{loch.ErrCorrupt, C.LOCH_CORRUPT},
	{loch.ErrConflict, C.LOCH_CONFLICT},
	{loch.ErrReadOnly, C.LOCH_READ_ONLY},
	{loch.ErrPermission, C.LOCH_PERMISSION},
	{loch.ErrNewerFormat, C.LOCH_NEWER_FORMAT},
	{loch.ErrInvalidArgument, C.LOCH_INVALID_ARGUMENT},
}

// status is the code that classifies err for the caller (loch.h).
func status(err error) C.int {
	if err == nil {
		return C.LOCH_OK
	}
	for _, s := range statuses {
		if errors.Is(err, s.err) {
			return s.code
		}
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
// export defers it with its named status result, or calls withHandle,
// which does.
func guard(st *C.int, errOut **C.char) {
	r := recover()
	if r == nil {
		return
	}
	fail(errOut, fmt.Errorf("loch: internal error (please report it): %v\n%s", r, debug.Stack()))
	*st = C.LOCH_INTERNAL
}

// invalidf is an ErrInvalidArgument error: the message, then the kind.
func invalidf(format string, a ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, a...), loch.ErrInvalidArgument)
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
