package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// commitOptions are the arguments and flags of loch commit.
type commitOptions struct {
	streams
	url             string
	descs           []string // the DESC.json files
	branch, message string
	asJSON          bool
}

func newCommitCmd() *cobra.Command {
	var o commitOptions
	cmd := &cobra.Command{
		Use:   "commit URL DESC.json...",
		Short: "Publish rows staged by 'loch ingest --stage-only' on any number of machines, in one commit",
		Long: `Commit publishes the rows that writers staged without committing ('loch ingest
... --stage-only --out DESC.json', loch.ray.write's tasks, Dataset.Stage) as
one new version of branch --branch (default main): one commit, whatever the
number of writers (docs/format.md §7).

Each DESC.json is the description a writer wrote. Before committing, every
fragment it names is read and checked; a description of another dataset, of
a newer format, edited, or naming a missing or altered fragment refuses the
whole commit, and nothing is committed. Descriptions already published on
the branch are skipped, so running the same command twice adds the rows
once. It prints the new version id and the rows added. With --json it
prints one object: url, branch, version, rows (the branch's), added (rows), published and
skipped (description ids).`,
		Example: `  # on each machine, its share of the files:
  loch ingest jsonl part-0001.jsonl s3://bucket/ds --stage-only --out part-0001.json
  # then, once, anywhere:
  loch commit s3://bucket/ds part-*.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return usagef("missing URL and DESC.json")
			case 1:
				return usagef("missing DESC.json (after the URL): the descriptions to commit")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url, o.descs = streamsOf(cmd), args[0], args[1:]
			return runCommit(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.branch, "branch", defaultBranch, "the branch to commit to")
	cmd.Flags().StringVarP(&o.message, "message", "m", "", `commit message (default "commit N staged writes")`)
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	return cmd
}

// runCommit publishes the staged writes that the description files name
// in one commit of o.branch.
func runCommit(ctx context.Context, o *commitOptions) error {
	var descs []*loch.Staged
	for _, p := range o.descs {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read description: %w", err)
		}
		s, err := loch.ParseStaged(b)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		descs = append(descs, s)
	}
	d, err := openBranch(ctx, o.url, o.branch)
	if err != nil {
		return err
	}
	defer d.Close()
	message := o.message
	if message == "" {
		message = fmt.Sprintf("commit %d staged writes", len(descs))
	}
	res, err := d.CommitStaged(ctx, message, descs...)
	if err != nil {
		return err
	}
	w := o.stdout
	if o.asJSON {
		return printJSON(w, map[string]any{"url": d.URL(), "branch": o.branch, "version": res.Version,
			"rows": d.Len(), "added": res.Rows, "published": res.Published, "skipped": res.Skipped})
	}
	fmt.Fprintf(w, "committed %d rows from %d staged writes to %s (branch %s), version %s", res.Rows, len(res.Published), d.URL(), o.branch, res.Version)
	if n := len(res.Skipped); n > 0 {
		fmt.Fprintf(w, "; %d were committed already", n)
	}
	fmt.Fprintln(w)
	return nil
}
