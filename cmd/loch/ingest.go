package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/ingest"
	"github.com/lochdata/loch/schema"
)

// ingestFlags are the options shared by the ingest subcommands.
type ingestFlags struct {
	parallelism int
	chunkBytes  sizeFlag
	message     string
	append      bool
	branch      string
	progress    progressFlags
	stageOnly   bool
	out         string
	cpuProfile  string
	memProfile  string

	// Image options, on the subcommands that read images.
	skipBad          bool
	imageCompression string
	jpegQuality      int
	resize           string
	channels         int
	validate         string
}

func newIngestCmd() *cobra.Command {
	f := &ingestFlags{}
	cmd := &cobra.Command{
		Use:   "ingest FORMAT ARGS... URL",
		Short: "Ingest image folders, JSON lines, CSV, Parquet, numpy arrays, WebDataset shards or COCO",
		Long: `Ingest reads data in a format it already comes in and commits it to the
dataset at URL as one new version, at the end: an ingest that fails or is
interrupted commits nothing.

URL is a local path or object storage (mem://, process-local memory, is
refused: the dataset would be gone when the command exits). The dataset is
created when URL holds none (creating commits an empty first version, so a
failed ingest into a new URL leaves an empty dataset; running the same
command again fills it). A dataset with rows is only added to with
--append, and then the source's columns must fit its schema. The rows are
committed to branch main, or to --branch, which must exist (create it with
'loch branch').

With --stage-only the rows are written and not committed; their description
goes to --out, and 'loch commit URL DESC.json...' publishes any number of
such descriptions, from any number of machines, in one commit.

Images are decoded once, at ingest, and stored in their final form: with
--image-compression png (the default) or jpeg, files already in that format
are stored byte for byte, others are re-encoded; lz4, zstd and none store the
decoded uint8 [height, width, channels] pixels with that chunk codec. A file
stored byte for byte is checked, by default, by its header and structure (a
JPEG's markers to its EOI, a PNG's chunks and CRCs to IEND), and 1 in 64 of
them is decoded whole (--validate sample); --validate full decodes each,
--validate header none. A file that fails names itself and what is wrong.

Files are read and converted on all cores (--parallelism); row order does not
depend on it. A progress bar (rows/s, bytes/s, ETA) is shown when standard error
is a terminal, or with --progress, and never with --quiet. A summary line
is always printed, with sizes in binary units (as info prints them).`,
		Example: `  loch ingest imagefolder ./train ./imagenet-train
  loch ingest jsonl captions.jsonl s3://bucket/captions --image-field image
  loch ingest csv labels.csv ./labels
  loch ingest npy x.npy y.npy ./arrays
  loch ingest webdataset 'shards/train-{0000..0099}.tar' ./train
  loch ingest coco annotations/instances_val2017.json val2017 ./coco-val
  loch ingest jsonl more.jsonl ./ds --append --branch dev
  loch ingest jsonl part-7.jsonl s3://bucket/ds --stage-only --out part-7.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return usagef("unknown format %q (want imagefolder, jsonl, csv, parquet, npy, npz, webdataset, coco, video or audio)", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	pf := cmd.PersistentFlags()
	pf.IntVarP(&f.parallelism, "parallelism", "j", 0, "goroutines that read and convert the source (default all cores)")
	pf.Var(&f.chunkBytes, "chunk-bytes", "target decoded bytes per chunk of each new column, e.g. 16MiB, 16MB or 16M (default 8MiB; see 'loch --help' for units)")
	pf.StringVarP(&f.message, "message", "m", "", `commit message (default "ingest FORMAT SOURCE")`)
	pf.BoolVar(&f.append, "append", false, "add the rows to the existing dataset at URL")
	pf.StringVar(&f.branch, "branch", "", "commit to this existing branch of the dataset instead of main")
	pf.BoolVar(&f.stageOnly, "stage-only", false, "write the rows without committing them, and their description to --out, for 'loch commit'")
	pf.StringVar(&f.out, "out", "", "with --stage-only: the file the description is written to (- for standard output)")
	f.progress.add(pf)
	pf.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the ingest to this file, for go tool pprof")
	pf.StringVar(&f.memProfile, "memprofile", "", "write a heap profile (live and allocated bytes) at the end of the ingest to this file, for go tool pprof")

	cmd.AddCommand(
		newIngestImageFolderCmd(f),
		newIngestRecordsCmd(f, "jsonl"),
		newIngestRecordsCmd(f, "csv"),
		newIngestParquetCmd(f),
		newIngestNPYCmd(f),
		newIngestNPZCmd(f),
		newIngestWebDatasetCmd(f),
		newIngestCOCOCmd(f),
		newIngestMediaCmd(f, schema.VideoCompression),
		newIngestMediaCmd(f, schema.AudioCompression),
	)
	return cmd
}

// addImageFlags adds the flags of subcommands that read images.
func addImageFlags(cmd *cobra.Command, f *ingestFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.imageCompression, "image-compression", "png", "how images are stored: png, jpeg (sample compression) or lz4, zstd, none (decoded pixels); when appending, the dataset's")
	fl.IntVar(&f.jpegQuality, "jpeg-quality", 90, "quality (1-100) of images re-encoded as jpeg")
	fl.StringVar(&f.resize, "resize", "", "resize every image to WIDTHxHEIGHT, e.g. 224x224 (N alone: NxN); at most 65535 a side")
	fl.IntVar(&f.channels, "channels", 0, "convert every image to 1 (gray), 3 (RGB) or 4 (RGBA) channels (default: keep each image's)")
	fl.BoolVar(&f.skipBad, "skip-bad", false, "skip rows whose image cannot be decoded (missing files still fail)")
	fl.StringVar(&f.validate, "validate", ingest.ValidateSample, fmt.Sprintf("how png/jpeg files stored as they are are proven readable: sample (header and structure of each, and a full decode of 1 in %d), header (no decode) or full (decode each)", ingest.SampleEvery))
}

func newIngestImageFolderCmd(f *ingestFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "imagefolder SRC URL",
		Short: "Ingest class sub-folders of images (the ImageNet layout)",
		Long: `Ingest an image classification tree SRC/<class>/<file> (a local directory
or a store URL) into two columns: image (kind image, uint8 HWC) and label
(kind class_label, int64; the class names are the sorted sub-folder names).
Rows are ordered by class, then folder and file name. Image files are png,
jpg, jpeg, gif, bmp, webp, tif and tiff; other files and names starting with
'.' are skipped.`,
		Example: `  loch ingest imagefolder ./train ./imagenet-train
  loch ingest imagefolder ./train s3://bucket/train --image-compression jpeg
  loch ingest imagefolder s3://bucket/raw/train ./train --resize 224x224 --channels 3
  loch ingest imagefolder ./more ./imagenet-train --append --skip-bad`,
		Args: exactArgs("SRC", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIngest(cmd, f, args[1], func(o ingest.Options) (ingest.Result, error) {
				return ingest.ImageFolder(cmd.Context(), args[0], args[1], o)
			})
		},
	}
	addImageFlags(cmd, f)
	return cmd
}

// recordsOptions are the arguments and own flags of loch ingest jsonl and
// loch ingest csv.
type recordsOptions struct {
	format                             string // jsonl or csv
	file, url                          string
	schemaFile                         string
	imageFields, linkFields, mediaCols []string
	delimiter                          string
}

// ingestJSONLLong is the help text of loch ingest jsonl.
const ingestJSONLLong = `Ingest a JSON lines file (a local path or a URL): one JSON object per line,
one row per object, one column per field.

Without --schema, columns are inferred in a first pass over the file: a field
whose values are all integers becomes int64, numbers float64, booleans bool,
strings text, objects and arrays json, and a mix json; null and missing
values are null. --image-field makes a field holding paths (relative to the
file's directory) or URLs an image column; --link-field stores such
references as a link column.

With --schema FILE (JSON or YAML), or when appending (the dataset's schema),
there is no first pass: values are converted to the columns (arrays to
tensors, class names to labels) and fields without a column are ignored and
listed in the summary.`

// ingestCSVLong is the help text of loch ingest csv.
const ingestCSVLong = `Ingest a CSV file with a header row (a local path or a URL), one row per
record, one column per header name.

Without --schema, columns are inferred in a first pass over the file: cells
are empty (null), integers, numbers, true/false, JSON objects or arrays, or
strings; a column of integers becomes int64, of numbers float64, of booleans
bool, of JSON json, and any other a text column (so "02134" stays text).
--image-field, --link-field and --schema work as for jsonl.`

func newIngestRecordsCmd(f *ingestFlags, format string) *cobra.Command {
	o := &recordsOptions{format: format}
	cmd := &cobra.Command{
		Use: format + " FILE URL",
		Example: fmt.Sprintf(`  loch ingest %[1]s data.%[1]s ./ds
  loch ingest %[1]s data.%[1]s ./ds --image-field image --link-field source_url
  loch ingest %[1]s s3://bucket/data.%[1]s s3://bucket/ds --schema schema.yaml
  loch ingest %[1]s more.%[1]s ./ds --append`, format),
		Args: exactArgs("FILE", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file, o.url = args[0], args[1]
			return runIngestRecords(cmd, f, o)
		},
	}
	switch format {
	case "jsonl":
		cmd.Short = "Ingest a JSON lines file, one row per object"
		cmd.Long = ingestJSONLLong
	case "csv":
		cmd.Short = "Ingest a CSV file with a header row, one row per record"
		cmd.Long = ingestCSVLong
		cmd.Flags().StringVar(&o.delimiter, "delimiter", ",", `field separator: one character, or "tab"`)
	}
	cmd.Flags().StringVar(&o.schemaFile, "schema", "", "schema file (JSON or YAML, - for standard input) to use instead of inferring one")
	cmd.Flags().StringArrayVar(&o.imageFields, "image-field", nil, "field holding image paths or URLs, stored as an image column (repeatable)")
	cmd.Flags().StringArrayVar(&o.linkFields, "link-field", nil, "field holding paths or URLs, stored as a link column (repeatable)")
	cmd.Flags().StringArrayVar(&o.mediaCols, "media-column", nil, "FIELD=video or FIELD=audio: a field holding paths or URLs of media files, stored as they are (repeatable)")
	addImageFlags(cmd, f)
	return cmd
}

// runIngestRecords ingests a JSON lines or CSV file (runIngest does the
// rest, with the flags shared by the ingest commands).
func runIngestRecords(cmd *cobra.Command, f *ingestFlags, o *recordsOptions) error {
	var delim rune
	if o.format == "csv" {
		d, err := parseDelimiter(o.delimiter)
		if err != nil {
			return err
		}
		delim = d
	}
	var s *schema.Schema
	if o.schemaFile != "" {
		v, err := readSchema(cmd.InOrStdin(), o.schemaFile)
		if err != nil {
			return err
		}
		s = &v
	}
	media, err := parseMediaColumns(o.mediaCols)
	if err != nil {
		return err
	}
	return runIngest(cmd, f, o.url, func(opts ingest.Options) (ingest.Result, error) {
		opts.Schema, opts.ImageFields, opts.LinkFields, opts.Delimiter = s, o.imageFields, o.linkFields, delim
		opts.MediaFields = media
		if o.format == "csv" {
			return ingest.CSV(cmd.Context(), o.file, o.url, opts)
		}
		return ingest.JSONL(cmd.Context(), o.file, o.url, opts)
	})
}

// filesAndURL checks the arguments FILE... URL.
func filesAndURL(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch len(args) {
		case 0:
			return usagef("missing %s and URL", what)
		case 1:
			return usagef("missing URL (after the %s)", what)
		}
		return nil
	}
}

func newIngestNPYCmd(f *ingestFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "npy FILE... URL",
		Short: "Ingest numpy .npy arrays, one column per file",
		Long: `Ingest .npy files (local paths or URLs), one column per file named after the
file. The first axis is the row axis: row i holds arr[i] of every array, with
the array's dtype and the per-row shape arr.shape[1:]; all arrays must have
the same length. Supported: bool, int8-64, uint8-64, float16/32/64 in either
byte order and C or Fortran order, and 1-D unicode (text) and byte-string
(bytes) arrays.`,
		Example: `  loch ingest npy features.npy labels.npy ./ds
  loch ingest npy s3://bucket/emb.npy ./ds --append`,
		Args: filesAndURL("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := args[len(args)-1]
			return runIngest(cmd, f, url, func(o ingest.Options) (ingest.Result, error) {
				return ingest.NPY(cmd.Context(), args[:len(args)-1], url, o)
			})
		},
	}
}

func newIngestNPZCmd(f *ingestFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "npz FILE URL",
		Short: "Ingest the arrays of a numpy .npz archive, one column per array",
		Long: `Ingest the arrays of a .npz archive (np.savez or np.savez_compressed; a
local path or a URL), one column per array named after it, as npy does.`,
		Example: `  loch ingest npz data.npz ./ds`,
		Args:    exactArgs("FILE", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIngest(cmd, f, args[1], func(o ingest.Options) (ingest.Result, error) {
				return ingest.NPZ(cmd.Context(), args[0], args[1], o)
			})
		},
	}
}

func newIngestWebDatasetCmd(f *ingestFlags) *cobra.Command {
	var schemaFile string
	cmd := &cobra.Command{
		Use:   "webdataset SHARD... URL",
		Short: "Ingest WebDataset tar shards, one row per sample",
		Long: `Ingest WebDataset shards: tar files (plain or gzipped; local paths or URLs;
brace patterns like shard-{0000..0099}.tar are expanded) in which files that
share a name up to the first dot form one row. The extension names the
column and its last part decides its type: jpg, jpeg, png, webp, gif, bmp,
tif, tiff are images; cls, cls2, label class labels (int64); txt, text text;
json json; npy tensors; anything else bytes. The key goes to "__key__".

Shards written by 'loch export --format webdataset' start with a member
.loch.json holding the exported columns; without --schema those columns are
used (names, dtypes, kinds, shapes, compression, class names), each file
<key>.<column>.<ext> goes to its column and there is no "__key__" column,
so that export then ingest round-trips (see docs/cli.md).

Otherwise, without --schema the columns are those of the first shard; with
--schema, extensions are matched to its columns by name and others are
ignored.`,
		Example: `  loch ingest webdataset 'shards/train-{0000..0099}.tar' ./train
  loch ingest webdataset s3://bucket/shard-{000..009}.tar.gz s3://bucket/ds --image-compression jpeg`,
		Args: filesAndURL("SHARD"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s *schema.Schema
			if schemaFile != "" {
				v, err := readSchema(cmd.InOrStdin(), schemaFile)
				if err != nil {
					return err
				}
				s = &v
			}
			url := args[len(args)-1]
			return runIngest(cmd, f, url, func(o ingest.Options) (ingest.Result, error) {
				o.Schema = s
				return ingest.WebDataset(cmd.Context(), args[:len(args)-1], url, o)
			})
		},
	}
	cmd.Flags().StringVar(&schemaFile, "schema", "", "schema file (JSON or YAML, - for standard input) whose columns are matched to extensions")
	addImageFlags(cmd, f)
	return cmd
}

func newIngestCOCOCmd(f *ingestFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "coco ANNOTATIONS IMAGES_DIR URL",
		Short: "Ingest a COCO object detection dataset, one row per image",
		Long: `Ingest a COCO instances annotation file and the images it names (relative
to IMAGES_DIR, a directory or a URL prefix), one row per image in the file's
order, with columns image, boxes (bbox, float32 [n, 4], xywh in pixels),
labels (class_label int64 [n]: the position of the category in the file's
"categories"; the class names are the categories' names), iscrowd (bool
[n]), image_id (int64) and file_name (text).`,
		Example: `  loch ingest coco annotations/instances_val2017.json val2017 ./coco-val
  loch ingest coco s3://bucket/ann.json s3://bucket/images ./coco --image-compression jpeg`,
		Args: exactArgs("ANNOTATIONS", "IMAGES_DIR", "URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIngest(cmd, f, args[2], func(o ingest.Options) (ingest.Result, error) {
				return ingest.COCO(cmd.Context(), args[0], args[1], args[2], o)
			})
		},
	}
	addImageFlags(cmd, f)
	return cmd
}

