package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

func newScanCmd() *cobra.Command {
	var (
		columns string
		refs    refFlags
	)
	var batch int64
	cmd := &cobra.Command{
		Use:   "scan URL",
		Short: "Stream every row once, decoding every sample, and report the speed",
		Long: `Scan reads every row of a version in batches, decodes every sample of the
chosen columns (png/jpeg images to pixels) and reports rows/s and MB/s of
decoded data. It is a quick end-to-end read check; the training loader and
its benchmark are 'loch bench' and the Python SDK.`,
		Example: `  loch scan ./pets
  loch scan s3://bucket/pets --columns image --batch 256`,
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
				names = strings.Split(columns, ",")
			}
			cols := make([]*loch.ColumnReader, len(names))
			for i, n := range names {
				if cols[i], err = d.Column(strings.TrimSpace(n)); err != nil {
					return err
				}
			}
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
			}
			secs := max(time.Since(start).Seconds(), 1e-9)
			fmt.Fprintf(cmd.OutOrStdout(), "scanned %d rows, %d columns, %.1f MB decoded in %.2fs: %.0f rows/s, %.1f MB/s\n",
				d.Len(), len(cols), float64(bytes)/1e6, secs, float64(d.Len())/secs, float64(bytes)/1e6/secs)
			return nil
		},
	}
	cmd.Flags().StringVar(&columns, "columns", "", "comma-separated columns to read (default all)")
	cmd.Flags().Int64Var(&batch, "batch", 256, "rows per read")
	refs.add(cmd, "scan")
	return cmd
}
