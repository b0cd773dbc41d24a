package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
)

// rankFlags choose what one rank's loader delivers and in what order,
// for loch order and loch bench: --batch-size, --shuffle and its --seed,
// --world-size and --rank.
type rankFlags struct {
	shuffle     string
	seed        uint64
	batch       int
	world, rank int
}

func (r *rankFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&r.batch, "batch-size", 32, "rows per batch")
	f.StringVar(&r.shuffle, "shuffle", "block", "none, block or full")
	f.Uint64Var(&r.seed, "seed", 0, "shuffle seed")
	f.IntVar(&r.world, "world-size", 1, "number of ranks")
	f.IntVar(&r.rank, "rank", 0, "this rank")
}

// config returns the loader configuration with the fields the flags set.
func (r *rankFlags) config() loader.Config {
	return loader.Config{BatchSize: r.batch, Shuffle: order.Mode(r.shuffle), Seed: r.seed, WorldSize: r.world, Rank: r.rank}
}

// orderFlags are the flags of "loch order".
type orderFlags struct {
	rankFlags
	columns            string
	selection          string
	refs               refFlags
	mix                mixFlags
	epoch              int
	dropLast           bool
	window             int64
	resume             string
	allowVersionChange bool
	stateAfter         int
	asJSON             bool
}

func newOrderCmd() *cobra.Command {
	o := &orderFlags{}
	cmd := &cobra.Command{
		Use:   "order URL [URL...]",
		Short: "Print the row ids a rank receives in an epoch, in delivery order",
		Long: `Order prints the stable row ids that rank R receives in epoch E, one per
line, in the order the loader delivers them: the same order as 'loch bench',
the Go loader and the Python SDK with the same settings (whatever columns
they load: the order does not depend on them). Padding rows (added so that every rank gets the
same number of batches) appear as the rows they repeat.

With several URLs and --weights, order prints the rows of a weighted
mixture of the datasets (as the Go loader's NewMix draws them), one per
line as the dataset's number (0 for the first URL) and the row id:
"1 17". The datasets must have the requested columns with the same dtypes.

--resume FILE prints the rest of a saved epoch: FILE holds a loader state
as the Go loader's State or the Python SDK's state_dict() save it (for a
mixture, a state of the same mixture). Without --seed the state's seed is
used; a --seed, --shuffle, --window-rows or --drop-last other than the
saved run's is refused (--world-size and --batch-size may change). --state-after N prints instead the
state after this rank's first N batches, to resume from (a JSON object).

With --json it prints one JSON object with the fields urls, versions (one
per dataset), epoch, rank, world_size, batches (this rank's) and rows: the
row ids in delivery order, or for a mixture objects {"dataset", "id"}.`,
		Example: `  loch order ./pets --seed 7 --epoch 3 --world-size 8 --rank 2 --batch-size 64
  loch order s3://bucket/pets --shuffle full --drop-last | head
  loch order ./web ./books --weights 0.8,0.2 --epoch-rows 100000 --batch-size 64
  loch order ./pets --world-size 8 --state-after 100 > state.json
  loch order ./pets --world-size 4 --rank 1 --resume state.json`,
		Args: minArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args)
		},
	}
	f := cmd.Flags()
	o.rankFlags.add(cmd)
	f.StringVar(&o.columns, "columns", "", "comma-separated columns the loader reads (default all); the order does not depend on them, but each must exist (in every dataset of a mixture)")
	f.IntVar(&o.epoch, "epoch", 0, "epoch")
	f.BoolVar(&o.dropLast, "drop-last", false, "drop the rows that do not fill a batch on every rank")
	f.Int64Var(&o.window, "window-rows", 0, fmt.Sprintf("shuffle window in rows (default %d segments)", order.DefaultWindowBlocks))
	f.StringVar(&o.resume, "resume", "", "print the rest of the epoch saved in this loader state file (JSON)")
	f.BoolVar(&o.allowVersionChange, "allow-version-change", false, "resume a state saved on another version")
	f.IntVar(&o.stateAfter, "state-after", -1, "print the state (JSON) after this rank's first N batches instead of the rows")
	f.StringVar(&o.selection, "selection", "", "order the rows of this saved selection (loch query --save), at its version")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object instead of one row per line")
	o.mix.add(cmd)
	o.refs.add(cmd, "use")
	return cmd
}

