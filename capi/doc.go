// Command capi is loch's C ABI: the shared library (libloch.so) that the
// Python SDK loads with ctypes. Build it with
//
//	go build -buildmode=c-shared -o python/loch/_lib/libloch.so ./capi
//
// The ABI is narrow and built on the public Go API only (loch, loader,
// schema, and for SQL query and sqlcat). Its C types are in loch.h; the functions are the //export
// functions of this package, all named loch_*:
//
//   - Every function returns a status code (LOCH_OK or an error class, see
//     loch.h) and, on error, a message in *err that the caller frees with
//     loch_free_string. Every function recovers from panics, which become
//     LOCH_INTERNAL with the panic's message and stack: bad input never
//     crashes the host process.
//   - Structured results (schemas, logs, references, diffs, merge results,
//     GC reports, loader states and statistics) cross as JSON strings that
//     the caller frees with loch_free_string; loch.h lists the version
//     control functions (branches, tags, checkout, diff, merge, revert, gc)
//     and their JSON.
//   - Go objects (catalogs, datasets, loaders) cross as opaque handles
//     (runtime/cgo.Handle); loch_*_close releases them. Using a closed
//     handle is an error, not a crash.
//   - Sample data crosses in C memory, never Go memory: batch buffers are
//     allocated with C's allocator by the loader itself (a loader.Allocator)
//     and handed to the caller, who wraps them (numpy) without a copy and
//     gives them back with loch_buffer_free. Freed buffers are kept in a
//     bounded pool for the next batches.
//   - Blocking calls are bounded or cancellable: loch_loader_next takes a
//     timeout and returns LOCH_TIMEOUT, so that a caller can check for
//     interrupts (Ctrl-C) between calls.
//   - A consumer need not call into Go per batch: loch_loader_stream
//     (stream.go) has a goroutine write each batch's address to a pipe
//     that the caller reads, blocking in the kernel, and the caller
//     reports the batches it read and the buffers it freed over a second
//     pipe. Python's loaders read so, and check their settings and open,
//     stream, question and close their loaders through loch_service
//     (service.go): requests over a
//     second pipe pair that a goroutine serves, so that the consumer's
//     thread never returns from a call into Go holding a Go processor
//     that the loader's workers need. loch_loader_next_batch is the one
//     call per batch for callers that poll: it frees the previous batch's
//     description and gives back the buffers the caller is done with in
//     the same call that takes the next batch. A call from a thread Go did
//     not start must first get a Go processor (P); at the first call of
//     loch_loader_next or loch_loader_next_batch the library adds one P
//     for such threads (unless $GOMAXPROCS is set; a stream's consumer,
//     which makes no call per batch, gets none), and loaders default to one
//     worker per P the process had before (procs.go), so that the caller
//     does not take a P from the workers.
//   - SQL runs in the library (sql.go, ABI 22) where it is built with the
//     tags duckdb_arrow,duckdb_use_lib against libduckdb.so (python/setup.py
//     does): a SQL handle keeps one DuckDB connection over a dataset or
//     catalog handle, and a query's result crosses as an ArrowArrayStream
//     (the Arrow C data interface). Without the tags the library has no
//     DuckDB and loch_sql_* are LOCH_NOT_IMPLEMENTED.
//
// The functions are safe to call from several threads, but a loader's
// batches are meant for one consumer.
package main

func main() {}
