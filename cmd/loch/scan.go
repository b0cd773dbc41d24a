package main

import (
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

func newScanCmd() *cobra.Command {
	var (
		columns string
		refs    refFlags
		prog    progressFlags
		asJSON  bool
	)
	var batch int64
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
			if batch < 1 {
				return usagef("--batch must be at least 1, got %d", batch)
			}
			ctx := cmd.Context()
			d, err := openDataset(ctx, args[0], &refs)
			if err != nil {
				return err
			}
			defer d.Close()
			sch := d.Schema()
			names := sch.Names()
			if columns != "" {
				names = splitList(columns)
			}
			cols := make([]*loch.ColumnReader, len(names))
			for i, n := range names {
				if cols[i], err = d.Column(n); err != nil {
					return err
				}
			}
			bar := prog.start(cmd.ErrOrStderr(), "scan", d.Len(), unitRows)
			defer bar.done()
			start := time.Now()
			var bytes int64
			for lo := int64(0); lo < d.Len(); lo += batch {
				hi := min(lo+batch, d.Len())
				for _, c := range cols {
					samples, err := c.ReadRange(ctx, lo, hi)
					if err != nil {
						return err
					}
					for _, s := range samples {
						bytes += int64(len(s.Data))
					}
				}
				bar.add(hi - lo)
			}
			bar.done()
			secs := max(time.Since(start).Seconds(), 1e-9)
			res := scanJSON{URL: d.URL(), Version: d.Version(), Rows: d.Len(), Columns: names, DecodedBytes: bytes,
				Seconds: secs, RowsPerS: float64(d.Len()) / secs, BytesPerS: float64(bytes) / secs}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "scanned %d rows, %d columns, %s decoded in %.2fs: %.0f rows/s, %s\n",
				res.Rows, len(cols), formatBytes(bytes), secs, res.RowsPerS, formatRate(bytes, secs))
			return nil
		},
	}
	cmd.Flags().StringVar(&columns, "columns", "", "comma-separated columns to read (default all)")
	cmd.Flags().Int64Var(&batch, "batch", 256, "rows per read")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	prog.add(cmd.Flags())
	refs.add(cmd, "scan")
	return cmd
}
