package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/sqlcat"
)

// formatSelection is loch query's --format that prints the result as a
// selection (JSON) instead of as data.
const formatSelection = "selection"

// queryOptions are the arguments and flags of loch query.
type queryOptions struct {
	streams
	url, sql          string
	refs              refFlags
	format, out, save string
	limit, threads    int
	seed              *uint64
	cacheDir, table   string
}

func newQueryCmd() *cobra.Command {
	var (
		o    queryOptions
		seed uint64
	)
	cmd := &cobra.Command{
		Use:   "query URL|ROOT SQL",
		Short: "Run SQL over a dataset or a catalog; print the result or save it as a selection",
		Long: `Query runs SQL (DuckDB's dialect, embedded in loch) over the version of the
dataset --ref or --as-of names (default main). The version is the table ds,
and also the table named by the last element of URL; a SELECT with no FROM
reads it. loch_scan('URL', ref => 'v1', as_of => '2026-11-01T00:00:00Z')
reads any dataset and version, so one query can compare versions.

Every table has the columns _rowid (the stable row id) and _pos (the row's
position in the version) first, then the dataset's columns: numbers and
bools as DuckDB's type of that width, text as VARCHAR, json as JSON,
class labels as an ENUM of their class names, fixed [d] tensors up to 4096
elements as FLOAT[d]-style arrays (array_cosine_similarity works on them),
other small tensors (boxes) as nested lists, and images, video, audio and
large tensors as STRUCT(shape, dtype, bytes) read from chunk headers, never
their pixels. A query reads only the columns it references.

random() is seeded (--seed, default 0) and hashes the row id: ORDER BY
random() is a reproducible shuffle.

--format table, json (one object per line), csv or parquet prints the
result as data (--limit N keeps the first N rows; --out FILE writes it
there). --format selection prints the result as a selection: the version,
the SQL, the seed, the columns and the row ids in result order (ties broken
by _pos). --save NAME stores that selection in the dataset, for
'loch order/bench --selection NAME' and Python's ds.selection(NAME).

With a catalog ROOT (loch tables, loch sql) instead of a dataset URL, the
query reads the catalog's tables by name, so it can join them (SELECT
f._rowid, f.image, l.label FROM frames f JOIN labels l USING (id)), as
'loch sql ROOT' reads them (--ref: the branch or tag each table is read
at where it has it, else main). It only reads: write statements go to
'loch sql'. A selection is of the one table the query names, or of
--table: it carries that table's row id and, as joined columns, the values
of the other columns it names; --save stores it in that table.`,
		Example: `  loch query ./pets "SELECT label, count(*) FROM ds GROUP BY label"
  loch query ./pets "SELECT image, label WHERE meta->>'quality' = 'high' ORDER BY random()" --save high
  loch query ./pets "SELECT * FROM loch_scan('./pets', ref => 'v1') EXCEPT SELECT * FROM ds" --format csv
  loch query ./pets "SELECT label, meta FROM ds" --format parquet --out pets.parquet
  loch query ./lake "SELECT f._rowid, f.image, l.label FROM frames f JOIN labels l USING (id)" --table frames --save labelled`,
		Args: exactArgs("URL", "SQL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url, o.sql, o.seed = streamsOf(cmd), args[0], args[1], seedIf(cmd, "seed", seed)
			return runQuery(cmd.Context(), &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", query.FormatTable, "table, json, csv, parquet or selection")
	f.StringVarP(&o.out, "out", "o", "", "write the result to this file instead of standard output")
	f.IntVar(&o.limit, "limit", 0, "print at most this many rows (data formats)")
	f.Uint64Var(&seed, "seed", 0, "seed of random()")
	f.StringVar(&o.save, "save", "", "save the result as a selection of this name")
	f.IntVar(&o.threads, "threads", 0, "DuckDB threads (default: all cores)")
	f.StringVar(&o.table, "table", "", "with a catalog ROOT: the table whose rows a selection of several tables selects")
	f.StringVar(&o.cacheDir, "cache", "", "directory of a local chunk cache (shared with loch bench and the loader): a later query reads its chunks there")
	o.refs.add(cmd, "query")
	return cmd
}

// selectionOnly says the result is a selection, printed or saved, not data.
func (o *queryOptions) selectionOnly() bool { return o.format == formatSelection || o.save != "" }

// runQuery runs loch query over a dataset, or over a catalog's tables.
func runQuery(ctx context.Context, o *queryOptions) error {
	switch o.format {
	case query.FormatTable, query.FormatJSON, query.FormatCSV, query.FormatParquet, formatSelection:
	default:
		return usagef("--format %q: want table, json, csv, parquet or selection", o.format)
	}
	if o.selectionOnly() && o.limit != 0 {
		return usagef("--limit is for data formats; use LIMIT in the SQL of a selection")
	}
	if o.limit < 0 {
		return usagef("--limit %d: want at least 0", o.limit)
	}
	d, err := openDataset(ctx, o.url, &o.refs)
	if errors.Is(err, loch.ErrNoDataset) {
		// A catalog root: its tables by name, through loch sql's session.
		cat, cerr := catalog.Open(ctx, o.url)
		if cerr != nil {
			return err
		}
		defer cat.Close()
		cq := catalogQuery{streams: o.streams, refs: o.refs, format: o.format, out: o.out, save: o.save, table: o.table, limit: o.limit, threads: o.threads, seed: o.seed}
		return cq.run(ctx, cat, o.sql)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	if o.table != "" {
		return usagef("--table is for a catalog ROOT: %s is a dataset", o.url)
	}
	return queryDataset(ctx, o, d)
}

// queryDataset runs the query of o over d and prints its result, or saves
// it as a selection.
func queryDataset(ctx context.Context, o *queryOptions, d *loch.Dataset) error {
	opts := query.Options{Threads: o.threads, Seed: o.seed}
	if o.cacheDir != "" {
		c, err := chunkcache.Open(o.cacheDir, 10<<30, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		opts.Cache = c
	}
	e, err := query.New(ctx, d, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	w, closeOut, err := outWriter(o.stdout, o.out)
	if err != nil {
		return err
	}
	defer closeOut()
	q := sqlcat.PostgresOperators(o.sql)
	if !o.selectionOnly() {
		_, err := e.Write(ctx, q, o.format, o.limit, w)
		return err
	}
	sel, err := e.Select(ctx, q)
	if err != nil {
		return err
	}
	if o.save != "" {
		if err := d.SaveSelection(ctx, o.save, sel); err != nil {
			return err
		}
		if o.format != formatSelection {
			fmt.Fprintf(w, "saved selection %s: %d rows of version %s\n", o.save, sel.Len(), sel.Version)
			return nil
		}
	}
	return printSelection(w, sel)
}

// selectionJSON is a selection as --format selection prints it.
type selectionJSON struct {
	Name    string   `json:"name,omitempty"`
	Version string   `json:"version"`
	SQL     string   `json:"sql"`
	Seed    *uint64  `json:"seed,omitempty"`
	Columns []string `json:"columns"`
	Rows    int      `json:"rows"`
	RowIDs  []uint64 `json:"row_ids"`
	// Joined are the values of the result's columns that are not the
	// dataset's own (docs/format.md §2.7).
	Joined []loch.JoinedColumn `json:"joined,omitempty"`
}

func printSelection(w io.Writer, s *loch.Selection) error {
	return printJSON(w, newSelectionJSON(s))
}

func newSelectionJSON(s *loch.Selection) selectionJSON {
	ids := s.RowIDs
	if ids == nil {
		ids = []uint64{}
	}
	return selectionJSON{Name: s.Name, Version: s.Version, SQL: s.SQL, Seed: s.Seed, Columns: s.Columns, Rows: len(ids), RowIDs: ids, Joined: s.Joined}
}

// selectionsOptions are the arguments and flags of loch selections.
type selectionsOptions struct {
	streams
	url, name   string
	hasName     bool // NAME given
	del, asJSON bool
}

func newSelectionsCmd() *cobra.Command {
	var o selectionsOptions
	cmd := &cobra.Command{
		Use:   "selections URL [NAME]",
		Short: "List, show or delete saved selections",
		Long: `Selections with only URL lists the saved selections (made by
'loch query --save'), sorted by name: name, rows, version and SQL.

With --json the listing is one JSON object with the fields url and
selections (each with the fields of a selection but its row ids). With
NAME it prints that selection as JSON, row ids included. --delete
removes NAME; its object and version stay until 'loch gc' removes what
nothing else keeps. A saved selection keeps its version, like a tag.`,
		Example: `  loch selections ./pets
  loch selections ./pets high
  loch selections ./pets high --delete`,
		Args: rangeArgs(1, "URL", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			if len(args) == 2 {
				o.name, o.hasName = args[1], true
			}
			return runSelections(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVarP(&o.del, "delete", "d", false, "delete selection NAME")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the listing as a JSON list")
	return cmd
}

// runSelections lists the saved selections of the dataset at o.url, or
// prints or deletes selection o.name.
func runSelections(ctx context.Context, o *selectionsOptions) error {
	switch {
	case !o.hasName && o.del:
		return usagef("--delete needs a selection NAME")
	case o.hasName && o.asJSON:
		return usagef("--json is for the listing; NAME prints JSON")
	}
	d, err := openDataset(ctx, o.url, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	w := o.stdout
	if o.hasName {
		if o.del {
			if err := d.DeleteSelection(ctx, o.name); err != nil {
				return err
			}
			fmt.Fprintf(w, "deleted selection %s\n", o.name)
			return nil
		}
		sel, err := d.Selection(ctx, o.name)
		if err != nil {
			return err
		}
		return printSelection(w, sel)
	}
	list, err := d.Selections(ctx)
	if err != nil {
		return err
	}
	if o.asJSON {
		if list == nil {
			list = []loch.SelectionInfo{}
		}
		return printJSON(w, struct {
			URL        string               `json:"url"`
			Selections []loch.SelectionInfo `json:"selections"`
		}{d.URL(), list})
	}
	for _, s := range list {
		fmt.Fprintf(w, "%s\t%d rows\t%s\t%s\n", s.Name, s.Rows, s.Version, oneLine(s.SQL))
	}
	return nil
}

// useSelection points cfg at the saved selection name of ds[0]: the
// dataset is reopened at the selection's version when it is at another,
// and cfg gets its rows, its query, its joined columns and (when no
// columns were asked for) its columns.
func useSelection(ctx context.Context, urls []string, ds []*loch.Dataset, name string, refs *refFlags, cfg *loader.Config) error {
	if name == "" {
		return nil
	}
	if len(ds) != 1 {
		return usagef("--selection is for one dataset, not a mixture")
	}
	if refs.ref != "" || refs.asOf != "" || refs.version != "" {
		return usagef("--selection reads the version the selection ran on: give no --ref or --as-of")
	}
	sel, err := ds[0].Selection(ctx, name)
	if err != nil {
		return err
	}
	if ds[0].Version() != sel.Version {
		d, err := openDataset(ctx, urls[0], nil, loch.WithVersion(sel.Version))
		if err != nil {
			return fmt.Errorf("selection %q: %w", name, err)
		}
		ds[0].Close()
		ds[0] = d
	}
	cfg.Rows, cfg.Query, cfg.Joined = sel.RowIDs, sel.SQL, sel.Joined
	if cfg.Columns == nil && sel.Columns != nil {
		cfg.Columns = sel.Columns
	}
	return nil
}

// catalogQuery is loch query over a catalog ROOT: loch sql's session,
// reading only.
type catalogQuery struct {
	streams
	refs              refFlags
	format, out, save string
	table             string
	limit, threads    int
	seed              *uint64
}

func (c catalogQuery) run(ctx context.Context, cat *catalog.Catalog, q string) error {
	if c.refs.asOf != "" || c.refs.version != "" {
		return usagef("--as-of and --version name one dataset's version; over a catalog use --ref (a branch or tag), or loch sql --pin TABLE=VERSION")
	}
	if !sqlcat.IsQuery(q) {
		return usagef("loch query reads; run %q with loch sql", oneLine(q))
	}
	s := sqlcat.NewSession(cat)
	s.Branch, s.Threads, s.Seed = c.refs.ref, c.threads, c.seed
	w, closeOut, err := outWriter(c.stdout, c.out)
	if err != nil {
		return err
	}
	defer closeOut()
	if c.format != formatSelection && c.save == "" {
		if c.table != "" {
			return usagef("--table goes with --format selection or --save")
		}
		_, err := s.Run(ctx, q, sqlcat.Output{W: w, Format: c.format, Limit: c.limit})
		return err
	}
	sel, table, err := s.Select(ctx, q, c.seed, c.table)
	if err != nil {
		return err
	}
	if c.save != "" {
		d, err := cat.OpenTable(ctx, table)
		if err != nil {
			return err
		}
		defer d.Close()
		if err := d.SaveSelection(ctx, c.save, sel); err != nil {
			return err
		}
		if c.format != formatSelection {
			fmt.Fprintf(w, "saved selection %s in table %s: %d rows of version %s\n", c.save, table, sel.Len(), sel.Version)
			return nil
		}
	}
	return printTableSelection(ctx, w, cat, sel, table)
}

// printTableSelection prints a selection of catalog table table, with the
// table's name and URL.
func printTableSelection(ctx context.Context, w io.Writer, cat *catalog.Catalog, sel *loch.Selection, table string) error {
	t, err := cat.Table(ctx, table)
	if err != nil {
		return err
	}
	return printJSON(w, tableSelectionJSON{selectionJSON: newSelectionJSON(sel), Table: t.Name, URL: t.URL})
}
