// Package loch is a tensor-native, versioned dataset store: rows of named
// columns (images, tensors, labels, boxes, embeddings, text, json) kept in
// chunks in their final dtype and shape, on local disk or object storage.
//
// # Basics
//
// Create makes a dataset at a URL (a local path, mem://name, s3://bucket/prefix,
// gs://bucket/prefix or az://container/prefix); Open opens one at its newest
// snapshot or, with WithVersion, at a given one. Rows are staged with Append,
// Extend, Update and Delete, and become visible only when Commit writes a new
// snapshot: a reader sees one consistent snapshot, and a writer killed at any
// moment leaves the last commit intact.
//
// # Reading
//
// Dataset.Column returns a ColumnReader, which reads samples by row
// position, decoded (Read, ReadRange) or as stored (ReadEncoded). Readers
// that schedule their own reads (the loader, benchmarks, table scans) use
// Scan: rows located by position, samples found in chunks named by opaque
// ChunkIDs, the snapshot's Segments (the units of the block shuffle), reads
// planned (whole chunks, or a span of samples' checksum blocks by range,
// compressed or not), fetched, verified and decoded into the caller's
// buffers. Both go through one chunk reader, which checks every
// chunk against its fragment and names the chunk in every error; errors
// match this package's sentinels (ErrNotFound, ErrCorrupt, ErrPermission,
// ...) with errors.Is, whichever layer they come from.
//
// # Concurrency
//
// A Dataset is safe for concurrent use. Reads (Len, Column, Read, ...) see the
// snapshot the Dataset was opened at or last committed; staged rows are not
// visible to reads. Several processes may write to one dataset: commits are
// serialized by conditional writes, appends rebase automatically, and other
// conflicting changes fail with ErrConflict.
//
// # Memory
//
// Slices returned in a Sample are owned by the caller unless a method says
// they alias a buffer the caller passed in (ColumnReader.Read) or fetched memory
// (Scan.Sample, Fetched.At: valid while the Fetched is held, read-only).
// Span reads take their buffers from pools, and Fetched.Recycle hands one
// back once nothing uses it (the loader does; other readers may leave it to
// the garbage collector).
//
// # Layout
//
// The engine's files follow its mechanisms, each in one place: dataset.go
// (Create, Open, the handle), log.go (the log's root entries, kept by
// internal/seqlog, and updateRoot, its only compare-and-swap), stage.go (staged writes),
// twophase.go (Stage and CommitStaged, the two-phase write),
// commit.go (Commit), snapshot.go (a version's fragments and rows),
// chunkreader.go and fetched.go (the one chunk reader), read.go
// (ColumnReader), scan.go (Scan), media_*.go (video and audio samples),
// readbuf.go (the read buffers' pools), segments.go (Scan.Segments),
// rows.go (live rows joined by id, for Diff and Merge), selections.go
// (saved query results, named in the log like tags), walk.go (the
// object-graph walk GC and Verify share), refs.go, merge.go, diff.go,
// gc.go and verify.go. The on-disk formats (internal/chunk,
// internal/manifest), the object layout (internal/keys) and the error
// kinds (internal/base) are internal; docs/format.md specifies the bytes.
package loch
