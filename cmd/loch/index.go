package main

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/ingest"
	"github.com/lochdata/loch/internal/half"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

func newIndexCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Build, update and drop vector indexes of embedding columns",
		Long: `An index makes nearest-neighbour search over an embedding column (a
fixed-shape [d] column of float32, float16 or bfloat16) fast: an IVF-flat
index (k-means centroids, and the rows of each centroid's cell) stored in
the dataset as objects named by the version it covers (docs/format.md
§2.8). A tag keeps its version's index, branches share their ancestors',
and gc collects the indexes of versions nothing reaches.

'loch search' uses the index of the version it reads, or of its newest
ancestor that has one; rows added or changed since are searched exactly,
so results are never stale, only slower. 'loch index update' folds those
rows into a new index of the version without retraining.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newIndexCreateCmd(), newIndexUpdateCmd(), newIndexDropCmd())
	return cmd
}

// indexFlags are the flags that name an index.
type indexFlags struct {
	column, metric string
}

func (f *indexFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.column, "column", "", "the embedding column (required)")
	cmd.Flags().StringVar(&f.metric, "metric", "cosine", "distance: cosine, l2 or dot")
	_ = cmd.MarkFlagRequired("column")
}

func (f *indexFlags) parse() (vector.Metric, error) {
	m, err := vector.ParseMetric(f.metric)
	if err != nil {
		return "", usagef("--metric %q: want cosine, l2 or dot", f.metric)
	}
	return m, nil
}

// open parses the metric and opens the dataset.
func (f *indexFlags) open(cmd *cobra.Command, url string, refs *refFlags) (vector.Metric, *loch.Dataset, error) {
	m, err := f.parse()
	if err != nil {
		return "", nil, err
	}
	d, err := openDataset(cmd.Context(), url, refs)
	return m, d, err
}

// indexCmdFlags are the flags of loch index create, update and drop: the
// index (with --fts, the column's full-text index instead), the version,
// and --json where the command prints one.
type indexCmdFlags struct {
	idx    indexFlags
	refs   refFlags
	text   bool
	asJSON bool
}

// add registers the flags on cmd: ftsUsage is --fts's help, refsVerb
// what --ref's help says the command does; --json only with withJSON.
func (f *indexCmdFlags) add(cmd *cobra.Command, ftsUsage, refsVerb string, withJSON bool) {
	f.idx.add(cmd)
	cmd.Flags().BoolVar(&f.text, "fts", false, ftsUsage)
	if withJSON {
		cmd.Flags().BoolVar(&f.asJSON, "json", false, "print one JSON object")
	}
	f.refs.add(cmd, refsVerb)
}

// textOpts are the options of the full-text index command on url.
func (f *indexCmdFlags) textOpts(url string) ftsOpts {
	return ftsOpts{url: url, refs: &f.refs, column: f.idx.column, asJSON: f.asJSON}
}

func printIndexInfo(cmd *cobra.Command, info *vector.Info, asJSON bool, verb string) error {
	w := cmd.OutOrStdout()
	if asJSON {
		return printJSON(w, info)
	}
	fmt.Fprintf(w, "%s %s: %d rows of %q (%d dimensions, %s) in %d lists, %s, %s written\n", verb, info.Key, info.Rows, info.Column, info.Dim, info.Metric, info.NList, info.Type, humanize.IBytes(uint64(info.Bytes)))
	return nil
}

func newIndexCreateCmd() *cobra.Command {
	var (
		f    indexCmdFlags
		opts vector.BuildOptions
	)
	cmd := &cobra.Command{
		Use:   "create URL --column C",
		Short: "Build the vector index of an embedding column at a version",
		Long: `Create trains k-means centroids on a sample of the column and assigns
