package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// Errors that callers branch on with errors.Is. Errors from the dataset wrap
// loch's sentinels (loch.ErrExists, loch.ErrInvalidArgument, ...); a missing
// local source file wraps fs.ErrNotExist, a missing remote one
// storage.ErrNotFound.
var (
	// ErrBadImage marks an image that cannot be decoded, or whose header
	// declares more pixels than the decode limit allows (then matching
	// loch.ErrTooLarge too). Options.SkipBad skips the rows holding one
	// instead of failing.
	ErrBadImage = errors.New("undecodable image")
	// ErrInvalidSource marks a source that is malformed or that breaks the
	// rules of its format (a bad JSON line, arrays of different lengths, a
	// label that is not a number).
	ErrInvalidSource = base.Mark(base.ErrInvalidArgument, "invalid source", nil)
	// ErrIncompatible marks a source whose columns do not fit the schema of
	// the existing dataset it is appended to.
	ErrIncompatible = base.Mark(base.ErrInvalidArgument, "incompatible with the dataset's schema", nil)
)

// Image compressions accepted by Options.ImageCompression. PNG and JPEG are
// sample compressions (each image encoded on its own); LZ4, Zstd and None
// store decoded pixels, with that chunk codec.
const (
	CompressPNG  = "png"
	CompressJPEG = "jpeg"
	CompressLZ4  = "lz4"
	CompressZstd = "zstd"
	CompressNone = "none"
)

// Image validations accepted by Options.ImageValidation: how an image
// file that is stored byte for byte (a png or jpeg file into a column of
// that sample compression, neither resized nor converted) is proven
// readable. Files that are converted are always decoded whole.
const (
	// ValidateSample (the default) checks every kept file's header and
	// structure (imaging.Inspect: JPEG markers to EOI, PNG chunks with
	// their CRCs to IEND) and decodes one kept file in SampleEvery, those
	// whose bytes hash to 0 modulo SampleEvery: the same files on every
	// run, whatever the order and parallelism.
	ValidateSample = "sample"
	// ValidateHeader checks headers and structure and decodes no kept
	// file.
	ValidateHeader = "header"
	// ValidateFull decodes every kept file.
	ValidateFull = "full"
)

// SampleEvery is the share of kept image files that ValidateSample
// decodes: one in SampleEvery.
const SampleEvery = 64

// Size is an image size in pixels.
type Size struct {
	Width, Height int
}

// Options configures an ingest. The zero value ingests into a new dataset
// with png images, on GOMAXPROCS goroutines, without progress reports.
type Options struct {
	// Parallelism is the number of goroutines that read and convert the
	// source, and the parallelism of the dataset (loch.WithParallelism).
	// 0 means GOMAXPROCS; negative or above loch.MaxParallelism is invalid.
	Parallelism int
	// ChunkBytes sets the chunk size target of every column the ingest
	// creates; 0 keeps the schema default.
	ChunkBytes int
	// Message is the commit message; empty gives "ingest <format> <source>".
	Message string
	// Append adds the rows to an existing dataset (which must then have a
	// compatible schema) instead of refusing it; a missing dataset is
	// created either way.
	Append bool
	// StageOnly writes the rows without committing them: Result.Staged
	// describes them, for loch.Dataset.CommitStaged on any machine
	// (docs/format.md §7). Run on many machines, each ingesting its share,
	// then commit all descriptions at once. A missing dataset is created
	// as usual (of concurrent creators one wins; the others use its
	// dataset if its schema fits).
	StageOnly bool
	// SkipBad skips rows whose images cannot be decoded, counting them in
	// Result.Skipped, instead of failing. Missing or unreadable files still
	// fail.
	SkipBad bool

	// ImageCompression is how image columns store images: CompressPNG
	// (default), CompressJPEG, CompressLZ4, CompressZstd or CompressNone.
	// When appending it must agree with the existing column, or be empty to
	// take the column's.
	ImageCompression string
	// JPEGQuality is the quality (1..100) of images that ingest encodes as
	// jpeg; 0 means 90.
	JPEGQuality int
	// ImageValidation is how kept image files are proven readable:
	// ValidateSample (the default, ""), ValidateHeader or ValidateFull. A
	// file that fails its header or structure check is decoded whole
	// before it is refused; one that does not decode is an ErrBadImage
	// (skipped with SkipBad), naming the file and what is wrong.
	ImageValidation string
	// Resize, when both sides are positive, resizes every image to exactly
	// Width x Height (Catmull-Rom); the images are then always re-encoded.
	// Each side is at most MaxResizeSide, and an RGBA image of that size
	// at most 1 GiB.
	Resize Size
	// Channels, when 1, 3 or 4, converts every image to that many channels
	// (gray, RGB, RGBA); 0 keeps each image's own. Images with alpha are
	// stored as RGB in jpeg columns whatever Channels says.
	Channels int

	// Schema, for JSONL, CSV and WebDataset, replaces schema inference: its
	// columns are the columns ingested, matched to fields (or WebDataset
	// extensions) by name; fields it does not name are ignored and listed in
	// Result.Ignored.
	Schema *schema.Schema
	// ImageFields names the JSONL/CSV fields that hold image paths or URLs
	// (relative paths are relative to the source file's directory); they
	// become image columns.
	ImageFields []string
	// MediaFields (issue 16) maps JSONL/CSV fields holding paths or URLs
	// of video or audio files to schema.VideoCompression or
	// schema.AudioCompression: the files are stored as they are, as a
	// video or audio column (read relative to the source's directory).
	MediaFields map[string]schema.SampleCompression
	// LinkFields names the JSONL/CSV fields that hold references (paths or
	// URLs) stored as link columns: the reference is stored, not the bytes.
	LinkFields []string
	// Delimiter separates CSV fields; 0 means ','.
	Delimiter rune

	// Progress, when not nil, receives progress reports.
	Progress Progress
	// DatasetOptions are passed to loch.Create and loch.Open, after
	// loch.WithParallelism(Parallelism) and loch.WithDirectWrites (an
	// ingest does not read back the chunks it writes: a local dataset's
	// are written past the page cache).
	DatasetOptions []loch.Option
}

