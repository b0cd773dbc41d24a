// Package catalog keeps named tables under one root: each table is an
// ordinary loch dataset in a directory of its own, and a catalog log names
// them (docs/format.md §6).
//
// # Basics
//
// Open (or Create) a catalog at a root URL (a local path, mem://name,
// s3://bucket/prefix, gs://bucket/prefix, az://container/prefix), then make,
// list, open, rename and drop tables:
//
//	cat, err := catalog.Open(ctx, "s3://lake/tables", catalog.WithCreate())
//	...
//	defer cat.Close()
//	frames, err := cat.CreateTable(ctx, "frames", schema)   // a *loch.Dataset
//	tables, err := cat.Tables(ctx)
//	labels, err := cat.OpenTable(ctx, "labels", loch.WithRef("v1"))
//
// A table opened from a catalog is a *loch.Dataset like any other: it
// reads, writes, branches and feeds the loader. It uses the catalog's
// store, so it is usable until the catalog is closed: close tables first.
//
// # Names
//
// Table names keep the case they were given and compare case-insensitively
// ("Frames" and "frames" are one table). ValidName says which names are
// allowed: no '/', '\', "..", control characters, leading or trailing
// space, nor the reserved prefix "_loch"; at most 255 bytes. A name never
// becomes a key, so no name can reach outside the root: a table's data is
// under tables/<dir>/, where dir is chosen at creation and never changes.
//
// A catalog is never made at a dataset's root or inside a dataset, nor a
// dataset (but the catalog's own tables) at a catalog's root or inside its
// _catalog/ and tables/ folders: Create and Open WithCreate refuse, as
// loch.Create does, with loch.ErrInvalidArgument.
//
// # Concurrency
//
// A Catalog is safe for concurrent use, and several processes may change
// one catalog: every change (create, drop, rename) is one entry of the
// catalog log, written with put-if-absent, so of two creators of one name
// exactly one wins and the other gets ErrExists. Listing reads only the
// log's newest entry, never the tables.
//
// # Dropping
//
// DropTable removes the name at once, but not the data: a reader that
// opened the table before keeps reading it. GC deletes a dropped table's
// directory once its grace period has passed since the drop; the grace
// period must therefore exceed the longest time a reader keeps a dropped
// table open.
//
// # Verifying
//
// Verify checks a catalog without opening it: every entry of its log, the
// table directories that no entry names, and every table as a dataset.
// When the log's hint names an entry above the highest one there, the
// newest entries were lost: Open and every change fail with
// loch.ErrCorrupt rather than go back to an older set of tables, until
// the entries are restored or RepairLog accepts the loss.
package catalog