every row to its nearest centroid's list, then stores the index for the
version read (main's newest by default; --ref another). Building again for
the same version, column and metric replaces the index.`,
		Example: `  loch index create ./pets --column embedding
  loch index create ./pets --column embedding --metric l2 --nlist 1024`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.text {
				return runIndexBuildFTS(cmd.Context(), cmd, f.textOpts(args[0]), fts.Build, "built")
			}
			m, err := f.idx.parse()
			if err != nil {
				return err
			}
			if opts.NList < 0 || opts.Sample < 0 || opts.Iterations < 0 || opts.M < 0 {
				return usagef("--nlist, --sample, --iterations and --m must not be negative")
			}
			if _, err := vector.ParseKind(opts.Kind); err != nil {
				return usagef("--kind %q: want ivf-flat or ivf-pq", opts.Kind)
			}
			opts.Metric = m
			d, err := openDataset(cmd.Context(), args[0], &f.refs)
			if err != nil {
				return err
			}
			defer d.Close()
			info, err := vector.Build(cmd.Context(), d, f.idx.column, opts)
			if err != nil {
				return err
			}
			return printIndexInfo(cmd, info, f.asJSON, "built")
		},
	}
	f.add(cmd, "build a full-text (BM25) index of a text or json column instead", "index", true)
	cmd.Flags().IntVar(&opts.NList, "nlist", 0, "number of lists (default: 4 x the square root of the rows, at most 4,096)")
	cmd.Flags().IntVar(&opts.Sample, "sample", 0, "rows k-means trains on (default: max(64 x nlist, 50000))")
	cmd.Flags().IntVar(&opts.Iterations, "iterations", 0, "k-means iterations (default 10)")
	cmd.Flags().StringVar(&opts.Kind, "kind", "ivf-flat", "index kind: ivf-flat (vectors in memory when searched) or ivf-pq (PQ codes, lists read by range)")
	cmd.Flags().IntVar(&opts.M, "m", 0, "ivf-pq subquantizers, a divisor of the dimension (default: dimension / 8)")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 0, "seed of the training sample and initial centroids")
	return cmd
}

func newIndexUpdateCmd() *cobra.Command {
	var f indexCmdFlags
	cmd := &cobra.Command{
		Use:   "update URL --column C",
		Short: "Fold the rows changed since the index was built into a new index",
		Long: `Update writes the index of the version read from the index of its newest
indexed ancestor: the same centroids, without the rows deleted or updated
since, with the rows appended or updated since assigned to their nearest
centroids. Lists that did not change are shared with the old index. The
centroids are not retrained: after large changes, 'loch index create'
gives better recall.`,
		Example: `  loch index update ./pets --column embedding`,
		Args:    exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.text {
				return runIndexBuildFTS(cmd.Context(), cmd, f.textOpts(args[0]), fts.Update, "updated")
			}
			m, d, err := f.idx.open(cmd, args[0], &f.refs)
			if err != nil {
				return err
			}
			defer d.Close()
			info, err := vector.Update(cmd.Context(), d, f.idx.column, m, vector.Options{})
			if err != nil {
				return err
			}
			return printIndexInfo(cmd, info, f.asJSON, "updated")
		},
	}
	f.add(cmd, "update the full-text (BM25) index of a text or json column instead", "index", true)
	return cmd
}

func newIndexDropCmd() *cobra.Command {
	var f indexCmdFlags
	cmd := &cobra.Command{
		Use:   "drop URL --column C",
		Short: "Delete the index of an embedding column at a version",
		Long: `Drop deletes the index descriptor of the version read (its own, not an
ancestor's); gc then collects the objects no other index shares.`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.text {
				return runIndexDropFTS(cmd.Context(), cmd, f.textOpts(args[0]))
			}
			m, d, err := f.idx.open(cmd, args[0], &f.refs)
			if err != nil {
				return err
			}
			defer d.Close()
			sch := d.Schema()
			col, ok := sch.Column(f.idx.column)
			if !ok {
				return fmt.Errorf("%s has no column %q: %w", d.URL(), f.idx.column, loch.ErrNotFound)
			}
			key := keys.MakeIndex(d.Version(), col.UID, string(m))
			if _, err := d.Store().Stat(cmd.Context(), key); err != nil {
				return fmt.Errorf("no %s index of column %q at version %s of %s: %w", m, f.idx.column, d.Version(), d.URL(), err)
			}
			if err := d.Store().Delete(cmd.Context(), key); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped %s\n", key)
			return nil
		},
	}
	f.add(cmd, "drop the full-text index of a text or json column instead", "drop the index of", false)
	return cmd
}