// Progress receives an ingest's progress. Its methods are called from one
// goroutine at a time, never concurrently, and must return quickly.
type Progress interface {
	// Total reports the work expected: source rows and source bytes, each
	// negative when unknown. It is called before the first Add, and may be
	// called again when a total becomes known.
	Total(rows, bytes int64)
	// Add reports rows processed (appended or skipped) and source bytes
	// read since the last call.
	Add(rows, bytes int64)
}

// maxSkippedNames bounds Result.SkippedNames.
const maxSkippedNames = 10

// Result describes a finished (or failed) ingest.
type Result struct {
	// Rows is the number of rows committed (or staged, for a failed ingest).
	Rows int64
	// Bytes is the number of source bytes read: the image files of an
	// image folder or of COCO, the JSONL or CSV file (not the images it
	// names), the arrays' data, the shards.
	Bytes int64
	// Skipped counts rows skipped for an undecodable image (Options.SkipBad);
	// SkippedNames lists the first few of their sources.
	Skipped      int64
	SkippedNames []string
	// Ignored lists, sorted, the source fields that the dataset's schema has
	// no column for.
	Ignored []string
	// Version is the id of the version committed; when there was nothing to
	// commit, the dataset's current version. Empty after a failure.
	Version string
	// Created reports whether this ingest created the dataset (for a failed
	// ingest: left it behind, empty).
	Created bool
	// Elapsed is the wall time of the whole ingest.
	Elapsed time.Duration
	// Staged describes the rows written, with Options.StageOnly; Version
	// is then the version they were written for, and nothing is committed.
	Staged *loch.Staged
}

// Validate reports the first option that is out of range, wrapping
// loch.ErrInvalidArgument; zero values (defaults) are valid. Every ingest
// calls it before it opens anything; callers that want to check options
// before doing any work of their own (command-line flags) may too. Options
// that depend on the data (the schema, the fields named) are checked when
// the source is read.
func (o Options) Validate() error {
	bad := func(format string, a ...any) error {
		return base.Markf(loch.ErrInvalidArgument, format, a...)
	}
	switch o.ImageCompression {
	case "", CompressPNG, CompressJPEG, CompressLZ4, CompressZstd, CompressNone:
	default:
		return bad("image compression %q (want png, jpeg, lz4, zstd or none)", o.ImageCompression)
	}
	switch o.ImageValidation {
	case "", ValidateSample, ValidateHeader, ValidateFull:
	default:
		return bad("image validation %q (want sample, header or full)", o.ImageValidation)
	}
	switch o.Channels {
	case 0, 1, 3, 4:
	default:
		return bad("%d channels (want 1, 3 or 4)", o.Channels)
	}
	switch {
	case o.Parallelism < 0 || o.Parallelism > loch.MaxParallelism:
		return bad("parallelism %d (want 0 to %d)", o.Parallelism, loch.MaxParallelism)
	case o.ChunkBytes < 0:
		return bad("chunk bytes %d is negative", o.ChunkBytes)
	case o.JPEGQuality < 0 || o.JPEGQuality > 100:
		return bad("jpeg quality %d (want 1..100)", o.JPEGQuality)
	case o.Resize != (Size{}) && (o.Resize.Width <= 0 || o.Resize.Height <= 0):
		return bad("resize to %dx%d (want positive width and height)", o.Resize.Width, o.Resize.Height)
	case o.Resize.Width > MaxResizeSide || o.Resize.Height > MaxResizeSide ||
		int64(o.Resize.Width)*int64(o.Resize.Height)*4 > maxRowBytes:
		return bad("resize to %dx%d (want at most %d pixels a side and %d MiB an RGBA image)",
			o.Resize.Width, o.Resize.Height, MaxResizeSide, maxRowBytes>>20)
	case o.Channels == 4 && o.ImageCompression == CompressJPEG:
		return bad("jpeg cannot hold 4 channels")
	}
	return nil
}