// runIngest builds the options from the flags, runs do with a progress
// bar when wanted and prints the summary line. The values of the flags are
// checked by the ingest package (Options.Validate), not here: an invalid
// one is reported as a usage error with its message.
func runIngest(cmd *cobra.Command, f *ingestFlags, url string, do func(ingest.Options) (ingest.Result, error)) error {
	if err := checkURL(url); err != nil {
		return err
	}
	o, err := f.options(cmd)
	if err != nil {
		return err
	}
	switch {
	case f.stageOnly && f.out == "":
		return usagef("--stage-only needs --out DESC.json: where the description of the staged rows goes")
	case !f.stageOnly && f.out != "":
		return usagef("--out is for --stage-only")
	}
	o.StageOnly = f.stageOnly
	if err := o.Validate(); err != nil {
		return &usageError{err}
	}
	if f.branch != "" {
		// Checked first: ingest would take a missing branch for a missing
		// dataset, and would find a tag read-only only at the commit.
		d, err := openBranch(cmd.Context(), url, f.branch)
		if err != nil {
			return err
		}
		d.Close()
		o.DatasetOptions = []loch.Option{loch.WithRef(f.branch)}
	}
	if ac, err := autoCompactEnv(); err != nil {
		return err
	} else if ac != nil {
		o.DatasetOptions = append(o.DatasetOptions, loch.WithAutoCompact(*ac))
	}
	errOut := cmd.ErrOrStderr()
	var bar *progressBar
	if f.progress.shown(errOut) {
		bar = &progressBar{w: errOut}
		o.Progress = bar
	}
	res, err := profiled(f, func() (ingest.Result, error) { return do(o) })
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		if errors.Is(err, loch.ErrExists) && !f.append {
			return fmt.Errorf("%w (pass --append to add to it)", err)
		}
		if res.Created {
			return fmt.Errorf("%w (nothing was committed: the dataset at %s was created and is empty; the same command again fills it)", err, url)
		}
		return err
	}
	if f.stageOnly {
		return writeStaged(cmd, f.out, res, url)
	}
	if f.branch != "" {
		url += " (branch " + f.branch + ")"
	}
	fmt.Fprintln(cmd.OutOrStdout(), summary(res, url))
	return nil
}

