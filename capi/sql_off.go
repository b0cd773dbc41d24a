//go:build !duckdb_arrow

package main

/*
#include "loch.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// The SQL functions of a library built without DuckDB (sql.go): each is
// LOCH_NOT_IMPLEMENTED, and Python runs SQL in the loch command.

var errNoSQL = fmt.Errorf("this libloch.so was built without DuckDB (build tags duckdb_arrow,duckdb_use_lib and libduckdb.so beside it, as python/setup.py builds it): %w", errNotImplemented)

//export loch_sql_open
func loch_sql_open(target C.uintptr_t, options *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	return fail(errOut, errNoSQL)
}

//export loch_sql_close
func loch_sql_close(h C.uintptr_t, errOut **C.char) (st C.int) { return fail(errOut, errNoSQL) }

//export loch_sql_run
func loch_sql_run(h C.uintptr_t, sql, options *C.char, stream unsafe.Pointer, out **C.char, errOut **C.char) (st C.int) {
	return fail(errOut, errNoSQL)
}

//export loch_sql_select
func loch_sql_select(h C.uintptr_t, sql, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return fail(errOut, errNoSQL)
}
