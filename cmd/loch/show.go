package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/schema"
)

// maxShownElements is the largest tensor whose values show prints.
const maxShownElements = 16

// showOptions are the arguments and flags of loch show.
type showOptions struct {
	streams
	url         string
	row         int64
	id          uint64
	byRow, byID bool // --row, --id given
	columns     []string
	outDir      string
	refs        refFlags
	asJSON      bool
}

func newShowCmd() *cobra.Command {
	var o showOptions
	cmd := &cobra.Command{
		Use:   "show URL (--row N | --id ID) [--column C] [--out DIR]",
		Short: "Print one row, and optionally write its tensors and images to files",
		Long: `Show prints the values of one row, chosen by --row N, its position (0 is
the first row), or by --id ID, its stable row id (positions move when rows
are deleted or updated; ids do not): scalars, text and
json (pretty-printed) in full, class labels with their class names, and
tensors as their dtype and shape (with their values when they have at most
16 elements). --column limits the output to some columns.

With --out, each non-null sample is also written to DIR:
  image columns (kind image, uint8)  DIR/<column>.png, pixel-exact: the stored
                                     PNG bytes unchanged for png columns,
                                     the decoded pixels otherwise
  text, json, bytes columns          DIR/<column>.txt, .json, .bin
  every other tensor column          DIR/<column>.npy (numpy format 1.0)

bfloat16 has no numpy dtype: bfloat16 tensors are written as uint16 ('<u2')
holding the bfloat16 bit patterns (view them with ml_dtypes.bfloat16).

With --json it prints one JSON object with the fields url, version, row (the
position), id, rows (of the version) and columns, a list of objects with
the fields name, dtype, kind, null, shape, value (a number, bool, string,
JSON value or, for tensors of at most 16 elements, a flat list; absent for
larger tensors and bytes), class (a class label's name) and file (the file
written with --out).

Video and audio columns (sample compression video or audio) are described
from their chunk headers, without decoding: shape, container/codec, rate,
duration and size. With --out the stored file is written as
DIR/<column>.<container> (mp4, webm, wav, flac, mp3, ...) and, for video, a
contact sheet of 8 evenly spaced frames, 160 pixels wide, 4 to a row, as
DIR/<column>.png.`,
		Example: `  loch show ./pets --row 0
  loch show ./pets --id 1234 --json
  loch show ./pets --row 42 --column image,label --out row42
  loch show ./pets --row 7 --ref 3f2a9c`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			o.byRow, o.byID = cmd.Flags().Changed("row"), cmd.Flags().Changed("id")
			return runShow(cmd.Context(), &o)
		},
	}
	cmd.Flags().Int64Var(&o.row, "row", 0, "row position, 0 for the first row")
	cmd.Flags().Uint64Var(&o.id, "id", 0, "stable row id (as log, diff and order print it) instead of --row")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	cmd.Flags().StringSliceVar(&o.columns, "column", nil, "columns to show, comma-separated (default all)")
	cmd.Flags().StringVar(&o.outDir, "out", "", "write images as DIR/<column>.png and tensors as DIR/<column>.npy")
	o.refs.add(cmd, "read")
	return cmd
}

// runShow prints one row of the dataset at o.url.
func runShow(ctx context.Context, o *showOptions) error {
	d, err := openDataset(ctx, o.url, &o.refs)
	if err != nil {
		return err
	}
	defer d.Close()
	row, err := o.position(ctx, d)
	if err != nil {
		return err
	}
	s := d.Schema()
	cols, err := selectColumns(&s, o.columns)
	if err != nil {
		return err
	}
	if o.outDir != "" {
		if err := os.MkdirAll(o.outDir, 0o755); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
	}
	id, err := d.RowID(ctx, row)
	if err != nil {
		return err
	}
	doc := showJSON{URL: d.URL(), Version: d.Version(), Row: row, ID: id, Rows: d.Len(), Columns: []showColumnJSON{}}
	for _, c := range cols {
		v, err := showColumn(ctx, d, c, row, o.outDir)
		if err != nil {
			return err
		}
		doc.Columns = append(doc.Columns, v)
	}
	if o.asJSON {
		return printJSON(o.stdout, doc)
	}
	printRow(o.stdout, doc)
	return nil
}

