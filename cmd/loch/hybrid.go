package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/hybrid"
)

// This file is the hybrid side of 'loch search' (--vector and --text
// together, or --fusion; docs/search.md): newSearchCmd hands over to
// runSearchHybrid then.

// hybridFlags are the flags of loch search that only hybrid search takes.
type hybridFlags struct {
	textColumn, fusion, save string
	weight, rrfK             float64
	window                   int
}

// withHybridSearch adds the hybrid flags to the search command: with
// --vector and --text, or with --fusion, it runs runSearchHybrid.
func withHybridSearch(cmd *cobra.Command, o *searchOptions) *cobra.Command {
	var h hybridFlags
	f := cmd.Flags()
	f.StringVar(&h.textColumn, "text-column", "", "with --vector and --text: the text or json column (default: the dataset's only text column)")
	f.StringVar(&h.fusion, "fusion", "rrf", "how --vector and --text rankings are fused: rrf (reciprocal rank) or weighted")
	f.Float64Var(&h.weight, "weight", hybrid.DefaultWeight, "--fusion weighted: the vector side's weight in [0, 1] (the text side's is 1 - weight)")
	f.Float64Var(&h.rrfK, "rrf-k", hybrid.DefaultRRFK, "--fusion rrf: the rank constant of 1 / (rrf_k + rank)")
	f.IntVar(&h.window, "rank-window", 0, "rows each side ranks before fusion (default: k)")
	f.StringVar(&h.save, "save", "", "save the hybrid result as a selection of this name (rows in fused order)")
	single := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		text, _ := cmd.Flags().GetString("text")
		if cmd.Flags().Changed("fusion") || cmd.Flags().Changed("save") || (text != "" && cmd.Flags().Changed("vector")) {
			o.streams, o.url = streamsOf(cmd), args[0]
			return runSearchHybrid(cmd.Context(), o, &h, text)
		}
		return single(cmd, args)
	}
	return cmd
}

// hybridQuery is the hybrid.Query of the flags.
func hybridQuery(o *searchOptions, h *hybridFlags, text string) (hybrid.Query, error) {
	m, err := o.idx.parse()
	if err != nil {
		return hybrid.Query{}, err
	}
	if o.k <= 0 {
		return hybrid.Query{}, usagef("-k %d: want k >= 1", o.k)
	}
	q := hybrid.Query{VectorColumn: o.idx.column, Metric: m, Text: text, TextColumn: h.textColumn, K: o.k, Window: h.window}
	if q.Fusion, err = hybrid.ParseFusion(h.fusion, h.rrfK, h.weight); err != nil {
		return q, usagef("%v", err)
	}
	if o.vecFile == "" {
		if q.TextColumn == "" {
			q.TextColumn = o.idx.column // the text side alone: --column names its column
		}
		return q, nil
	}
	vecs, err := readQueryVectors(o.vecFile)
	if err != nil {
		return q, err
	}
	if len(vecs) != 1 {
		return q, usagef("--vector %s holds %d vectors: a hybrid search takes one", o.vecFile, len(vecs))
	}
	q.Vector = vecs[0]
	return q, nil
}

// hybridJSON is the document printed by "loch search --json" for a
// hybrid search.
type hybridJSON struct {
	URL          string         `json:"url"`
	Version      string         `json:"version"`
	VectorColumn string         `json:"vector_column"`
	TextColumn   string         `json:"text_column"`
	Metric       string         `json:"metric"`
	Text         string         `json:"text"`
	K            int            `json:"k"`
	Fusion       hybrid.Fusion  `json:"fusion"`
	VectorIndex  string         `json:"vector_index"`
	TextIndex    string         `json:"text_index"`
	Warnings     []string       `json:"warnings"`
	Results      []hybrid.Hit   `json:"results"`
	Selection    *selectionSave `json:"selection,omitempty"`
}

// selectionSave names the selection a search saved.
type selectionSave struct {
	Name string `json:"name"`
	Rows int    `json:"rows"`
}

// runSearchHybrid prints (or saves) the k best rows of a hybrid search.
func runSearchHybrid(ctx context.Context, o *searchOptions, h *hybridFlags, text string) error {
	q, err := hybridQuery(o, h, text)
	if err != nil {
		return err
	}
	d, allow, err := openFiltered(ctx, o.url, &o.refs, o.where)
	if err != nil {
		return err
	}
	defer d.Close()
	res, err := hybrid.Search(ctx, d, q, hybrid.Options{NProbe: o.nprobe, Rerank: o.rerank, Exact: o.exact, Allow: allow})
	if err != nil {
		return err
	}
	printWarnings(o.stderr, res.Warnings...)
	var saved *selectionSave
	if h.save != "" {
		if err := d.SaveSelection(ctx, h.save, res.Selection(o.where)); err != nil {
			return err
		}
		saved = &selectionSave{Name: h.save, Rows: len(res.Hits)}
	}
	if o.asJSON {
		q := res.Query
		doc := hybridJSON{URL: d.URL(), Version: d.Version(), VectorColumn: q.VectorColumn, TextColumn: q.TextColumn, Metric: string(q.Metric),
			Text: q.Text, K: q.K, Fusion: q.Fusion, VectorIndex: res.VectorIndex, TextIndex: res.TextIndex,
			Warnings: append([]string{}, res.Warnings...), Results: append([]hybrid.Hit{}, res.Hits...), Selection: saved}
		return printJSON(o.stdout, doc)
	}
	if saved != nil {
		fmt.Fprintf(o.stdout, "saved selection %s: %d rows of version %s\n", saved.Name, saved.Rows, d.Version())
		return nil
	}
	printHybridHits(o.stdout, res.Hits)
	return nil
}

// printHybridHits prints one line a hit: row id, fused score, vector rank
// and distance, text rank and score ("-" for a side that did not rank it).
func printHybridHits(w io.Writer, hits []hybrid.Hit) {
	for _, h := range hits {
		vec, txt := "-\t-", "-\t-"
		if h.VectorRank > 0 {
			vec = fmt.Sprintf("%d\t%.6g", h.VectorRank, h.Distance)
		}
		if h.TextRank > 0 {
			txt = fmt.Sprintf("%d\t%.6g", h.TextRank, h.TextScore)
		}
		fmt.Fprintf(w, "%d\t%.6g\t%s\t%s\n", h.RowID, h.Score, vec, txt)
	}
}