// options converts the flags to ingest options; only the flags that are
// strings to parse can fail here.
func (f *ingestFlags) options(cmd *cobra.Command) (ingest.Options, error) {
	o := ingest.Options{
		Parallelism: f.parallelism,
		Message:     f.message,
		Append:      f.append,
		SkipBad:     f.skipBad,
		JPEGQuality: f.jpegQuality,
		Channels:    f.channels,
	}
	switch f.validate {
	case "", ingest.ValidateSample, ingest.ValidateHeader, ingest.ValidateFull:
		o.ImageValidation = f.validate
	default:
		return o, usagef("--validate %q: want sample, header or full", f.validate)
	}
	if fl := cmd.Flags().Lookup("chunk-bytes"); fl != nil && fl.Changed && (f.chunkBytes < 1024 || f.chunkBytes > 1<<30) {
		return o, usagef("--chunk-bytes %s: want 1 KiB to 1 GiB", fl.Value)
	}
	o.ChunkBytes = int(f.chunkBytes)
	// Unless given, the compression is left empty: appending then takes
	// the dataset's.
	if fl := cmd.Flags().Lookup("image-compression"); fl != nil && fl.Changed {
		o.ImageCompression = f.imageCompression
	}
	if f.resize != "" {
		size, err := parseSize(f.resize)
		if err != nil {
			return o, usagef("--resize: %v", err)
		}
		o.Resize = size
	}
	return o, nil
}