// position is the position in d of the row that --row or --id names.
func (o *showOptions) position(ctx context.Context, d *loch.Dataset) (int64, error) {
	row := o.row
	switch {
	case o.byRow && o.byID:
		return 0, usagef("give --row or --id, not both")
	case !o.byRow && !o.byID:
		return 0, usagef("give the row to show: --row POSITION or --id ROW_ID")
	case o.byID:
		var err error
		if row, err = rowOfID(ctx, d, o.id); err != nil {
			return 0, err
		}
	}
	if n := d.Len(); row < 0 || row >= n {
		if n == 0 {
			return 0, fmt.Errorf("row %d out of range: %s has no rows", row, d.URL())
		}
		return 0, fmt.Errorf("row %d out of range: %s has %d rows (0..%d)", row, d.URL(), n, n-1)
	}
	return row, nil
}

// printRow prints a shown row as a table: a header line, then one line
// per column (more for a value of several lines).
func printRow(w io.Writer, doc showJSON) {
	fmt.Fprintf(w, "row %d of %d (id %d), version %s\n", doc.Row, doc.Rows, doc.ID, doc.Version)
	width := 0
	for _, v := range doc.Columns {
		width = max(width, len(v.Name))
	}
	for _, v := range doc.Columns {
		value := v.text
		if v.File != "" {
			value += "  -> " + v.File
		}
		pad := strings.Repeat(" ", width+2)
		value = strings.ReplaceAll(value, "\n", "\n"+pad)
		fmt.Fprintf(w, "%-*s%s\n", width+2, v.Name, value)
	}
}