// MaxResizeSide is the largest side Options.Resize takes: JPEG's limit.
const MaxResizeSide = 65535

// withDefaults checks o and returns it with its zero values filled.
func (o Options) withDefaults() (Options, error) {
	if err := o.Validate(); err != nil {
		return o, err
	}
	if o.Parallelism == 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.JPEGQuality == 0 {
		o.JPEGQuality = 90
	}
	if o.Delimiter == 0 {
		o.Delimiter = ','
	}
	if o.Progress == nil {
		o.Progress = nopProgress{}
	}
	return o, nil
}

type nopProgress struct{}

func (nopProgress) Total(rows, bytes int64) {}
func (nopProgress) Add(rows, bytes int64)   {}

// plan is what a format contributes to an ingest.
type plan struct {
	// schema is the schema the source implies, used to create the dataset
	// and checked against an existing one.
	schema schema.Schema
	// rows and bytes are the expected totals, negative when unknown.
	rows, bytes int64
	// explicit reports that the schema came from the user
	// (Options.Schema), so that source fields outside it are ignored.
	explicit bool
	// produce emits the work in row order; each job converts part of the
	// source into rows of the final schema (the dataset's).
	produce func(ctx context.Context, final *schema.Schema, emit func(job[batch]) error) error
	// close, if set, releases what the plan holds; run calls it at the end.
	close func()
}

// batch is the output of one job: consecutive rows of the source.
type batch struct {
	rows    []loch.Row
	skipped []string // sources of rows skipped by Options.SkipBad
	ignored []string // source fields without a column
	nrows   int64    // source rows processed: len(rows) + len(skipped)
	bytes   int64    // source bytes read
	size    int64    // approximate bytes held by rows
	// release, if set, is called once the rows are staged (or dropped):
	// the bytes of their samples may then be reused.
	release func()
}

// add appends row, or, when err says the row's image is undecodable and
// SkipBad is set, records the row as skipped. Any other error is returned.
func (b *batch) add(row loch.Row, err error, name string, skipBad bool) error {
	b.nrows++
	if err != nil {
		if skipBad && (errors.Is(err, ErrBadImage) || errors.Is(err, ErrBadMedia)) {
			b.skipped = append(b.skipped, name)
			return nil
		}
		return err
	}
	for _, s := range row {
		b.size += int64(len(s.Data))
	}
	b.rows = append(b.rows, row)
	return nil
}

// existing describes the dataset found at the URL before an ingest.
type existing struct {
	schema schema.Schema
	rows   int64
}

// create creates the dataset of schema s at url, or, when only staging
// and another stager created it first, opens it if its schema fits (the
// dataset is returned, to be closed, even when it does not).
func create(ctx context.Context, url string, s schema.Schema, stageOnly bool, dsOpts []loch.Option, res *Result) (*loch.Dataset, error) {
	d, err := loch.Create(ctx, url, s, dsOpts...)
	switch {
	case errors.Is(err, loch.ErrExists) && stageOnly:
		// Another stager created it first: use it if it fits.
		if d, err = loch.Open(ctx, url, dsOpts...); err != nil {
			return nil, err
		}
		if err := compatible(d.Schema(), s); err != nil {
			return d, fmt.Errorf("ingest into %s: %w", url, err)
		}
	case err != nil:
		return nil, err
	default:
		res.Created = true
	}
	return d, nil
}

