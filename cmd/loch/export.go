package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/ingest"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// exportOptions are the arguments and flags of loch export.
type exportOptions struct {
	streams
	url, dir  string
	format    string
	columns   []string
	shardRows int
	refs      refFlags
	prog      progressFlags
	asJSON    bool
}

func newExportCmd() *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export URL DIR --format webdataset|npy",
		Short: "Write a version's rows as WebDataset tar shards or .npy arrays",
		Long: `Export writes the rows of a version (the head of main, or --ref) into
DIR, which must be empty or absent: a local directory (a path or a file://
URL) or a prefix in object storage (s3://, gs://, az://), where each file is
assembled in memory (a shard, or an .npy column) and uploaded whole. mem://
is refused: the files would vanish with this process.

--format webdataset (the default) writes tar shards DIR/shard-000000.tar,
DIR/shard-000001.tar, ... of --shard-rows rows each. Row r is stored as one
file per column, named <r>.<column>.<ext> with r zero-padded to 9 digits, so
WebDataset groups a row's files by the key <r> and names each field
<column>.<ext>:
  image columns   .png (pixel-exact), or .jpg with the stored JPEG bytes
                  unchanged when the column is jpeg-compressed
  class labels    .cls, the label as a decimal integer (one label per row;
                  several labels per row are written as .npy)
  text, link      .txt
  json            .json
  bytes           .bin
  other tensors   .npy
Null samples are left out. Each shard starts with a member .loch.json (a
hidden name, which WebDataset readers skip) holding the exported columns'
definitions: 'loch ingest webdataset' reads it back, so that export then
ingest gives the same column names, kinds, dtypes and class names (see
docs/cli.md).

--format npy writes one DIR/<column>.npy per column with all rows stacked:
shape [rows, *sample shape]. Only fixed-shape tensor columns have this form:
a ragged column, a text, json or bytes column, or a column with null samples
is an error when named in --columns and is skipped, with a note on stderr,
otherwise. bfloat16 columns are written as uint16 ('<u2') bit patterns.

A failed export removes the files it wrote, and DIR when it made it.

With --json the summary is one JSON object with the fields url, version,
dir, format, rows, shards (webdataset), files (the files written) and
skipped (npy: column and reason of each column left out; [] otherwise).

A bar over the rows is shown on standard error when that is a terminal, or
with --progress; never with --quiet.`,
		Example: `  loch export ./pets shards --format webdataset --shard-rows 10000
  loch export s3://bucket/pets s3://bucket/pets-wds
  loch export ./pets arrays --format npy --columns embedding,label
  loch export ./pets old --ref v1.0`,
		Args: exactArgs("URL", "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url, o.dir = streamsOf(cmd), args[0], args[1]
			return runExport(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "webdataset", "output format: webdataset or npy")
	cmd.Flags().StringSliceVar(&o.columns, "columns", nil, "columns to export, comma-separated (default all)")
	cmd.Flags().IntVar(&o.shardRows, "shard-rows", 1000, "rows per tar shard (webdataset)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the summary as one JSON object")
	o.prog.add(cmd.Flags())
	o.refs.add(cmd, "export")
	return cmd
}

// runExport exports a version of the dataset at o.url to o.dir and prints
// the summary; a failed export removes what it wrote.
func runExport(ctx context.Context, o *exportOptions) error {
	if o.format != "webdataset" && o.format != "npy" {
		return usagef("unknown --format %q: want webdataset or npy", o.format)
	}
	if o.shardRows < 1 {
		return usagef("--shard-rows %d: want at least 1", o.shardRows)
	}
	d, err := openDataset(ctx, o.url, &o.refs)
	if err != nil {
		return err
	}
	defer d.Close()
	s := d.Schema()
	cols, err := selectColumns(&s, o.columns)
	if err != nil {
		return err
	}
	dest, err := openExportDest(ctx, o.dir)
	if err != nil {
		return err
	}
	defer dest.Close()
	sum := exportJSON{URL: d.URL(), Version: d.Version(), Dir: o.dir, Format: o.format, Rows: d.Len(), Files: []string{}}
	if o.format == "npy" {
		err = exportNPY(ctx, &o.prog, o.stderr, d, cols, len(o.columns) > 0, dest, &sum)
	} else {
		err = exportWebDataset(ctx, &o.prog, o.stderr, d, cols, dest, o.shardRows, &sum)
	}
	if err != nil {
		return errors.Join(err, dest.remove(context.WithoutCancel(ctx)))
	}
	return printExport(o.stdout, sum, o.asJSON)
}