// selectColumns returns the columns named in names, in that order, or all
// columns when names is empty.
func selectColumns(s *schema.Schema, names []string) ([]*schema.Column, error) {
	var out []*schema.Column
	if len(names) == 0 {
		for i := range s.Columns {
			out = append(out, &s.Columns[i])
		}
		return out, nil
	}
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		c, ok := s.Column(n)
		if !ok {
			return nil, fmt.Errorf("no column %q (columns: %s): %w", n, strings.Join(s.Names(), ", "), loch.ErrNotFound)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// showJSON is the document printed by "loch show --json".
type showJSON struct {
	URL     string           `json:"url"`
	Version string           `json:"version"`
	Row     int64            `json:"row"`
	ID      uint64           `json:"id"`
	Rows    int64            `json:"rows"`
	Columns []showColumnJSON `json:"columns"`
}

// showColumnJSON is one column of a shown row.
type showColumnJSON struct {
	Name  string       `json:"name"`
	DType schema.DType `json:"dtype"`
	Kind  schema.Kind  `json:"kind"`
	Null  bool         `json:"null"`
	Shape []int        `json:"shape"`
	Value any          `json:"value,omitempty"`
	Class string       `json:"class,omitempty"`
	File  string       `json:"file,omitempty"`

	text string // the value as the table shows it
}

// rowOfID returns the position of the row with the stable id in d's
// version.
func rowOfID(ctx context.Context, d *loch.Dataset, id uint64) (int64, error) {
	scan := d.Scan()
	if err := scan.Load(ctx, 16); err != nil {
		return 0, err
	}
	pos, err := scan.Positions([]uint64{id})
	if errors.Is(err, loch.ErrNotFound) {
		return 0, fmt.Errorf("row id %d is not in version %s of %s: %w", id, d.Version(), d.URL(), loch.ErrNotFound)
	}
	if err != nil {
		return 0, err
	}
	return pos[0], nil
}

// showColumn describes the sample of column c at row, writing it under
// outDir when outDir is set.
func showColumn(ctx context.Context, d *loch.Dataset, c *schema.Column, row int64, outDir string) (showColumnJSON, error) {
	out := showColumnJSON{Name: c.Name, DType: c.DType, Kind: c.Kind}
	col, err := d.Column(c.Name)
	if err != nil {
		return out, err
	}
	if c.SampleCompression.Media() { // issue 16: from headers; the file and a contact sheet
		return showMedia(ctx, col, c, row, outDir, out)
	}
	smp, err := col.Read(ctx, row, nil)
	if err != nil {
		return out, err
	}
	if smp.Null {
		out.Null, out.text = true, "null"
		return out, nil
	}
	out.Shape = append([]int{}, smp.Shape...)
	switch {
	case c.DType == schema.Text:
		out.text = string(smp.Data)
		out.Value = out.text
	case c.DType == schema.JSON:
		var buf bytes.Buffer
		if json.Indent(&buf, smp.Data, "", "  ") == nil {
			out.text = buf.String()
			out.Value = json.RawMessage(smp.Data)
		} else {
			out.text = string(smp.Data)
			out.Value = out.text
		}
	case c.DType == schema.Bytes:
		out.text = fmt.Sprintf("bytes [%d]", len(smp.Data))
	case c.Kind == schema.ClassLabel && len(smp.Shape) == 0:
		out.text = labelString(c, smp.Data, 0)
		out.Value = c.DType.Int(smp.Data, 0)
		out.Class, _ = c.ClassName(c.DType.Int(smp.Data, 0))
	default:
		out.text = tensorSummary(c, smp)
		out.Value = tensorValues(c, smp)
	}
	if outDir == "" {
		return out, nil
	}
	if out.File, err = writeSample(ctx, outDir, col, c, row, smp); err != nil {
		return out, err
	}
	return out, nil
}

// tensorValues returns the elements of a small tensor as JSON values (a
// scalar for shape [], a flat list otherwise), or nil for a tensor of more
// than maxShownElements.
func tensorValues(c *schema.Column, smp loch.Sample) any {
	n := schema.NumElements(smp.Shape)
	if n > maxShownElements || len(smp.Data) < n*c.DType.Size() {
		return nil
	}
	vals := make([]json.RawMessage, n)
	for i := range vals {
		v := c.DType.FormatElem(smp.Data, i)
		if !json.Valid([]byte(v)) { // NaN, Inf
			v = strconv.Quote(v)
		}
		vals[i] = json.RawMessage(v)
	}
	if len(smp.Shape) == 0 {
		return vals[0]
	}
	return vals
}

// tensorSummary formats a tensor as "dtype shape", with its values when it
// is small.
func tensorSummary(c *schema.Column, smp loch.Sample) string {
	s := fmt.Sprintf("%s %s", c.DType, schema.FormatShape(smp.Shape))
	if c.SampleCompression != schema.SampleNone && c.SampleCompression != "" {
		s += " " + string(c.SampleCompression)
	}
	n := schema.NumElements(smp.Shape)
	if n > maxShownElements || len(smp.Data) < n*c.DType.Size() {
		return s
	}
	vals := make([]string, n)
	for i := range vals {
		if c.Kind == schema.ClassLabel {
			vals[i] = labelString(c, smp.Data, i)
		} else {
			vals[i] = c.DType.FormatElem(smp.Data, i)
		}
	}
	if len(smp.Shape) == 0 {
		return vals[0]
	}
	return s + ": [" + strings.Join(vals, " ") + "]"
}

// writeSample writes one decoded sample of column c to outDir as
// <column>.<ext> and returns the path.
func writeSample(ctx context.Context, outDir string, col *loch.ColumnReader, c *schema.Column, row int64, smp loch.Sample) (string, error) {
	var (
		ext  string
		data []byte
		err  error
	)
	switch {
	case c.DType == schema.Text:
		ext, data = "txt", smp.Data
	case c.DType == schema.JSON:
		ext, data = "json", smp.Data
	case c.DType == schema.Bytes:
		ext, data = "bin", smp.Data
	case isPNGable(c, smp.Shape):
		ext = "png"
		data, err = pngBytes(ctx, col, c, row, smp)
	default:
		ext = "npy"
		var buf bytes.Buffer
		err = writeNPY(&buf, c.DType, smp.Shape, smp.Data)
		data = buf.Bytes()
	}
	if err != nil {
		return "", fmt.Errorf("column %s row %d: %w", c.Name, row, err)
	}
	path := filepath.Join(outDir, c.Name+"."+ext)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// isPNGable reports whether samples of column c with this shape are written
// as PNG: uint8 images with 1, 3 or 4 channels.
func isPNGable(c *schema.Column, shape []int) bool {
	return c.Kind == schema.Image && c.DType == schema.Uint8 && len(shape) == 3 &&
		(shape[2] == 1 || shape[2] == 3 || shape[2] == 4)
}

// pngBytes returns the PNG file of an image sample: the stored bytes when
// the column keeps PNGs, the decoded pixels encoded as PNG otherwise.
// decoded is the sample as Read returned it.
func pngBytes(ctx context.Context, col *loch.ColumnReader, c *schema.Column, row int64, decoded loch.Sample) ([]byte, error) {
	if c.SampleCompression == schema.PNG {
		enc, err := col.ReadEncoded(ctx, row)
		if err != nil {
			return nil, err
		}
		if enc.Encoding == schema.PNG {
			return enc.Data, nil
		}
	}
	return imaging.Encode("png", decoded.Data, decoded.Shape, 0)
}

// writeFileAtomic writes a file through a temporary name in the same
// directory, so that an interrupted write leaves no partial file. Errors of
// write are returned as they are.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := f.Name()
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	err = f.Close()
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