// summary is the one-line report of a finished ingest.
func summary(r ingest.Result, url string) string {
	secs := max(r.Elapsed.Seconds(), 1e-9)
	s := fmt.Sprintf("ingested %d %s, %s in %s (%.0f rows/s, %s) into %s, version %s",
		r.Rows, plural(r.Rows, "row", "rows"), formatBytes(r.Bytes), r.Elapsed.Round(time.Millisecond), float64(r.Rows)/secs,
		formatRate(r.Bytes, secs), url, r.Version)
	if r.Created {
		s += " (created)"
	}
	if r.Skipped > 0 {
		s += fmt.Sprintf("; skipped %d undecodable files: %s", r.Skipped, strings.Join(r.SkippedNames, ", "))
		if int64(len(r.SkippedNames)) < r.Skipped {
			s += ", ..."
		}
	}
	if len(r.Ignored) > 0 {
		s += "; ignored fields without a column: " + strings.Join(r.Ignored, ", ")
	}
	return s
}

// progressBar shows an ingest's progress (see progress.go): a bar over
// the source bytes (or rows, when the bytes are unknown) with a rate and
// an ETA, and rows and rows/s in its description. It adapts the CLI's bar
// to ingest.Progress.
type progressBar struct {
	w     io.Writer
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	start time.Time
	total struct{ rows, bytes int64 }
	done  struct{ rows, bytes int64 }
}