// printExport prints the summary of an export.
func printExport(w io.Writer, sum exportJSON, asJSON bool) error {
	if asJSON {
		if sum.Skipped == nil {
			sum.Skipped = []exportSkip{}
		}
		return printJSON(w, sum)
	}
	if sum.Format == "npy" {
		for _, line := range sum.lines {
			fmt.Fprintln(w, line)
		}
		fmt.Fprintf(w, "exported %d rows of version %s to %s (%d %s)\n", sum.Rows, sum.Version, sum.Dir, len(sum.Files), plural(len(sum.Files), "file", "files"))
		return nil
	}
	fmt.Fprintf(w, "exported %d rows of version %s to %s (%d %s)\n", sum.Rows, sum.Version, sum.Dir, *sum.Shards, plural(*sum.Shards, "shard", "shards"))
	return nil
}

// exportJSON is the summary of an export, printed by "loch export --json".
type exportJSON struct {
	URL     string       `json:"url"`
	Version string       `json:"version"`
	Dir     string       `json:"dir"`
	Format  string       `json:"format"`
	Rows    int64        `json:"rows"`
	Shards  *int         `json:"shards,omitempty"`
	Files   []string     `json:"files"`
	Skipped []exportSkip `json:"skipped"`

	lines []string // the text summary's lines (npy)
}

// exportSkip is a column that export --format npy left out, and why.
type exportSkip struct {
	Column string `json:"column"`
	Reason string `json:"reason"`
}

// exportDest is where an export writes its files: a directory of this
// machine (a path or a file:// URL), each file written through a temporary
// file and renamed into place, or a prefix in object storage, each file
// assembled in memory (a shard, or an .npy column) and uploaded whole, so
// that a reader never sees part of one.
type exportDest struct {
	raw   string        // DIR as given
	dir   string        // the local directory, or ""
	store storage.Store // the object store, or nil

	made    string   // the outermost directory of dir that the export made, or ""
	written []string // the files written: local paths, or object keys
}

// openExportDest opens DIR, which must be empty or absent (a local
// directory is made). mem:// is refused: the files would vanish with the
// process.
func openExportDest(ctx context.Context, raw string) (*exportDest, error) {
	if err := checkURL(raw); err != nil {
		return nil, err
	}
	if dir, ok := storage.LocalPath(raw); ok {
		entries, err := os.ReadDir(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("export directory: %w", err)
		case len(entries) > 0:
			return nil, fmt.Errorf("export directory %s is not empty; remove it or choose another", raw)
		}
		made := ""
		for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) || filepath.Dir(p) == p {
				break
			}
			made = p
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("export directory: %w", err)
		}
		return &exportDest{raw: raw, dir: dir, made: made}, nil
	}
	st, err := storage.Open(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("export directory: %w", err)
	}
	errFound := errors.New("found")
	err = st.List(ctx, "", func(storage.Attrs) error { return errFound })
	switch {
	case errors.Is(err, errFound):
		st.Close()
		return nil, fmt.Errorf("export directory %s is not empty; remove it or choose another", raw)
	case err != nil:
		st.Close()
		return nil, fmt.Errorf("export directory: %w", err)
	}
	return &exportDest{raw: raw, store: st}, nil
}

// write writes the file name with fn, whole or not at all, and returns
// its path or URL.
func (d *exportDest) write(ctx context.Context, name string, fn func(io.Writer) error) (string, error) {
	if d.store == nil {
		path := filepath.Join(d.dir, name)
		if !strings.Contains(d.raw, "://") {
			path = filepath.Join(d.raw, name) // a path as the user wrote it
		}
		if err := writeFileAtomic(path, fn); err != nil {
			return "", err
		}
		d.written = append(d.written, filepath.Join(d.dir, name))
		return path, nil
	}
	var buf bytes.Buffer
	if err := fn(&buf); err != nil {
		return "", err
	}
	if err := d.store.Put(ctx, name, buf.Bytes()); err != nil {
		return "", err
	}
	d.written = append(d.written, name)
	return objectURL(d.raw, name), nil
}