// run is the common driver of every format: it opens or creates the
// dataset, runs the pipeline that build plans, stages its rows and commits
// once.
func run(ctx context.Context, url, format, source string, o Options,
	build func(ctx context.Context, o *Options, ex *existing) (*plan, error)) (res Result, err error) {
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	o, err = o.withDefaults()
	if err != nil {
		return res, err
	}
	dsOpts := append([]loch.Option{loch.WithParallelism(o.Parallelism), loch.WithDirectWrites()}, o.DatasetOptions...)
	d, ex, err := openExisting(ctx, url, &o, dsOpts)
	if err != nil {
		return res, err
	}
	// d is closed once, here or at the end; Close discards staged rows.
	defer func() {
		if d != nil {
			d.Close()
		}
	}()

	p, err := build(ctx, &o, ex)
	if err != nil {
		return res, err
	}
	if p.close != nil {
		defer p.close()
	}
	if err := p.normalize(url, o.ChunkBytes); err != nil {
		return res, err
	}
	var final schema.Schema
	if d == nil {
		if d, err = create(ctx, url, p.schema, o.StageOnly, dsOpts, &res); err != nil {
			return res, err
		}
		final = d.Schema()
	} else {
		if err := compatible(ex.schema, p.schema); err != nil {
			return res, fmt.Errorf("ingest into %s: %w", url, err)
		}
		final = ex.schema
	}

	o.Progress.Total(p.rows, p.bytes)
	st := &stager{d: d, progress: o.Progress, res: &res, ignored: map[string]bool{}}
	produce := func(ctx context.Context, emit func(job[batch]) error) error {
		return p.produce(ctx, &final, emit)
	}
	err = ordered(ctx, o.Parallelism, produce, func(b batch) error { return st.add(ctx, b) })
	if err == nil {
		err = st.flush(ctx)
	}
	res.Ignored = st.ignoredFields()
	if err != nil {
		return res, err
	}
	if res.Rows == 0 && !o.StageOnly {
		res.Version = d.Version()
		return res, nil
	}
	if o.StageOnly {
		res.Version = d.Version()
		if res.Staged, err = d.Stage(ctx); err != nil {
			return res, fmt.Errorf("stage %s: %w", url, err)
		}
		err, d = d.Close(), nil
		return res, err
	}
	res.Version, err = d.Commit(ctx, o.commitMessage(format, source))
	if err != nil {
		return res, fmt.Errorf("commit %s: %w", url, err)
	}
	err, d = d.Close(), nil
	return res, err
}

// openExisting opens the dataset at url, if there is one, and checks that
// the ingest may add to it: it must be empty or o.Append set. Its image
// columns then decide o's image compression. It returns a nil dataset and
// nil existing when there is no dataset.
func openExisting(ctx context.Context, url string, o *Options, dsOpts []loch.Option) (*loch.Dataset, *existing, error) {
	d, err := loch.Open(ctx, url, dsOpts...)
	switch {
	case errors.Is(err, loch.ErrNoDataset):
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	}
	ex := &existing{schema: d.Schema(), rows: d.Len()}
	if ex.rows > 0 && !o.Append {
		d.Close()
		return nil, nil, fmt.Errorf("ingest into %s: a dataset with %d rows is already there: %w", url, ex.rows, loch.ErrExists)
	}
	if err := o.adoptImageCompression(&ex.schema); err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, ex, nil
}

// normalize applies the chunk size asked for (0: the schema's) to every
// column of the plan's schema and normalizes it.
func (p *plan) normalize(url string, chunkBytes int) error {
	if chunkBytes > 0 {
		for i := range p.schema.Columns {
			p.schema.Columns[i].ChunkBytes = chunkBytes
		}
	}
	if err := p.schema.Normalize(); err != nil {
		return fmt.Errorf("ingest into %s: %w", url, err) // a schema.ErrInvalid, which is an ErrInvalidArgument
	}
	return nil
}

// commitMessage is o.Message, or the default one naming the format and
// the source.
func (o *Options) commitMessage(format, source string) string {
	if o.Message != "" {
		return o.Message
	}
	return fmt.Sprintf("ingest %s %s", format, source)
}

// Flush thresholds of the stager: rows and bytes passed to one
// Dataset.Extend call.
const (
	flushRows  = 256
	flushBytes = 32 << 20
)