// Total implements ingest.Progress.
func (p *progressBar) Total(rows, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total.rows, p.total.bytes = rows, bytes
	if p.bar != nil {
		p.bar.ChangeMax64(p.max())
		return
	}
	p.start = time.Now()
	unit := unitRows
	if p.byBytes() || p.max() < 0 {
		unit = unitBytes
	}
	p.bar = newBar(p.w, "ingest", p.max(), unit)
}

func (p *progressBar) byBytes() bool { return p.total.bytes > 0 || p.total.rows < 0 }

func (p *progressBar) max() int64 {
	switch {
	case p.total.bytes > 0:
		return p.total.bytes
	case p.total.rows > 0:
		return p.total.rows
	}
	return -1 // a spinner
}

// Add implements ingest.Progress.
func (p *progressBar) Add(rows, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		return
	}
	p.done.rows += rows
	p.done.bytes += bytes
	secs := max(time.Since(p.start).Seconds(), 1e-3)
	desc := fmt.Sprintf("%d rows (%.0f rows/s)", p.done.rows, float64(p.done.rows)/secs)
	if !p.byBytes() {
		desc = fmt.Sprintf("%s (%s)", formatBytes(p.done.bytes), formatRate(p.done.bytes, secs))
	}
	p.bar.Describe(desc)
	if p.byBytes() {
		_ = p.bar.Add64(bytes)
	} else {
		_ = p.bar.Add64(rows)
	}
}

