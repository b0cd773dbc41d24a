package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/schema"
)

// infoJSON is the document printed by "loch info --json".
type infoJSON struct {
	URL     string           `json:"url"`
	Version string           `json:"version"`
	Rows    int64            `json:"rows"`
	Columns []infoColumnJSON `json:"columns"`
}

type infoColumnJSON struct {
	Name        string         `json:"name"`
	DType       schema.DType   `json:"dtype"`
	Kind        schema.Kind    `json:"kind"`
	Shape       schema.Shape   `json:"shape"`
	MinShape    []int          `json:"min_shape"`
	MaxShape    []int          `json:"max_shape"`
	Compression string         `json:"compression"`
	StoredBytes int64          `json:"stored_bytes"`
	RawBytes    int64          `json:"raw_bytes"`
	Ratio       float64        `json:"ratio"`
	Samples     int64          `json:"samples"`
	ClassNames  []string       `json:"class_names,omitempty"`
	Media       *infoMediaJSON `json:"media,omitempty"` // video and audio columns (info_media.go)
}

// infoOptions are the arguments and flags of loch info.
type infoOptions struct {
	streams
	url    string
	asJSON bool
	refs   refFlags
}

func newInfoCmd() *cobra.Command {
	var o infoOptions
	cmd := &cobra.Command{
		Use:   "info URL",
		Short: "Show a dataset's version, rows and columns",
		Long: `Info prints the dataset's version (snapshot id), its row count and, for
each column, its dtype, kind, shape range, compression, the bytes stored and
the compression ratio (raw bytes / stored bytes).

The shape range gives each dimension as a size where all samples agree and
as min..max where they differ: [32..480, 48..640, 3] is an RGB image column
of varying height and width. A column without samples shows its declared
shape, "?" marking a ragged dimension.

With --json the same facts are printed as one JSON object with the fields
url, version, rows and columns (name, dtype, kind, shape, min_shape,
max_shape, compression, stored_bytes, raw_bytes, ratio, samples and, for
class labels, class_names). Video and audio columns also get a media line
(JSON: media) with their container/codec pairs and the range of frame or
sample rates and durations, read from the chunk headers of their first 1000
rows.

--ref reads another branch, a tag or a version (a version id or a unique
prefix of 6 or more of its digits); --as-of reads the version that the
reference (default main) named at a past time.`,
		Example: `  loch info ./pets
  loch info s3://bucket/pets --json | jq '.columns[].name'
  loch info ./pets --ref v1.0
  loch info ./pets --ref dev --as-of 2024-05-01`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			return runInfo(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object instead of a table")
	o.refs.add(cmd, "read")
	return cmd
}

// runInfo describes the version of the dataset at o.url that o.refs names.
func runInfo(ctx context.Context, o *infoOptions) error {
	d, err := openDataset(ctx, o.url, &o.refs)
	if err != nil {
		return err
	}
	defer d.Close()
	s, cols := d.Schema(), d.Columns()
	info := infoJSON{URL: d.URL(), Version: d.Version(), Rows: d.Len(), Columns: infoColumns(cols)}
	if err := addMediaInfo(ctx, d, info.Columns, &s); err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(o.stdout, info)
	}
	return printInfo(o.stdout, info, cols)
}

// infoColumns describes the columns for "loch info --json".
func infoColumns(entries []schema.Entry) []infoColumnJSON {
	cols := []infoColumnJSON{}
	for i := range entries {
		c := &entries[i]
		lo, hi := observedShapes(c)
		cols = append(cols, infoColumnJSON{
			Name: c.Name, DType: c.DType, Kind: c.Kind, Shape: c.Shape,
			MinShape: lo, MaxShape: hi, Compression: compression(&c.Column),
			StoredBytes: c.StoredBytes, RawBytes: c.RawBytes, Ratio: ratio(&c.Stats),
			Samples: c.Samples, ClassNames: c.ClassNames,
		})
	}
	return cols
}

// printInfo prints info as "loch info" does without --json: the dataset,
// a table of the columns, and the class names of class label columns.
func printInfo(w io.Writer, info infoJSON, cols []schema.Entry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\n", info.URL)
	fmt.Fprintf(tw, "version\t%s\n", info.Version)
	fmt.Fprintf(tw, "rows\t%d\n", info.Rows)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COLUMN\tDTYPE\tKIND\tSHAPE\tCOMPRESSION\tSTORED\tRAW\tRATIO")
	var classes []string
	for i := range cols {
		c := &cols[i]
		r := "-"
		if c.StoredBytes > 0 {
			r = fmt.Sprintf("%.2fx", ratio(&c.Stats))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.DType, c.Kind, shapeRange(c),
			compression(&c.Column), formatBytes(c.StoredBytes), formatBytes(c.RawBytes), r)
		if len(c.ClassNames) > 0 {
			classes = append(classes, fmt.Sprintf("%s: %s", c.Name, strings.Join(c.ClassNames, ", ")))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(classes) > 0 {
		fmt.Fprintln(w)
		for _, line := range classes {
			fmt.Fprintf(w, "classes of %s\n", line)
		}
	}
	printMediaInfo(w, info.Columns)
	return nil
}