// remove undoes a failed export: it removes the files it wrote and the
// directories it made (those of DIR's path that did not exist; one that
// something else has since put a file in is left), never a directory that
// was there before.
func (d *exportDest) remove(ctx context.Context) error {
	var errs []error
	for _, f := range d.written {
		if d.store != nil {
			errs = append(errs, d.store.Delete(ctx, f))
		} else if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if d.made != "" {
		for p := filepath.Clean(d.dir); ; p = filepath.Dir(p) {
			if os.Remove(p) != nil || p == d.made {
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove what the failed export wrote: %w", err)
	}
	return nil
}

// objectURL is the URL of the object name under the prefix URL dir (one
// that storage.Open accepted, so it holds no credentials): the name goes
// before dir's query (s3://b/p?endpoint=... gives s3://b/p/name?endpoint=...).
func objectURL(dir, name string) string {
	base, query, _ := strings.Cut(dir, "?")
	out := strings.TrimSuffix(base, "/") + "/" + name
	if query != "" {
		out += "?" + query
	}
	return out
}

func (d *exportDest) Close() error {
	if d.store != nil {
		return d.store.Close()
	}
	return nil
}

// readBatch is the number of rows read together per column in exports.
const readBatch = 256

// exportWebDataset writes the rows as tar shards of shardRows rows.
func exportWebDataset(ctx context.Context, prog *progressFlags, errOut io.Writer, d *loch.Dataset, cols []*schema.Column, dest *exportDest, shardRows int, sum *exportJSON) error {
	meta := ingest.WebDatasetMeta{Format: ingest.WebDatasetMetaFormat, Version: d.Version()}
	for _, c := range cols {
		meta.Columns = append(meta.Columns, *c)
	}
	metaJSON, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	bar := prog.start(errOut, "export", d.Len(), unitRows)
	defer bar.done()
	readers := make([]*loch.ColumnReader, len(cols))
	for i, c := range cols {
		col, err := d.Column(c.Name)
		if err != nil {
			return err
		}
		readers[i] = col
	}
	n := d.Len()
	shards := 0
	for start := int64(0); start < n; start += int64(shardRows) {
		end := min(n, start+int64(shardRows))
		path, err := dest.write(ctx, fmt.Sprintf("shard-%06d.tar", shards), func(f io.Writer) error {
			tw := tar.NewWriter(f)
			if err := writeTarMember(tw, ingest.WebDatasetMetaName, metaJSON); err != nil {
				return err
			}
			for b := start; b < end; b += readBatch {
				e := min(end, b+readBatch)
				members := make([][]member, len(cols))
				for i, c := range cols {
					m, err := webDatasetMembers(ctx, readers[i], c, b, e)
					if err != nil {
						return err
					}
					members[i] = m
				}
				for row := b; row < e; row++ {
					for i, c := range cols {
						m := members[i][row-b]
						if m.data == nil {
							continue // null
						}
						if err := writeTarMember(tw, fmt.Sprintf("%09d.%s.%s", row, c.Name, m.ext), m.data); err != nil {
							return err
						}
					}
				}
				bar.add(e - b)
			}
			return tw.Close()
		})
		if err != nil {
			return err
		}
		shards++
		sum.Files = append(sum.Files, path)
	}
	sum.Shards = &shards
	return nil
}

// writeTarMember writes one regular file to a tar.
func writeTarMember(tw *tar.Writer, name string, data []byte) error {
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// member is one file of a WebDataset row; data is nil for a null sample.
type member struct {
	ext  string
	data []byte
}

// webDatasetMembers returns the files holding the samples of column c at
// rows [start, end).
func webDatasetMembers(ctx context.Context, col *loch.ColumnReader, c *schema.Column, start, end int64) ([]member, error) {
	out := make([]member, 0, end-start)
	if c.Kind == schema.Image && c.SampleCompression != schema.SampleNone && c.SampleCompression != "" {
		// Stored images are copied unchanged.
		for row := start; row < end; row++ {
			m, err := encodedImageMember(ctx, col, c, row)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
		return out, nil
	}
	samples, err := col.ReadRange(ctx, start, end)
	if err != nil {
		return nil, err
	}
	for k, smp := range samples {
		m, err := sampleMember(c, smp)
		if err != nil {
			return nil, fmt.Errorf("column %s row %d: %w", c.Name, start+int64(k), err)
		}
		out = append(out, m)
	}
	return out, nil
}

// encodedImageMember returns the stored png or jpeg bytes of an image.
func encodedImageMember(ctx context.Context, col *loch.ColumnReader, c *schema.Column, row int64) (member, error) {
	enc, err := col.ReadEncoded(ctx, row)
	if err != nil {
		return member{}, err
	}
	switch {
	case enc.Null:
		return member{}, nil
	case enc.Encoding == schema.PNG:
		return member{"png", nonNil(enc.Data)}, nil
	case enc.Encoding == schema.JPEG:
		return member{"jpg", nonNil(enc.Data)}, nil
	}
	m, err := sampleMember(c, enc)
	if err != nil {
		return member{}, fmt.Errorf("column %s row %d: %w", c.Name, row, err)
	}
	return m, nil
}

// sampleMember returns the file of a decoded sample.
func sampleMember(c *schema.Column, smp loch.Sample) (member, error) {
	if smp.Null {
		return member{}, nil
	}
	switch {
	case c.DType == schema.Text:
		return member{"txt", nonNil(smp.Data)}, nil
	case c.DType == schema.JSON:
		return member{"json", nonNil(smp.Data)}, nil
	case c.DType == schema.Bytes:
		return member{"bin", nonNil(smp.Data)}, nil
	case c.Kind == schema.ClassLabel && len(smp.Shape) == 0:
		return member{"cls", []byte(strconv.FormatInt(c.DType.Int(smp.Data, 0), 10))}, nil
	case isPNGable(c, smp.Shape):
		data, err := imaging.Encode("png", smp.Data, smp.Shape, 0)
		return member{"png", data}, err
	}
	var buf bytes.Buffer
	if err := writeNPY(&buf, c.DType, smp.Shape, smp.Data); err != nil {
		return member{}, err
	}
	return member{"npy", buf.Bytes()}, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// exportNPY writes one stacked .npy file per fixed-shape column. A column
// that has no .npy form is an error when explicit is set (the user named
// it) and is skipped with a note on stderr otherwise.
func exportNPY(ctx context.Context, prog *progressFlags, errOut io.Writer, d *loch.Dataset, cols []*schema.Column, explicit bool, dest *exportDest, sum *exportJSON) error {
	// Check every column before writing any file.
	type job struct {
		c     *schema.Column
		col   *loch.ColumnReader
		shape []int
	}
	var jobs []job
	for _, c := range cols {
		col, err := d.Column(c.Name)
		if err != nil {
			return err
		}
		e := entryOf(d, c)
		shape, err := npyColumnShape(ctx, col, &e, d.Len())
		if err != nil {
			if explicit {
				return err
			}
			fmt.Fprintf(errOut, "loch: skipping %s\n", oneLine(err.Error()))
			sum.Skipped = append(sum.Skipped, exportSkip{Column: c.Name, Reason: oneLine(err.Error())})
			continue
		}
		jobs = append(jobs, job{c, col, shape})
	}
	if len(jobs) == 0 {
		return fmt.Errorf("export %s: no column has a .npy form (fixed-shape tensors only)", d.URL())
	}
	n := d.Len()
	bar := prog.start(errOut, "export", n*int64(len(jobs)), unitRows)
	defer bar.done()
	for _, j := range jobs {
		c, shape := j.c, j.shape
		full := append([]int{int(n)}, shape...)
		path, err := dest.write(ctx, c.Name+".npy", func(w io.Writer) error {
			h, err := npyHeader(c.DType, full)
			if err != nil {
				return err
			}
			if _, err := w.Write(h); err != nil {
				return err
			}
			for b := int64(0); b < n; b += readBatch {
				samples, err := j.col.ReadRange(ctx, b, min(n, b+readBatch))
				if err != nil {
					return err
				}
				for k, smp := range samples {
					row := b + int64(k)
					if smp.Null {
						return fmt.Errorf("column %s: row %d is null and .npy has no nulls", c.Name, row)
					}
					if !slices.Equal(smp.Shape, shape) || len(smp.Data) != schema.NumElements(shape)*c.DType.Size() {
						return fmt.Errorf("column %s: row %d has shape %v, others %v: .npy holds one shape", c.Name, row, smp.Shape, shape)
					}
					if _, err := w.Write(smp.Data); err != nil {
						return err
					}
				}
				bar.add(int64(len(samples)))
			}
			return nil
		})
		if err != nil {
			return err
		}
		sum.Files = append(sum.Files, path)
		sum.lines = append(sum.lines, fmt.Sprintf("wrote %s: %s %s", path, c.DType, schema.FormatShape(full)))
	}
	return nil
}

// npyColumnShape returns the per-sample shape of a column that can be
// stacked into one .npy array, or an error naming the column saying why it
// cannot. The shape comes from the column statistics, or from the first
// sample when they have none (scalar columns).
func npyColumnShape(ctx context.Context, col *loch.ColumnReader, c *schema.Entry, rows int64) ([]int, error) {
	if _, err := npyDescr(c.DType); err != nil {
		return nil, fmt.Errorf("column %s: %s has no .npy form", c.Name, c.DType)
	}
	if lo, hi := observedShapes(c); lo != nil && hi != nil {
		if !slices.Equal(lo, hi) {
			return nil, fmt.Errorf("column %s: ragged (shapes %s) but .npy holds one shape; export it with --format webdataset", c.Name, shapeRange(c))
		}
		return lo, nil
	}
	if rows == 0 {
		if c.Shape.Fixed() {
			return c.Shape, nil
		}
		return nil, fmt.Errorf("column %s: no rows and no fixed declared shape", c.Name)
	}
	smp, err := col.Read(ctx, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("column %s row 0: %w", c.Name, err)
	}
	if smp.Null {
		return nil, fmt.Errorf("column %s: row 0 is null and .npy has no nulls", c.Name)
	}
	return smp.Shape, nil
}
