package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/ingest"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/sqlcat"
)

// parquetOptions are the arguments and own flags of loch ingest parquet.
type parquetOptions struct {
	file, url                          string
	imageFields, linkFields, mediaCols []string
	imageCompression                   string
	skipBad                            bool
}

// newIngestParquetCmd is loch ingest parquet: SQL underneath, the INSERT
// of docs/sql.md §4 (sqlcat.Stage) from DuckDB's read_parquet.
func newIngestParquetCmd(f *ingestFlags) *cobra.Command {
	o := &parquetOptions{}
	cmd := &cobra.Command{
		Use:   "parquet FILE URL",
		Short: "Ingest a Parquet file, one row per record (through SQL)",
		Long: `Ingest a Parquet file (a local path, a glob DuckDB reads, or an http(s) URL)
one row per record, one column per field. It is SQL underneath: the rows
are read by DuckDB's read_parquet and converted as 'loch sql' INSERT does
(docs/sql.md): integers, floats and booleans keep their type, VARCHAR is
text, JSON json, BLOB bytes, numeric arrays and lists tensors; other types
(DATE, DECIMAL, STRUCT, ...) are an error naming the field. When every
field is stored as it is (numbers, text, json, bytes), the rows stream
from DuckDB a chunk at a time, column by column, in bounded memory.

--image-field F reads the path (relative to the file's directory) or URL in
field F with loch_file and stores the image (png or jpeg kept byte for
byte when it matches --image-compression, default png); --link-field F
stores the reference as a link column. --media-column F=video (or
F=audio) reads the media file at the path or URL in field F and stores its
bytes as they are (sample compression video or audio), probed with FFmpeg
for shape, codec and rate; a file FFmpeg cannot read fails the ingest
naming it, or with --skip-bad skips its row (counted). When appending,
fields the dataset has no column for are ignored and listed.`,
		Example: `  loch ingest parquet captions.parquet ./ds --image-field path
  loch ingest parquet 'shards/*.parquet' s3://bucket/ds --image-compression jpeg --image-field image
  loch ingest parquet clips.parquet ./ds --media-column clip=video --skip-bad
  loch ingest parquet more.parquet ./ds --append`,
		Args: exactArgs("FILE", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file, o.url = args[0], args[1]
			return runIngestParquet(cmd, f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.imageFields, "image-field", nil, "field holding image paths or URLs, stored as an image column (repeatable)")
	fl.StringArrayVar(&o.linkFields, "link-field", nil, "field holding paths or URLs, stored as a link column (repeatable)")
	fl.StringVar(&o.imageCompression, "image-compression", "", "how new image columns store images: png (default), jpeg, lz4, zstd or none")
	fl.StringArrayVar(&o.mediaCols, "media-column", nil, "FIELD=video or FIELD=audio: a field holding paths or URLs of media files, stored as they are (repeatable)")
	fl.BoolVar(&o.skipBad, "skip-bad", false, "skip rows whose media file FFmpeg cannot read (missing files still fail)")
	return cmd
}

// runIngestParquet checks the flags of loch ingest parquet and ingests
// (runIngest does the rest, with the flags shared by the ingest commands).
func runIngestParquet(cmd *cobra.Command, f *ingestFlags, o *parquetOptions) error {
	switch o.imageCompression {
	case "", "png", "jpeg", "lz4", "zstd", "none":
	default:
		return usagef("--image-compression %q: want png, jpeg, lz4, zstd or none", o.imageCompression)
	}
	media, err := parseMediaColumns(o.mediaCols)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" && len(o.imageFields)+len(o.linkFields)+len(o.mediaCols) == 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(ingestGCPercent))
	}
	return runIngest(cmd, f, o.url, func(opts ingest.Options) (ingest.Result, error) {
		return ingestParquet(cmd.Context(), o, media, opts)
	})
}

// ingestGCPercent is the Go collector's GOGC for ingest parquet without
// image, link or media fields (those go value by value, with more
// garbage, and were not measured so), unless GOGC is set. Its heap is
// the stage's chunk builders and buffers, recycled, and little garbage:
// a collection once the heap is a quarter over its live bytes, rather
// than twice them, keeps the peak memory near what the chunks open and
// in flight hold, for a few collections of a heap of large buffers
// without pointers, which cost little (bench/RESULTS.md, issue 39
// target 5).
const ingestGCPercent = 25

// ingestParquet stages the rows of the Parquet file in the dataset at
// o.url (created when there is none) and commits them.
func ingestParquet(ctx context.Context, o *parquetOptions, media map[string]schema.SampleCompression, opts ingest.Options) (res ingest.Result, err error) {
	start := time.Now()
	defer func() { res.Elapsed = time.Since(start) }()
	base := "."
	if !strings.Contains(o.file, "://") {
		base = filepath.Dir(o.file)
		if st, err := os.Stat(o.file); err == nil {
			res.Bytes = st.Size()
		}
	}
	so := sqlcat.IngestOptions{ImageFields: o.imageFields, LinkFields: o.linkFields, ImageCompression: o.imageCompression, FileBase: base,
		Fields: mediaFields(ctx, mediaBase(o.file, base), media)}
	if o.skipBad {
		so.Skip = func(err error) bool { return errors.Is(err, ingest.ErrBadMedia) }
	}
	source := sqlcat.ParquetSource(o.file, o.imageFields)
	d, created, err := openParquetTarget(ctx, o, source, so, opts)
	res.Created = created
	if err != nil {
		return res, err
	}
	defer d.Close() // without Commit, Close discards what was staged
	staged, err := sqlcat.Stage(ctx, d, source, so)
	res.Rows, res.Ignored, res.Skipped = staged.Rows, staged.Ignored, int64(len(staged.Skipped))
	for _, sk := range staged.Skipped[:min(len(staged.Skipped), 10)] {
		res.SkippedNames = append(res.SkippedNames, fmt.Sprintf("%s:%d", o.file, sk.Row))
	}
	if err != nil {
		return res, err
	}
	if res.Rows == 0 {
		res.Version = d.Version()
		return res, nil
	}
	msg := opts.Message
	if msg == "" {
		msg = "ingest parquet " + o.file
	}
	if res.Version, err = d.Commit(ctx, msg); err != nil {
		return res, fmt.Errorf("commit %s: %w", o.url, err)
	}
	return res, nil
}

// openParquetTarget opens the dataset at o.url to ingest into, or creates
// it with the schema of the source (created says so); a dataset with rows
// is refused unless appending.
func openParquetTarget(ctx context.Context, o *parquetOptions, source string, so sqlcat.IngestOptions, opts ingest.Options) (d *loch.Dataset, created bool, err error) {
	dsOpts := append([]loch.Option{loch.WithParallelism(opts.Parallelism)}, opts.DatasetOptions...)
	d, err = loch.Open(ctx, o.url, dsOpts...)
	switch {
	case errors.Is(err, loch.ErrNoDataset):
		s, err := sqlcat.SourceSchema(ctx, source, so)
		if err != nil {
			return nil, false, fmt.Errorf("ingest parquet %s: %w", o.file, err)
		}
		if opts.ChunkBytes > 0 {
			for i := range s.Columns {
				s.Columns[i].ChunkBytes = opts.ChunkBytes
			}
		}
		if d, err = loch.Create(ctx, o.url, s, dsOpts...); err != nil {
			return nil, false, err
		}
		return d, true, nil
	case err != nil:
		return nil, false, err
	case d.Len() > 0 && !opts.Append:
		n := d.Len()
		d.Close()
		return nil, false, fmt.Errorf("ingest into %s: a dataset with %d rows is already there: %w", o.url, n, loch.ErrExists)
	}
	return d, false, nil
}

// mediaBase is the directory media paths are relative to: the Parquet
// file's (a URL's directory for a URL).
func mediaBase(file, local string) string {
	if i := strings.LastIndex(file, "/"); strings.Contains(file, "://") && i > strings.Index(file, "://")+2 {
		return file[:i]
	}
	return local
}

// mediaFields are the parquet ingest's --media-column fields: a VARCHAR
// path (relative to base) or URL, read and probed (ingest.ReadMedia).
func mediaFields(ctx context.Context, base string, media map[string]schema.SampleCompression) map[string]sqlcat.Field {
	if len(media) == 0 {
		return nil
	}
	out := map[string]sqlcat.Field{}
	for name, kind := range media {
		out[name] = sqlcat.Field{
			Column: ingest.MediaColumn(name, kind),
			Convert: func(v any) (loch.Sample, error) {
				ref, ok := v.(string)
				if !ok {
					return loch.Sample{}, fmt.Errorf("%s field holds %T %v, want a VARCHAR path or URL: %w", kind, v, v, loch.ErrInvalidArgument)
				}
				return ingest.ReadMedia(ctx, base, ref, kind)
			},
		}
	}
	return out
}