// run prints the order of the rows that rank o.rank receives in epoch
// o.epoch of the dataset at urls[0], or of the mixture of urls (or a state
// to resume from).
func (o *orderFlags) run(cmd *cobra.Command, urls []string) error {
	cfg := o.config()
	cfg.Epoch, cfg.DropLast, cfg.WindowRows, cfg.AllowVersionChange = o.epoch, o.dropLast, o.window, o.allowVersionChange
	if o.columns != "" {
		cfg.Columns = splitList(o.columns)
	}
	if err := checkConfig(cfg); err != nil {
		return err
	}
	weights, err := o.mix.parse(len(urls))
	if err != nil {
		return err
	}
	if o.resume != "" {
		if o.stateAfter >= 0 {
			return usagef("give --resume or --state-after, not both")
		}
		st, err := readState(o.resume)
		if err != nil {
			return err
		}
		cfg.Resume = &st
		if !cmd.Flags().Changed("seed") {
			cfg.Seed = st.Seed // the saved run's; another given --seed is refused
		}
	}
	ctx := cmd.Context()
	ds, scans, err := openSources(ctx, urls, &o.refs, o.selection, &cfg)
	if err != nil {
		return err
	}
	defer closeAll(ds)
	var p epochPlan
	if weights == nil {
		if p, err = loader.Order(ctx, scans[0], cfg); err != nil {
			return err
		}
	} else {
		if cfg.Columns, err = mixColumns(ds, urls, cfg.Columns); err != nil {
			return err
		}
		if p, err = loader.OrderMix(ctx, scans, weights, o.mix.epochRows, cfg); err != nil {
			return err
		}
	}
	w := cmd.OutOrStdout()
	switch {
	case o.stateAfter >= 0:
		if o.stateAfter > p.Batches() {
			return usagef("--state-after %d: this rank has %d batches", o.stateAfter, p.Batches())
		}
		return printJSON(w, p.State(o.stateAfter))
	case o.asJSON:
		return o.printOrderJSON(ctx, w, ds, scans, p)
	}
	return printOrder(ctx, w, scans, p)
}

// printOrderJSON prints the order as one JSON object (--json).
func (o *orderFlags) printOrderJSON(ctx context.Context, w io.Writer, ds []*loch.Dataset, scans []*loch.Scan, p epochPlan) error {
	doc := orderJSON{Epoch: o.epoch, Rank: o.rank, WorldSize: o.world, Batches: p.Batches()}
	for _, d := range ds {
		doc.URLs = append(doc.URLs, d.URL())
		doc.Versions = append(doc.Versions, d.Version())
	}
	var rows []any
	err := eachOrderRow(ctx, scans, p, func(d int, id uint64) error {
		if d < 0 {
			rows = append(rows, id)
		} else {
			rows = append(rows, orderItemJSON{d, id})
		}
		return nil
	})
	if err != nil {
		return err
	}
	doc.Rows = append([]any{}, rows...)
	return printJSON(w, doc)
}

// orderJSON is the document printed by "loch order --json".
type orderJSON struct {
	URLs      []string `json:"urls"`
	Versions  []string `json:"versions"`
	Epoch     int      `json:"epoch"`
	Rank      int      `json:"rank"`
	WorldSize int      `json:"world_size"`
	Batches   int      `json:"batches"`
	Rows      []any    `json:"rows"` // uint64 ids, or orderItemJSON for a mixture
}

// orderItemJSON is a row of a mixture: the dataset's number and the row id.
type orderItemJSON struct {
	Dataset int    `json:"dataset"`
	ID      uint64 `json:"id"`
}

// epochPlan is a rank's plan of an epoch: an *order.EpochPlan of one
// dataset or an *order.MixPlan of a mixture.
type epochPlan interface {
	Batches() int
	State(done int) order.State
}

