package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// diffOptions are the arguments and flags of loch diff.
type diffOptions struct {
	streams
	url, from, to string
	asJSON        bool
	limit         int
	start         uint64
}

func newDiffCmd() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff URL FROM TO",
		Short: "Compare two versions: rows added, deleted and modified, and schema changes",
		Long: `Diff compares the versions FROM and TO name (branches, tags, version ids
or unique prefixes of 6 or more digits) by stable row id. It prints the
number of rows added, deleted and modified (and, per column, the modified
rows), the schema changes, then the changed rows in row id order, --limit at
a time (0 prints the counts only): the row id, the change and, for a
modified row, the columns that differ. When more rows follow, the last line
gives the --start of the next page.

With --json it prints one JSON object with the fields url, from, to (version ids),
schema (name, change, from, to), added, deleted, modified,
modified_by_column, rows (id, change, columns) and next (the --start of the
next page; absent on the last page).`,
		Example: `  loch diff ./pets main dev
  loch diff ./pets v1.0 main --limit 0
  loch diff ./pets v1.0 main --json | jq '.rows[].id'`,
		Args: exactArgs("URL", "FROM", "TO"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url, o.from, o.to = streamsOf(cmd), args[0], args[1], args[2]
			return runDiff(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	cmd.Flags().IntVar(&o.limit, "limit", 1000, "changed rows to list; 0 for the counts only")
	cmd.Flags().Uint64Var(&o.start, "start", 0, "the smallest row id to list (the next page's start, from the previous page)")
	return cmd
}

// runDiff compares versions o.from and o.to and prints a page of the
// changes.
func runDiff(ctx context.Context, o *diffOptions) error {
	if o.limit < 0 {
		return usagef("--limit %d: want 0 (counts only) or more", o.limit)
	}
	opts := loch.DiffOptions{Start: o.start, Limit: o.limit}
	if o.limit == 0 {
		opts.Limit = -1 // loch's "no rows"; its 0 is the default page
	}
	d, err := openDataset(ctx, o.url, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	diff, err := d.Diff(ctx, o.from, o.to, opts)
	if err != nil {
		return err
	}
	if diff.Rows == nil {
		diff.Rows = []loch.RowChange{}
	}
	if diff.Schema == nil {
		diff.Schema = []loch.ColumnChange{}
	}
	if o.asJSON {
		return printJSON(o.stdout, struct {
			URL string `json:"url"`
			*loch.Diff
		}{d.URL(), diff})
	}
	return printDiff(o.stdout, diff, o.from, o.to, o.limit > 0)
}

// printDiff writes the summary of a diff, then its page of rows when
// withRows.
func printDiff(w io.Writer, diff *loch.Diff, from, to string, withRows bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "from\t%s\n", refAndID(from, diff.From))
	fmt.Fprintf(tw, "to\t%s\n", refAndID(to, diff.To))
	fmt.Fprintf(tw, "rows\t%d added, %d deleted, %d modified\n", diff.Added, diff.Deleted, diff.Modified)
	if len(diff.ModifiedByColumn) > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(diff.ModifiedByColumn)) {
			parts = append(parts, fmt.Sprintf("%s %d", c, diff.ModifiedByColumn[c]))
		}
		fmt.Fprintf(tw, "modified\t%s\n", strings.Join(parts, ", "))
	}
	if len(diff.Schema) == 0 {
		fmt.Fprintf(tw, "schema\tunchanged\n")
	}
	for i, c := range diff.Schema {
		title := ""
		if i == 0 {
			title = "schema"
		}
		fmt.Fprintf(tw, "%s\t%s\n", title, columnChange(c))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !withRows || len(diff.Rows) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tCHANGE\tCOLUMNS")
	for _, r := range diff.Rows {
		// A row without columns ends at its change, unpadded.
		fmt.Fprintf(tw, "%d\t%s", r.ID, r.Change)
		if len(r.Columns) > 0 {
			fmt.Fprintf(tw, "\t%s", strings.Join(r.Columns, ","))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if diff.Next != nil {
		fmt.Fprintf(w, "more rows follow: --start %d\n", *diff.Next)
	}
	return nil
}

// refAndID names a version as the user gave it and by id, when they differ.
func refAndID(ref, id string) string {
	if ref == id {
		return id
	}
	return fmt.Sprintf("%s (%s)", ref, id)
}

// columnChange describes one schema change on one line.
func columnChange(c loch.ColumnChange) string {
	switch {
	case c.From == nil && c.To != nil:
		return fmt.Sprintf("+ %s %s", c.Name, columnType(c.To))
	case c.To == nil && c.From != nil:
		return fmt.Sprintf("- %s %s", c.Name, columnType(c.From))
	case c.From != nil && c.To != nil:
		return fmt.Sprintf("~ %s %s -> %s", c.Name, columnType(c.From), columnType(c.To))
	}
	return fmt.Sprintf("%s %s", c.Change, c.Name)
}

// columnType is a column's dtype, kind and shape range.
func columnType(c *schema.Column) string {
	return fmt.Sprintf("(%s %s %s)", c.DType, c.Kind, shapeRange(&schema.Entry{Column: *c}))
}
