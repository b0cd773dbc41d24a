// Package base holds what every layer of loch shares about failure: the
// sentinel errors that callers branch on, and Mark, the one way to give an
// error one of them. It imports only the standard library, so that every
// package of the module (storage, chunk, manifest, schema, the engine, the
// C ABI) can use it; package loch re-exports the sentinels under the same
// names, and those are the names users see.
//
// # Kinds
//
// A kind is an error value that callers test with errors.Is. The shared
// kinds are the sentinels of this package: ErrNotFound, ErrExists,
// ErrCorrupt, ErrConflict, ErrInvalidArgument, ErrNewerFormat, ErrReadOnly
// and ErrPermission. A package that needs a finer kind defines it as a
// marked sentinel, which keeps its own identity and also matches the
// shared one:
//
//	// ErrInvalid marks a schema that breaks the rules of its columns.
//	var ErrInvalid = base.Mark(base.ErrInvalidArgument, "invalid", nil)
//
// Kinds nest: an error marked with ErrInvalid matches ErrInvalid and
// ErrInvalidArgument. That is how one error carries several kinds (storage
// tells a missing bucket from a missing object with an unexported kind
// marked ErrNotFound). A kind that is no case of a shared one (storage's
// ErrTransient, the C ABI's timeout) is a plain errors.New value.
//
// The contract every package of loch keeps: an error that is a case of a
// shared kind matches that kind with errors.Is, wherever it comes from, so
// no layer translates errors at its border. Wrapping with fmt.Errorf's %w,
// with Mark or in a struct with an Unwrap method all keep that; formatting
// a cause with %v loses it and is only for causes that are no kind of
// loch's (a JSON decoder's complaint inside a corrupt object).
//
// # Messages
//
// A message reads from the outside in: each layer puts its context first
// and the cause after ": ", so that a user reads what was asked, then on
// which object, then what went wrong:
//
//	fmt.Errorf("read chunk %s: %w", key, err)
//
//	open s3://b/ds: read chunks/ab/ab12…: corrupt chunk: header checksum 1c2d3e4f, want 00000000
//
// The rules:
//
//  1. Context first, then the cause. A context is a short lowercase phrase
//     naming the operation and its object ("read %s", "create branch %q in
//     %s"); no "failed to", no trailing punctuation.
//  2. A leaf error (one with no cause) says what was found and what was
//     expected: "magic %q, want %q", "batch size %d, want at least 1".
//  3. Mark adds no text. A kind is for programs; the message is for people
//     and reads on its own, so a leaf made with Mark says in its own words
//     what is wrong where its context does not ("corrupt chunk: …",
//     "bucket %q not found").
//  4. A sentinel never leads a message. Where a sentinel's own text is
//     printed, it is the innermost cause and so the last phrase:
//     fmt.Errorf("open %s: no version %s: %w", url, id, ErrNotFound)
//     reads "open ds: no version 0123…: not found".
package base
