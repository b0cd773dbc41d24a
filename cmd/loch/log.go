package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

func newLogCmd() *cobra.Command {
	var (
		asJSON  bool
		version string
	)
	cmd := &cobra.Command{
		Use:   "log URL",
		Short: "List the versions (snapshots) of a dataset, newest first",
		Long: `Log lists the commits that lead to the newest version (or to --version),
newest first, following first parents: the version id, the time (UTC), the
number of rows of that version and the commit message.

With --json it prints a JSON list of objects with the fields id, parents,
message, author, time (RFC 3339), rows and branch.`,
		Example: `  loch log ./pets
  loch log ./pets --json | jq -r '.[0].id'`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := openDataset(cmd.Context(), args[0], version)
			if err != nil {
				return err
			}
			defer d.Close()
			commits, err := d.Log(cmd.Context())
			if err != nil {
				return err
			}
			if commits == nil {
				commits = []loch.CommitInfo{}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(commits)
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tTIME\tROWS\tMESSAGE")
			for _, c := range commits {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", c.ID, c.Time.UTC().Format(time.DateTime), c.Rows, oneLine(c.Message))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON list instead of a table")
	cmd.Flags().StringVar(&version, "version", "", "start from this version (snapshot id) instead of the newest")
	return cmd
}
