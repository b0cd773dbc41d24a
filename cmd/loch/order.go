package main

import (
	"bufio"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
)

func newOrderCmd() *cobra.Command {
	var (
		shuffle      string
		refs         refFlags
		seed         uint64
		epoch, world int
		rank, batch  int
		dropLast     bool
		window       int64
	)
	cmd := &cobra.Command{
		Use:   "order URL",
		Short: "Print the row ids a rank receives in an epoch, in delivery order",
		Long: `Order prints the stable row ids that rank R receives in epoch E, one per
line, in the order the loader delivers them: the same order as 'loch bench',
the Go loader and the Python SDK with the same settings. Padding rows (added
so that every rank gets the same number of batches) appear as the rows they
repeat.`,
		Example: `  loch order ./pets --seed 7 --epoch 3 --world-size 8 --rank 2 --batch-size 64
  loch order s3://bucket/pets --shuffle full --drop-last | head`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := loader.Config{BatchSize: batch, Shuffle: order.Mode(shuffle), Seed: seed, Epoch: epoch,
				WorldSize: world, Rank: rank, DropLast: dropLast, WindowRows: window}
			if err := checkConfig(cfg); err != nil {
				return err
			}
			ctx := cmd.Context()
			d, err := openDataset(ctx, args[0], &refs)
			if err != nil {
				return err
			}
			defer d.Close()
			scan := d.Scan()
			plan, err := loader.Order(ctx, scan, cfg)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			var line []byte
			for _, pos := range plan.All() {
				for _, p := range pos {
					id, err := scan.RowID(p)
					if err != nil {
						return err
					}
					line = strconv.AppendUint(line[:0], id, 10)
					line = append(line, '\n')
					if _, err := w.Write(line); err != nil {
						return err
					}
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&shuffle, "shuffle", "block", "none, block or full")
	f.Uint64Var(&seed, "seed", 0, "shuffle seed")
	f.IntVar(&epoch, "epoch", 0, "epoch")
	f.IntVar(&world, "world-size", 1, "number of ranks")
	f.IntVar(&rank, "rank", 0, "this rank")
	f.IntVar(&batch, "batch-size", 32, "rows per batch")
	f.BoolVar(&dropLast, "drop-last", false, "drop the rows that do not fill a batch on every rank")
	f.Int64Var(&window, "window-rows", 0, fmt.Sprintf("shuffle window in rows (default %d segments)", order.DefaultWindowBlocks))
	refs.add(cmd, "use")
	return cmd
}
