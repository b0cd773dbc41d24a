// Package viewer is loch's local web viewer (`loch serve`): an http.Handler
// that shows a catalog's tables or one dataset, a grid of its samples, one
// row at full size, SQL query results, the commit graph and the diff of two
// refs. Pages are rendered on the server with html/template; the assets
// (one stylesheet, one small script) are embedded with go:embed, so nothing
// is downloaded at run time.
//
// # Reads
//
// Every read goes through the library (loch.Open, ColumnReader, Diff,
// query.Select, sqlcat for a catalog), so the viewer works the same on local
// paths and s3://, gs://, az://, with the storage layer's retries and the
// dataset's chunk cache. The grid is paged: a page of at most MaxPage rows is
// read at a time, never the whole dataset. Thumbnails are made in Go
// (imaging) from the stored samples, with the row's boxes drawn on and its
// masks overlaid (a tiny picture, at most half the thumbnail's size, is
// enlarged by a whole factor, nearest neighbour, and pages mark it to be
// drawn with square pixels); a thumbnail or sample URL names a version
// id, so its bytes never change and it is served with a year-long
// immutable Cache-Control and an ETag.
//
// # Media
//
// A video or audio sample kept as its file (sample compression video or
// audio) is served as ingested, read by range through the library
// (ColumnReader.OpenMedia) with http.ServeContent: its container's
// Content-Type and Range requests, so a player seeks without the whole
// file. Audio in a container or codec browsers do not play is decoded and
// sent as 16-bit WAV at the sample rate its chunk records. A waveform
// tensor records no rate and is sent as 16 kHz WAV. Video stored as frame
// tensors has no file form.
//
// # Security
//
// A Server is read-only except for saving selections (POST, with a
// per-server form token). Options.Hosts limits the Host header (against DNS
// rebinding of a loopback server) and Options.Token, when set, is required
// on every request: as ?token= once, then as an HttpOnly cookie, compared in
// constant time. Guard picks both for a listener: a loopback address gets
// Hosts, any other a fresh random Token. Every parameter is validated (table
// names by catalog.ValidName, refs by the library, columns against the
// schema, rows against the version's length, page sizes against MaxPage);
// a bad one is a 4xx with a one-line message, an internal failure a 500
// whose body says only that (the error goes to Options.Log). Dataset URLs
// are shown redacted (storage.Redact), and no storage setting or credential
// is ever rendered. Responses carry a strict Content-Security-Policy,
// X-Content-Type-Options: nosniff and X-Frame-Options: DENY; raw samples are
// served sandboxed.
//
// SQL from the query box may only read the dataset (or catalog tables):
// queries that name file-reading or environment functions (read_*, glob,
// getenv, loch_file, loch_scan, ...) or a quoted path in FROM are refused.
//
// # Concurrency
//
// A Server is safe for concurrent use; Close releases the datasets it opened.
package viewer
