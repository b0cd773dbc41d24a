package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// scanJSON is the document printed by "loch scan --json".
type scanJSON struct {
	URL          string   `json:"url"`
	Version      string   `json:"version"`
	Rows         int64    `json:"rows"`
	Columns      []string `json:"columns"`
	DecodedBytes int64    `json:"decoded_bytes"`
	Seconds      float64  `json:"seconds"`
	RowsPerS     float64  `json:"rows_per_s"`
	BytesPerS    float64  `json:"bytes_per_s"`
}

// scanOptions are the arguments and flags of loch scan.
type scanOptions struct {
	streams
	url     string
	columns string
	batch   int64
	refs    refFlags
	prog    progressFlags
	asJSON  bool
}

func newScanCmd() *cobra.Command {
	var o scanOptions
	cmd := &cobra.Command{
		Use:   "scan URL",
		Short: "Stream every row once, decoding every sample, and report the speed",
		Long: `Scan reads every row of a version in batches, decodes every sample of the
chosen columns (png/jpeg images to pixels) and reports rows/s and the rate
of decoded data. It is a quick end-to-end read check; the training loader
and its benchmark are 'loch bench' and the Python SDK.

With --json it prints one JSON object with the fields url, version, rows,
columns, decoded_bytes, seconds, rows_per_s and bytes_per_s.

A bar over the rows is shown on standard error when that is a terminal, or
with --progress; never with --quiet.`,
		Example: `  loch scan ./pets
  loch scan s3://bucket/pets --columns image --batch 256
  loch scan ./pets --json | jq .rows_per_s`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			return runScan(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.columns, "columns", "", "comma-separated columns to read (default all)")
	cmd.Flags().Int64Var(&o.batch, "batch", 256, "rows per read")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	o.prog.add(cmd.Flags())
	o.refs.add(cmd, "scan")
	return cmd
}

// runScan reads every row of the dataset at o.url, decoding every sample,
// and reports the speed.
func runScan(ctx context.Context, o *scanOptions) error {
	if o.batch < 1 {
		return usagef("--batch must be at least 1, got %d", o.batch)
	}
	d, err := openDataset(ctx, o.url, &o.refs)
	if err != nil {
		return err
	}
	defer d.Close()
	sch := d.Schema()
	names := sch.Names()
	if o.columns != "" {
		names = splitList(o.columns)
	}
	cols := make([]*loch.ColumnReader, len(names))
	for i, n := range names {
		if cols[i], err = d.Column(n); err != nil {
			return err
		}
	}
	bar := o.prog.start(o.stderr, "scan", d.Len(), unitRows)
	defer bar.done()
	start := time.Now()
	bytes, err := scanColumns(ctx, cols, d.Len(), o.batch, bar)
	if err != nil {
		return err
	}
	bar.done()
	secs := max(time.Since(start).Seconds(), 1e-9)
	res := scanJSON{URL: d.URL(), Version: d.Version(), Rows: d.Len(), Columns: names, DecodedBytes: bytes,
		Seconds: secs, RowsPerS: float64(d.Len()) / secs, BytesPerS: float64(bytes) / secs}
	if o.asJSON {
		return printJSON(o.stdout, res)
	}
	fmt.Fprintf(o.stdout, "scanned %d rows, %d columns, %s decoded in %.2fs: %.0f rows/s, %s\n",
		res.Rows, len(cols), formatBytes(bytes), secs, res.RowsPerS, formatRate(bytes, secs))
	return nil
}

// scanColumns reads rows [0, rows) of cols, batch rows at a time, counting
// them on bar, and returns the decoded bytes read.
func scanColumns(ctx context.Context, cols []*loch.ColumnReader, rows, batch int64, bar *progress) (int64, error) {
	var bytes int64
	for lo := int64(0); lo < rows; lo += batch {
		hi := min(lo+batch, rows)
		for _, c := range cols {
			samples, err := c.ReadRange(ctx, lo, hi)
			if err != nil {
				return 0, err
			}
			for _, s := range samples {
				bytes += int64(len(s.Data))
			}
		}
		bar.add(hi - lo)
	}
	return bytes, nil
}