// searchJSON is the document printed by "loch search --json".
type searchJSON struct {
	URL      string         `json:"url"`
	Version  string         `json:"version"`
	Column   string         `json:"column"`
	Metric   string         `json:"metric"`
	K        int            `json:"k"`
	Index    string         `json:"index"`
	Warnings []string       `json:"warnings"`
	Results  [][]vector.Hit `json:"results"`
}

// searchOptions are the arguments and flags of loch search.
type searchOptions struct {
	streams
	url            string
	refs           refFlags
	idx            indexFlags
	vecFile, where string
	k, nprobe      int
	rerank         int
	exact, asJSON  bool
}

func newSearchCmd() *cobra.Command {
	var o searchOptions
	cmd := &cobra.Command{
		Use:   "search URL --column C --vector FILE.npy",
		Short: "Find the rows nearest to query vectors in an embedding column",
		Long: `Search prints the k rows nearest to each query vector of FILE.npy (one
vector of shape [d], or a batch of shape [n, d]; float32, float16 or
float64) in an embedding column: their row ids and distances, nearest first.

It uses the column's index for the metric when the version read or one of
its ancestors has one, and searches the rows that index does not cover
exactly; without one, or with --exact, it compares every row. An index
whose objects are missing or corrupt is not used: the search is exact and
a warning names the object. --where keeps only the rows that pass an SQL
condition over the table ds (as in 'loch query'); the answer is the top k
among those rows: the index scans nprobe / share of its lists for rows
that pass (all of them, which is exact, for a narrow filter).

Distances: cosine is 1 - cos, l2 the Euclidean distance, dot the negated
inner product (smaller is nearer in all three).

With --text QUERY instead of --vector, a full-text (BM25) search of the
text or json column --column. With both, a hybrid search: the vector
search of --column and the full-text search of --text-column (default:
the dataset's only text column), each among the rows --where passes,
fused by reciprocal rank (--fusion rrf, score = sum of 1 / (rrf_k +
rank)) or by min-max normalised scores (--fusion weighted, weight x vector
+ (1 - weight) x text); it prints row id, fused score, vector rank and
distance, text rank and score ("-" where a side did not rank the row).
--save NAME stores the result as a selection, rows in fused order, that
'loch bench --selection', 'loch order --selection' and the loaders read
like a query's (docs/search.md).`,
		Example: `  loch search ./pets --column embedding --vector query.npy -k 5
  loch search ./pets --column embedding --vector batch.npy --where "label = 3" --json
  loch search ./pets --column embedding --vector q.npy --text "red car" --where "label = 3" -k 10
  loch search ./pets --column embedding --vector q.npy --text "red car" --fusion weighted --weight 0.7 --save red-cars`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			return runSearch(cmd.Context(), &o)
		},
	}
	o.idx.add(cmd)
	cmd.Flags().StringVar(&o.vecFile, "vector", "", "a .npy file of one query vector [d] or a batch [n, d]")
	cmd.Flags().IntVarP(&o.k, "k", "k", 10, "number of nearest rows per query vector")
	cmd.Flags().StringVar(&o.where, "where", "", "keep only rows passing this SQL condition over the table ds")
	cmd.Flags().IntVar(&o.nprobe, "nprobe", 0, "lists of the index each query scans (default: nlist/16, at least 8)")
	cmd.Flags().IntVar(&o.rerank, "rerank", 0, "rows an ivf-pq index re-ranks by their full vectors (default: max(400, 40 x k, rows / 10,000))")
	cmd.Flags().BoolVar(&o.exact, "exact", false, "compare every row; do not use an index")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	o.refs.add(cmd, "search")
	return withHybridSearch(withTextSearch(cmd, &o.refs, &o.idx, &o.where, &o.k, &o.asJSON), &o)
}

