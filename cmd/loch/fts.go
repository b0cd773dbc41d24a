package main

import (
	"context"
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/internal/ftsindex"
	"github.com/lochdata/loch/internal/keys"
)

// This file is the full-text side of 'loch index' and 'loch search'
// (--fts, --text; docs/search.md): the commands in index.go hand over to
// these functions when those flags are given.

// ftsOpts are what the full-text commands take from their flags.
type ftsOpts struct {
	url    string
	refs   *refFlags
	column string
	asJSON bool
}

func printFTSInfo(cmd *cobra.Command, info *fts.Info, asJSON bool, verb string) error {
	w := cmd.OutOrStdout()
	if asJSON {
		return printJSON(w, info)
	}
	fmt.Fprintf(w, "%s %s: %d rows of %q (%d tokens, bm25) in %d segments, %s written\n", verb, info.Key, info.Docs, info.Column, info.Tokens, info.Segments, humanize.IBytes(uint64(info.Bytes)))
	return nil
}

// runIndexBuildFTS writes the full-text index of a text or json column
// with build: fts.Build (a new index, printed as done "built") or
// fts.Update (the rows changed since folded into a new index, "updated").
func runIndexBuildFTS(ctx context.Context, cmd *cobra.Command, o ftsOpts, build func(context.Context, *loch.Dataset, string, fts.BuildOptions) (*fts.Info, error), done string) error {
	d, err := openDataset(ctx, o.url, o.refs)
	if err != nil {
		return err
	}
	defer d.Close()
	info, err := build(ctx, d, o.column, fts.BuildOptions{})
	if err != nil {
		return err
	}
	return printFTSInfo(cmd, info, o.asJSON, done)
}

// runIndexDropFTS deletes the full-text descriptor of the version read.
func runIndexDropFTS(ctx context.Context, cmd *cobra.Command, o ftsOpts) error {
	d, err := openDataset(ctx, o.url, o.refs)
	if err != nil {
		return err
	}
	defer d.Close()
	sch := d.Schema()
	col, ok := sch.Column(o.column)
	if !ok {
		return fmt.Errorf("%s has no column %q: %w", d.URL(), o.column, loch.ErrNotFound)
	}
	key := keys.MakeIndex(d.Version(), col.UID, ftsindex.Metric)
	if _, err := d.Store().Stat(ctx, key); err != nil {
		return fmt.Errorf("no full-text index of column %q at version %s of %s: %w", o.column, d.Version(), d.URL(), err)
	}
	if err := d.Store().Delete(ctx, key); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "dropped %s\n", key)
	return nil
}

// textSearchJSON is the document printed by "loch search --text --json".
type textSearchJSON struct {
	URL      string    `json:"url"`
	Version  string    `json:"version"`
	Column   string    `json:"column"`
	Text     string    `json:"text"`
	K        int       `json:"k"`
	Index    string    `json:"index"`
	Warnings []string  `json:"warnings"`
	Results  []fts.Hit `json:"results"`
}

// runSearchText prints the k best rows of a full-text query.
func runSearchText(ctx context.Context, cmd *cobra.Command, o ftsOpts, text, where string, k int) error {
	if k <= 0 {
		return usagef("-k %d: want k >= 1", k)
	}
	d, allow, err := openFiltered(ctx, o.url, o.refs, where)
	if err != nil {
		return err
	}
	defer d.Close()
	res, err := fts.Search(ctx, d, o.column, text, k, fts.Options{Allow: allow})
	if err != nil {
		return err
	}
	printWarnings(cmd.ErrOrStderr(), res.Warnings...)
	w := cmd.OutOrStdout()
	if o.asJSON {
		doc := textSearchJSON{URL: d.URL(), Version: d.Version(), Column: o.column, Text: text, K: k,
			Index: res.Index, Warnings: res.Warnings, Results: res.Hits}
		if doc.Warnings == nil {
			doc.Warnings = []string{}
		}
		if doc.Results == nil {
			doc.Results = []fts.Hit{}
		}
		return printJSON(w, doc)
	}
	for _, h := range res.Hits {
		fmt.Fprintf(w, "%d\t%.6g\n", h.RowID, h.Score)
	}
	return nil
}

// withTextSearch adds --text to the search command: with it the command
// runs a full-text query (runSearchText) instead of a vector search,
// which then needs --vector.
func withTextSearch(cmd *cobra.Command, refs *refFlags, idx *indexFlags, where *string, k *int, asJSON *bool) *cobra.Command {
	var text string
	cmd.Flags().StringVar(&text, "text", "", "a full-text query over a text or json column (docs/search.md), instead of --vector")
	vectorRun := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if text != "" {
			return runSearchText(cmd.Context(), cmd, ftsOpts{url: args[0], refs: refs, column: idx.column, asJSON: *asJSON}, text, *where, *k)
		}
		if !cmd.Flags().Changed("vector") {
			return usagef("want --vector FILE.npy or --text QUERY")
		}
		return vectorRun(cmd, args)
	}
	return cmd
}