// finish erases the bar, leaving the line to the summary or the error.
func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
		_ = p.bar.Exit()
	}
}

// parseSize parses WIDTHxHEIGHT, or one number for a square. The values
// are checked by ingest.Options.Validate.
func parseSize(s string) (ingest.Size, error) {
	ws, hs, ok := strings.Cut(strings.ToLower(s), "x")
	if !ok {
		hs = ws
	}
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if err1 != nil || err2 != nil || w <= 0 || h <= 0 {
		return ingest.Size{}, fmt.Errorf("%q: want WIDTHxHEIGHT with positive sides, e.g. 224x224", s)
	}
	return ingest.Size{Width: w, Height: h}, nil
}

// parseDelimiter parses the --delimiter of csv.
func parseDelimiter(s string) (rune, error) {
	switch s {
	case "tab", `\t`:
		return '\t', nil
	}
	r := []rune(s)
	if len(r) != 1 || r[0] == '"' || r[0] == '\r' || r[0] == '\n' {
		return 0, usagef("--delimiter %q: want one character (not a quote or newline), or \"tab\"", s)
	}
	return r[0], nil
}

// writeStaged writes the description of a --stage-only ingest to out (-:
// standard output, with the summary on standard error) and prints the
// summary.
func writeStaged(cmd *cobra.Command, out string, res ingest.Result, url string) error {
	b, err := json.Marshal(res.Staged)
	if err != nil {
		return fmt.Errorf("encode the description: %w", err)
	}
	// The summary goes to standard output, unless the description does.
	summary, where, file := cmd.OutOrStdout(), "description "+out, out
	if out == "-" {
		if _, err := cmd.OutOrStdout().Write(append(b, '\n')); err != nil {
			return err
		}
		summary, where, file = cmd.ErrOrStderr(), "description on standard output", "FILE"
	} else if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the description: %w", err)
	}
	fmt.Fprintf(summary, "staged %d %s, %s in %s for %s, not committed: %s (commit with 'loch commit %s %s')\n",
		res.Rows, plural(res.Rows, "row", "rows"), formatBytes(res.Bytes), res.Elapsed.Round(time.Millisecond), url, where, url, file)
	return nil
}

// profiled runs do under the CPU profile --cpuprofile asks for, and
// writes the heap profile --memprofile asks for after it. Both files are
// created first: a path that cannot be written fails before the ingest.
func profiled(f *ingestFlags, do func() (ingest.Result, error)) (ingest.Result, error) {
	var mem *os.File
	if f.memProfile != "" {
		var err error
		if mem, err = os.Create(f.memProfile); err != nil {
			return ingest.Result{}, fmt.Errorf("--memprofile: %w", err)
		}
		defer mem.Close()
	}
	stop, err := startCPUProfile(f.cpuProfile)
	if err != nil {
		return ingest.Result{}, err
	}
	res, err := do()
	if perr := stop(); err == nil {
		err = perr
	}
	if mem != nil && err == nil {
		runtime.GC() // the heap profile's live figures are as of the last collection
		if err = pprof.WriteHeapProfile(mem); err == nil {
			err = mem.Close()
		}
		if err != nil {
			err = fmt.Errorf("--memprofile %s: %w", f.memProfile, err)
		}
	}
	return res, err
}
