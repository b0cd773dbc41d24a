package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// maxConflictsShown bounds the conflicts merge lists in its table.
const maxConflictsShown = 20

// mergeOptions are the arguments and flags of loch merge.
type mergeOptions struct {
	streams
	url, src                string
	into, strategy, message string
	asJSON                  bool
	prog                    progressFlags
}

func newMergeCmd() *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge URL SRC [--into BRANCH]",
		Short: "Merge a branch, tag or version into a branch",
		Long: `Merge brings the version SRC names (a branch, a tag, a version id or a
unique prefix) into branch --into (default main), three-way by stable row id
against their common ancestor: rows appended on either side are kept, rows
deleted or modified on one side take that change, and columns added on
either side are merged. When --into is an ancestor of SRC, it moves to SRC
(a fast forward) and no commit is made.

Rows changed on both sides are conflicts, resolved by --strategy: fail (the
default) changes nothing, lists the conflicting rows (the first 20, with the
columns each side changed) and exits with status 1; ours keeps the rows of
--into; theirs takes the rows of SRC.

The rows decided out of the rows either side changed are shown on
standard error while it works when that is a terminal, or with
--progress; never with --quiet.

With --json it prints one JSON object with the fields url, commit (the head of
--into after the merge), base, fast_forward, up_to_date, added, deleted,
modified, columns_added and conflicts (id, ours, theirs, ours_columns,
theirs_columns); on a failed merge commit is empty and conflicts lists
them all.`,
		Example: `  loch merge ./pets dev
  loch merge ./pets fix --into release --message "merge the label fix"
  loch merge ./pets dev --strategy theirs`,
		Args: exactArgs("URL", "SRC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url, o.src = streamsOf(cmd), args[0], args[1]
			return runMerge(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.into, "into", defaultBranch, "the branch to merge into")
	cmd.Flags().StringVar(&o.strategy, "strategy", loch.MergeFail, "for rows changed on both sides: fail, ours (keep --into's) or theirs (take SRC's)")
	cmd.Flags().StringVarP(&o.message, "message", "m", "", `commit message (default "merge SRC into BRANCH")`)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	o.prog.add(cmd.Flags())
	return cmd
}

// runMerge merges o.src into branch o.into and reports.
func runMerge(ctx context.Context, o *mergeOptions) error {
	switch o.strategy {
	case loch.MergeFail, loch.MergeOurs, loch.MergeTheirs:
	default:
		return usagef("--strategy %q: want fail, ours or theirs", o.strategy)
	}
	d, err := openBranch(ctx, o.url, o.into)
	if err != nil {
		return err
	}
	defer d.Close()
	bar := o.prog.start(o.stderr, "merge", -1, unitRows)
	res, err := d.Merge(bar.report(ctx), o.src, loch.MergeOptions{Strategy: o.strategy, Message: o.message})
	bar.done()
	w := o.stdout
	var ce *loch.ConflictError
	if errors.As(err, &ce) {
		return reportConflicts(w, d.URL(), ce, o.asJSON, o.into, o.src)
	}
	if err != nil {
		return err
	}
	if res.Conflicts == nil {
		res.Conflicts = []loch.Conflict{}
	}
	if res.Columns == nil {
		res.Columns = []string{}
	}
	if o.asJSON {
		return printJSON(w, mergeJSON{d.URL(), res})
	}
	printMerge(w, res, o.into, o.src, o.strategy)
	return nil
}

// mergeJSON is the document printed by "loch merge --json".
type mergeJSON struct {
	URL string `json:"url"`
	*loch.MergeResult
}

// reportConflicts prints the conflicts that stopped a merge of src into
// dst and returns the command's error.
func reportConflicts(w io.Writer, url string, ce *loch.ConflictError, asJSON bool, dst, src string) error {
	if asJSON {
		if err := printJSON(w, mergeJSON{url, &loch.MergeResult{Base: ce.Base, Columns: []string{}, Conflicts: ce.Conflicts}}); err != nil {
			return err
		}
	} else if err := printConflicts(w, ce.Conflicts, dst, src); err != nil {
		return err
	}
	n := len(ce.Conflicts)
	return fmt.Errorf("merge %s into %s: %d %s changed on both sides; nothing was changed (use --strategy ours or theirs to resolve)",
		src, dst, n, plural(n, "row", "rows"))
}

// printMerge describes a merge of src into dst that succeeded.
func printMerge(w io.Writer, res *loch.MergeResult, dst, src, strategy string) {
	switch {
	case res.UpToDate:
		fmt.Fprintf(w, "%s is up to date with %s: nothing to merge\n", dst, src)
	case res.FastForward:
		fmt.Fprintf(w, "fast-forwarded %s to %s, version %s: %d rows added, %d deleted, %d modified\n",
			dst, src, res.Commit, res.Added, res.Deleted, res.Modified)
	default:
		fmt.Fprintf(w, "merged %s into %s, version %s (base %s): %d rows added, %d deleted, %d modified\n",
			src, dst, res.Commit, res.Base, res.Added, res.Deleted, res.Modified)
	}
	if len(res.Columns) > 0 {
		fmt.Fprintf(w, "columns added: %s\n", strings.Join(res.Columns, ", "))
	}
	if n := len(res.Conflicts); n > 0 {
		fmt.Fprintf(w, "%d %s changed on both sides, resolved with --strategy %s\n", n, plural(n, "row", "rows"), strategy)
	}
}

// printConflicts lists the first conflicts of a merge of src into dst, and
// how many more there are.
func printConflicts(w io.Writer, conflicts []loch.Conflict, dst, src string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ROW\tOURS (%s)\tTHEIRS (%s)\n", dst, src)
	side := func(change string, cols []string) string {
		if len(cols) == 0 {
			return change
		}
		return change + " " + strings.Join(cols, ",")
	}
	for _, c := range conflicts[:min(len(conflicts), maxConflictsShown)] {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", c.ID, side(c.Ours, c.OursColumns), side(c.Theirs, c.TheirsColumns))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(conflicts) - maxConflictsShown; n > 0 {
		fmt.Fprintf(w, "... and %d more\n", n)
	}
	return nil
}