// runSearch searches the dataset at o.url for the rows nearest to the
// query vectors and prints them.
func runSearch(ctx context.Context, o *searchOptions) error {
	m, err := o.idx.parse()
	if err != nil {
		return err
	}
	if o.k <= 0 {
		return usagef("-k %d: want k >= 1", o.k)
	}
	queries, err := readQueryVectors(o.vecFile)
	if err != nil {
		return err
	}
	d, allow, err := openFiltered(ctx, o.url, &o.refs, o.where)
	if err != nil {
		return err
	}
	defer d.Close()
	opts := vector.Options{NProbe: o.nprobe, Rerank: o.rerank, Allow: allow}
	res, err := search(ctx, d, o.idx.column, m, queries, o.k, opts, o.exact)
	if err != nil {
		return err
	}
	printWarnings(o.stderr, res.Warnings...)
	if o.asJSON {
		doc := searchJSON{URL: d.URL(), Version: d.Version(), Column: o.idx.column, Metric: string(m), K: o.k,
			Index: res.Index, Warnings: res.Warnings, Results: res.Hits}
		if doc.Warnings == nil {
			doc.Warnings = []string{}
		}
		return printJSON(o.stdout, doc)
	}
	for i, hits := range res.Hits {
		if len(res.Hits) > 1 {
			fmt.Fprintf(o.stdout, "query %d\n", i)
		}
		for _, h := range hits {
			fmt.Fprintf(o.stdout, "%d\t%.6g\n", h.RowID, h.Distance)
		}
	}
	return nil
}

// openFiltered opens the dataset at url at the version r names, and
// returns it with the set of its rows that pass where (allowedRows). The
// caller closes the dataset.
func openFiltered(ctx context.Context, url string, r *refFlags, where string) (*loch.Dataset, *vector.RowSet, error) {
	d, err := openDataset(ctx, url, r)
	if err != nil {
		return nil, nil, err
	}
	allow, err := allowedRows(ctx, d, where)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, allow, nil
}

// allowedRows is the set of rows of d that pass where, an SQL condition
// over the table ds; nil (every row) for "".
func allowedRows(ctx context.Context, d *loch.Dataset, where string) (*vector.RowSet, error) {
	if where == "" {
		return nil, nil
	}
	ids, err := query.Filter(ctx, d, where, query.Options{})
	if err != nil {
		return nil, err
	}
	return vector.NewRowSet(ids), nil
}

func search(ctx context.Context, d *loch.Dataset, column string, m vector.Metric, queries [][]float32, k int, opts vector.Options, exact bool) (*vector.Result, error) {
	if !exact {
		return vector.Search(ctx, d, column, m, queries, k, opts)
	}
	hits, err := vector.Exact(ctx, d.Scan(), column, m, queries, k, opts)
	if err != nil {
		return nil, err
	}
	return &vector.Result{Hits: hits}, nil
}

// readQueryVectors reads a .npy file of one vector [d] or a batch [n, d].
func readQueryVectors(path string) ([][]float32, error) {
	file, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("query vectors: %w", err)
	}
	dt, shape, data, err := ingest.DecodeNPY(file)
	if err != nil {
		return nil, fmt.Errorf("query vectors %s: %w", path, err)
	}
	var n, dim int
	switch len(shape) {
	case 1:
		n, dim = 1, shape[0]
	case 2:
		n, dim = shape[0], shape[1]
	default:
		return nil, fmt.Errorf("query vectors %s: shape %v, want [d] or [n, d]: %w", path, shape, loch.ErrInvalidArgument)
	}
	if n == 0 || dim == 0 {
		return nil, fmt.Errorf("query vectors %s: shape %v holds no vector: %w", path, shape, loch.ErrInvalidArgument)
	}
	flat := make([]float32, 0, n*dim)
	switch dt {
	case schema.Float32:
		v, _ := loch.As[float32](data)
		flat = append(flat, v...)
	case schema.Float64:
		v, _ := loch.As[float64](data)
		for _, f := range v {
			flat = append(flat, float32(f))
		}
	case schema.Float16:
		v, _ := loch.As[uint16](data)
		for _, h := range v {
			flat = append(flat, half.ToFloat32(h))
		}
	default:
		return nil, fmt.Errorf("query vectors %s: dtype %s, want float32, float16 or float64: %w", path, dt, loch.ErrInvalidArgument)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = flat[i*dim : (i+1)*dim]
		for _, f := range out[i] {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("query vectors %s: vector %d holds %v, want finite numbers: %w", path, i, f, loch.ErrInvalidArgument)
			}
		}
	}
	return out, nil
}