// stager is the consuming end of an ingest's pipeline: it stages the rows
// of each batch on the dataset, in groups of up to flushRows rows or
// flushBytes bytes, counts them in the result and reports progress. It is
// used from one goroutine.
type stager struct {
	d        *loch.Dataset
	progress Progress
	res      *Result
	ignored  map[string]bool // source fields without a column, as a set

	pending      []loch.Row
	pendingBytes int64
	releases     []func() // of the batches whose rows are pending
}

// add takes one batch, staging what is pending when the thresholds are
// reached.
func (s *stager) add(ctx context.Context, b batch) error {
	s.res.Bytes += b.bytes
	s.res.Skipped += int64(len(b.skipped))
	for _, name := range b.skipped {
		if len(s.res.SkippedNames) < maxSkippedNames {
			s.res.SkippedNames = append(s.res.SkippedNames, name)
		}
	}
	for _, f := range b.ignored {
		s.ignored[f] = true
	}
	s.pending = append(s.pending, b.rows...)
	s.pendingBytes += b.size
	if b.release != nil {
		s.releases = append(s.releases, b.release)
	}
	s.res.Rows += int64(len(b.rows))
	if len(s.pending) >= flushRows || s.pendingBytes >= flushBytes {
		if err := s.flush(ctx); err != nil {
			return err
		}
	}
	s.progress.Add(b.nrows, b.bytes)
	return nil
}

// flush stages the pending rows.
func (s *stager) flush(ctx context.Context) error {
	if len(s.pending) > 0 {
		if err := s.d.Extend(ctx, s.pending); err != nil {
			return fmt.Errorf("stage rows: %w", err)
		}
	}
	// Extend copied the samples' bytes.
	for _, r := range s.releases {
		r()
	}
	s.pending, s.pendingBytes, s.releases = nil, 0, s.releases[:0]
	return nil
}

// ignoredFields lists the ignored source fields, sorted.
func (s *stager) ignoredFields() []string {
	fields := slices.Collect(maps.Keys(s.ignored))
	slices.Sort(fields)
	return fields
}

// adoptImageCompression makes o's image compression agree with the image
// columns of an existing schema: an empty ImageCompression takes theirs, a
// different one is an error.
//
// Image columns that differ among themselves (a png image beside a jpeg
// thumbnail) are no error when nothing was asked: the first one's is taken,
// and the dataset converts each sample to its own column's form.
func (o *Options) adoptImageCompression(s *schema.Schema) error {
	asked := o.ImageCompression != ""
	for _, c := range s.Columns {
		if c.Kind != schema.Image {
			continue
		}
		have := string(c.SampleCompression)
		if c.SampleCompression == schema.SampleNone {
			have = string(c.ChunkCompression)
		}
		if o.ImageCompression == "" {
			o.ImageCompression = have
		} else if asked && o.ImageCompression != have {
			return base.Markf(ErrIncompatible, "incompatible with the dataset's schema: image column %q stores images as %s, ingest was asked for %s", c.Name, have, o.ImageCompression)
		}
	}
	return nil
}

// compatible checks that every column of src exists in dst with the same
// dtype and kind, and that src's class names are all known to dst.
func compatible(dst, src schema.Schema) error {
	for _, sc := range src.Columns {
		dc, ok := dst.Column(sc.Name)
		if !ok {
			return base.Markf(ErrIncompatible, "incompatible with the dataset's schema: the dataset has no column %q (it has %v)", sc.Name, dst.Names())
		}
		if dc.Kind != sc.Kind || dc.DType != sc.DType {
			return base.Markf(ErrIncompatible, "incompatible with the dataset's schema: column %q is %s %s in the dataset, the source gives %s %s", sc.Name, dc.Kind, dc.DType, sc.Kind, sc.DType)
		}
		if sc.Kind == schema.BBox && dc.BBoxFormat != sc.BBoxFormat {
			return base.Markf(ErrIncompatible, "incompatible with the dataset's schema: column %q holds %s boxes in the dataset, the source gives %s", sc.Name, dc.BBoxFormat, sc.BBoxFormat)
		}
		for _, n := range sc.ClassNames {
			if !slices.Contains(dc.ClassNames, n) {
				return base.Markf(ErrIncompatible, "incompatible with the dataset's schema: column %q has no class %q (it has %d classes)", sc.Name, n, len(dc.ClassNames))
			}
		}
	}
	return nil
}

// classIndex maps the class names of a column to their labels.
func classIndex(c *schema.Column) map[string]int64 {
	m := make(map[string]int64, len(c.ClassNames))
	for i, n := range c.ClassNames {
		m[n] = int64(i)
	}
	return m
}
