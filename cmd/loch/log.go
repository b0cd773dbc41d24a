package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// logJSON is the document printed by "loch log --json".
type logJSON struct {
	URL     string            `json:"url"`
	Version string            `json:"version"`
	Commits []loch.CommitInfo `json:"commits"`
}

// logOptions are the arguments and flags of loch log.
type logOptions struct {
	streams
	url    string
	asJSON bool
	refs   refFlags
}

func newLogCmd() *cobra.Command {
	var o logOptions
	cmd := &cobra.Command{
		Use:   "log URL",
		Short: "List the versions (commits) of a dataset, newest first",
		Long: `Log lists the commits that lead to the head of main (or of --ref: a branch,
a tag or a version), newest first, following every parent, so that a merge
shows the commits of both sides: the version id, the time (UTC), the branch
the commit was made on, the number of rows of that version and the commit
message. A merge commit's message is followed by "(merge of X, Y)", its two
parents' ids shortened to 8 digits.

With --json it prints one JSON object with the fields url, version (the
version the log starts from) and commits, a list of objects with the fields
id, parents, message, author, time (RFC 3339), rows, branch and expired (the
parents that gc --keep-last/--older-than collected; absent when none).

History that gc's version retention collected ends the log: the last line
then says which parents were collected.`,
		Example: `  loch log ./pets
  loch log ./pets --ref dev
  loch log ./pets --json | jq -r '.commits[0].id'`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			return runLog(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object instead of a table")
	o.refs.add(cmd, "start from")
	return cmd
}

// runLog lists the commits that lead to the version o.refs names.
func runLog(ctx context.Context, o *logOptions) error {
	d, err := openDataset(ctx, o.url, &o.refs)
	if err != nil {
		return err
	}
	defer d.Close()
	commits, err := d.Log(ctx)
	if err != nil {
		return err
	}
	if commits == nil {
		commits = []loch.CommitInfo{}
	}
	if o.asJSON {
		return printJSON(o.stdout, logJSON{URL: d.URL(), Version: d.Version(), Commits: commits})
	}
	return printLog(o.stdout, commits)
}

// printLog prints commits as a table, and where gc's version retention
// ended their history.
func printLog(w io.Writer, commits []loch.CommitInfo) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIME\tBRANCH\tROWS\tMESSAGE")
	for _, c := range commits {
		msg := oneLine(c.Message)
		if len(c.Parents) > 1 {
			short := make([]string, len(c.Parents))
			for i, p := range c.Parents {
				short[i] = p[:min(8, len(p))]
			}
			msg += fmt.Sprintf(" (merge of %s)", strings.Join(short, ", "))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", c.ID, c.Time.UTC().Format(time.DateTime), orDash(c.Branch), c.Rows, msg)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var expired []string
	for _, c := range commits {
		expired = append(expired, c.Expired...)
	}
	if len(expired) > 0 {
		fmt.Fprintf(w, "(older history was collected by gc --keep-last/--older-than: %d parent versions, first %s)\n", len(expired), expired[0])
	}
	return nil
}

// orDash returns s, or "-" when it is empty, for table cells.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
