// Package ingest fills loch datasets from the formats data already comes in:
// image folders, JSON lines, CSV, numpy .npy/.npz, WebDataset tar shards and
// COCO annotations.
//
// # Basics
//
// Each format has one function (ImageFolder, JSONL, CSV, NPY, NPZ,
// WebDataset, COCO) that reads its sources, builds the rows and commits them
// to the dataset at a URL once, at the end, as one version. An ingest that
// fails or is cancelled commits nothing: readers keep seeing the previous
// version.
//
// Images are decoded once, at ingest, and stored in their final form: with
// png or jpeg sample compression, an input file that already has that format
// is stored byte for byte and any other is decoded and re-encoded. A file
// stored as it is is proven readable as Options.ImageValidation says: by
// default its header and structure are checked (imaging.Inspect: a JPEG's
// markers to EOI, a PNG's chunks and their CRCs to IEND), at the speed of
// reading it, and one such file in SampleEvery is decoded whole, the same
// ones on every run; ValidateFull decodes each, ValidateHeader none. A
// file whose structure is in doubt is decoded before it is refused. With
// lz4, zstd or no compression the decoded uint8 [height, width, channels]
// pixels are stored. Options.Resize
// and Options.Channels turn every image into one shape.
//
// # Creating and appending
//
// When no dataset exists at the URL, ingest creates it with the schema the
// format implies. Creating commits an empty first version, so an ingest into
// a new URL that fails leaves an empty dataset behind. Ingest accepts an
// existing dataset only with Options.Append, or when it is empty (as a failed
// ingest leaves it), so running the same command again after a failure just
// works. Into an existing dataset, the dataset's schema wins: every column
// the source brings must exist there with the same dtype and kind, class
// names are matched by name, and images take the column's compression.
//
// # Parallelism and memory
//
// Work runs in a bounded pipeline: one goroutine lists or reads the source in
// order, Options.Parallelism goroutines read files and decode, encode or
// convert, and one goroutine appends the results in source order. At most
// O(Parallelism) rows are in flight, so memory does not grow with the size of
// the source (except where a format says otherwise: a Fortran-order .npy
// array, a remote source file, one remote tar shard and COCO's annotation file
// are held whole). Row order is deterministic and does not depend on
// Parallelism.
package ingest