// printOrder writes the rows of p, one per line: the row id, after the
// dataset's number for a mixture.
func printOrder(ctx context.Context, out io.Writer, scans []*loch.Scan, p epochPlan) error {
	w := bufio.NewWriter(out)
	var line []byte
	err := eachOrderRow(ctx, scans, p, func(d int, id uint64) error {
		line = line[:0]
		if d >= 0 {
			line = strconv.AppendInt(line, int64(d), 10)
			line = append(line, ' ')
		}
		line = append(strconv.AppendUint(line, id, 10), '\n')
		_, err := w.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	return w.Flush()
}

// eachOrderRow calls fn with each row of p in delivery order: the
// dataset's number (-1 for a single dataset) and the row id.
func eachOrderRow(ctx context.Context, scans []*loch.Scan, p epochPlan, fn func(d int, id uint64) error) error {
	put := func(d int, pos int64) error {
		id, err := scans[max(d, 0)].RowID(pos)
		if err != nil {
			return err
		}
		return fn(d, id)
	}
	switch p := p.(type) {
	case *order.EpochPlan:
		for _, batch := range p.All() {
			for _, pos := range batch {
				if err := put(-1, pos); err != nil {
					return err
				}
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	case *order.MixPlan:
		for _, batch := range p.All() {
			for _, it := range batch {
				if err := put(it.Dataset, it.Pos); err != nil {
					return err
				}
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// readState reads a loader state from a JSON file: the Go loader's State,
// or the Python SDK's state_dict() (which holds it under "loader").
func readState(path string) (order.State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return order.State{}, err
	}
	var doc struct {
		order.State
		Loader *order.State `json:"loader"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return order.State{}, fmt.Errorf("%s: not a loader state: %w", path, err)
	}
	if doc.Loader != nil {
		return *doc.Loader, nil
	}
	if doc.Version == "" {
		return order.State{}, fmt.Errorf("%s: not a loader state: no version", path)
	}
	return doc.State, nil
}

// mixFlags are the flags that make a mixture of several datasets, shared
// by bench and order.
type mixFlags struct {
	weights   string
	epochRows int64
}

func (m *mixFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&m.weights, "weights", "", "comma-separated sampling weights of the URLs: mix the datasets (e.g. 0.8,0.2)")
	f.Int64Var(&m.epochRows, "epoch-rows", 0, "rows of a mixture's epoch over all ranks (default: until every dataset has delivered each of its rows)")
}

// parse returns the weights of n datasets, or nil for one dataset without
// --weights (no mixture), checking them as the mixture will.
func (m *mixFlags) parse(n int) ([]float64, error) {
	if m.weights == "" {
		switch {
		case n > 1:
			return nil, usagef("%d datasets: give their weights with --weights, e.g. --weights %s", n, strings.TrimSuffix(strings.Repeat("1,", n), ","))
		case m.epochRows != 0:
			return nil, usagef("--epoch-rows is for a mixture: give --weights")
		}
		return nil, nil
	}
	var w []float64
	for _, s := range splitList(m.weights) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, usagef("--weights %s: %q is not a number", m.weights, s)
		}
		w = append(w, v)
	}
	if len(w) != n {
		return nil, usagef("--weights %s: %d weights for %d datasets", m.weights, len(w), n)
	}
	// The order package's own check of the weights and the epoch's rows.
	spec := order.MixSpec{Parts: make([]order.Spec, n), Weights: w, EpochRows: m.epochRows, BatchSize: 1}
	if err := spec.Validate(); err != nil {
		return nil, usagef("--weights %s --epoch-rows %d: %v", m.weights, m.epochRows, err)
	}
	return w, nil
}

// mixColumns resolves the columns a mixture loads (default: all of the
// first dataset's) and checks that every dataset has them with the same
// dtypes, naming the dataset and the column that differ.
func mixColumns(ds []*loch.Dataset, urls []string, names []string) ([]string, error) {
	first := ds[0].Schema()
	if len(names) == 0 {
		names = first.Names()
	}
	for _, name := range names {
		want, ok := first.Column(name)
		if !ok {
			return nil, fmt.Errorf("mixture: dataset 0 (%s) has no column %q (it has %s): %w", urls[0], name, strings.Join(first.Names(), ", "), loch.ErrInvalidArgument)
		}
		for i, d := range ds[1:] {
			s := d.Schema()
			c, ok := s.Column(name)
			switch {
			case !ok:
				return nil, fmt.Errorf("mixture: dataset %d (%s) has no column %q (it has %s; name the shared columns with --columns): %w", i+1, urls[i+1], name, strings.Join(s.Names(), ", "), loch.ErrInvalidArgument)
			case c.DType != want.DType:
				return nil, fmt.Errorf("mixture: column %q is %s in dataset 0 (%s) and %s in dataset %d (%s): %w", name, want.DType, urls[0], c.DType, i+1, urls[i+1], loch.ErrInvalidArgument)
			}
		}
	}
	return names, nil
}

// openSources opens the datasets at urls at the version refs names and,
// when selection names a saved selection, points cfg at it (useSelection);
// it returns the datasets, for the caller to close (closeAll), and a scan
// of each.
func openSources(ctx context.Context, urls []string, refs *refFlags, selection string, cfg *loader.Config) ([]*loch.Dataset, []*loch.Scan, error) {
	ds, err := openDatasets(ctx, urls, refs)
	if err != nil {
		return nil, nil, err
	}
	if err := useSelection(ctx, urls, ds, selection, refs, cfg); err != nil {
		closeAll(ds)
		return nil, nil, err
	}
	scans := make([]*loch.Scan, len(ds))
	for i, d := range ds {
		scans[i] = d.Scan()
	}
	return ds, scans, nil
}

// openDatasets opens every URL at the version the flags name; on an error
// it closes those it opened.
func openDatasets(ctx context.Context, urls []string, r *refFlags) ([]*loch.Dataset, error) {
	var ds []*loch.Dataset
	for _, u := range urls {
		d, err := openDataset(ctx, u, r)
		if err != nil {
			closeAll(ds)
			return nil, err
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func closeAll(ds []*loch.Dataset) {
	for _, d := range ds {
		d.Close()
	}
}

// minArgs accepts one or more of the named argument.
func minArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("missing %s", name)
		}
		return nil
	}
}
