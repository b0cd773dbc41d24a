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
// The package tree is the architecture. The engine is this package, one
// file per mechanism, each in one place:
//
//   - dataset.go: Create, Open, the Dataset handle and its options.
//   - log.go: the log's root entries (kept by internal/seqlog) and
//     updateRoot, the only compare-and-swap on it; writeCommit.
//   - stage.go: staged writes (Append, Extend, Delete, AddColumn, chunk
//     uploads).
//   - twophase.go: the two-phase write: Stage describes a writer's fragments
//     without committing them, and CommitStaged publishes any number of them.
//   - update.go: Update in place, the chunks of updated values rewritten at
//     commit.
//   - commit.go, rebase.go: Commit (fragments, the manifest) and rebasing
//     onto other writers' commits.
//   - compact.go, compact_tasks.go: Compact, automatic compaction, and
//     compaction in several processes (PlanCompaction, CompactGroup,
//     CommitCompaction).
//   - upsert.go: Upsert, rows merged by key columns.
//   - lease.go: writer leases that gc respects.
//   - snapshot.go: a version's manifest and fragments, rows by position and
//     id.
//   - chunkreader.go, fetched.go: the one chunk reader, which every read of
//     chunk bytes goes through, and Fetched, the verified and decoded chunk
//     or span of samples it returns.
//   - read.go, scan.go: ColumnReader for rows, Scan for readers that plan
//     their own reads (the loader).
//   - readbuf.go: the size-classed pools of span reads' buffers.
//   - segments.go: Scan.Segments, the units of the block shuffle.
//   - media_read.go, media_scan.go, media_write.go: video and audio samples
//     read by range (MediaSample, an io.ReaderAt over the stored file), their
//     probed MediaInfo through a Scan, and Media, a sample to write.
//   - fragments.go, indexes.go: Scan.Fragments for an index's coverage;
//     what gc and verify know of vector and full-text indexes.
//   - rows.go: live rows joined by row id, shared by Diff and Merge.
//   - selections.go, joined.go: saved query results (SaveSelection,
//     Selection, ...), named in the log like tags, and a join's
//     JoinedColumn values they carry.
//   - walk.go: the walk over commits, manifests, fragments and chunks that
//     GC and Verify share.
//   - refs.go, merge.go, diff.go, verify.go: branches and tags, merge,
//     diff, verification.
//   - gc.go, retention.go: garbage collection, and its version retention and
//     respect of writers' leases.
//   - errors.go, sample.go, cache.go, link.go, progress.go: the sentinels,
//     Sample values, the decoded-chunk cache, link columns and their
//     LinkPolicy, progress and warning callbacks.
//
// Beside it: schema (columns and validation), storage (object stores
// behind one small interface, with a conformance suite), imaging (every
// pixel operation: png and jpeg through libjpeg-turbo, channel conversion,
// resize), media (video and audio probing and decoding through FFmpeg's
// libraries), transform (image, clip and audio transforms), ingest
// (importers), vector (nearest-neighbour search: exact, and the IVF-flat
// index; it never imports DuckDB), fts (full-text search: BM25 over text
// and json columns, with bleve's analysis), hybrid (vector and full-text
// search fused by reciprocal rank or weighted scores), loader (the streaming loader, built on
// Scan: it schedules, orders and collates, and knows no chunk layout) with
// loader/order (epoch order, sharding, resume, mixtures), query (SQL
// through embedded DuckDB, the only package that imports it;
// docs/query.md), sqlcat (SQL DDL and DML over a catalog, on query and
// catalog; docs/sql.md), catalog (named tables under one root, each a
// dataset on a storage.Sub view of the root), chunkcache (the local chunk
// cache shared by processes), viewer (the web viewer of loch serve:
// server-rendered pages and embedded assets), pgwire (loch serve --pg: the
// catalog over the PostgreSQL protocol, with SCRAM users, roles and TLS, on
// sqlcat; docs/pg.md), version (loch's release version,
// written once), capi (the C ABI of the Python SDK in python/) and
// cmd/loch (the CLI); examples/ holds runnable programs and bench/ the
// benchmark figures.
//
// What users are not promised lives under internal/: chunk, manifest and
// vindex (the on-disk formats; docs/format.md specifies the bytes), seqlog
// (the sequence-numbered put-if-absent log that datasets and catalogs
// share), keys (the object layout and key rules), base (the error kinds
// every package shares, re-exported as ErrNotFound, ...), half (float16 and
// bfloat16), lru (the byte-bounded LRU), zstdcodec (the one zstd codec),
// addrpolicy (which network addresses a link may reach), decodelimit (the
// bound every decoder checks before it allocates), testserver (real storage servers for
// tests), mediatest (media files for tests), testseed (replayable seeds
// for property tests) and chaos (the campaign of make chaos).
package loch
