package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// gcFlags are the flags of a collection: loch gc's, and loch tables
// --gc's.
type gcFlags struct {
	dryRun           bool
	grace, olderThan time.Duration
	keepLast         int
}

// options checks the flags and returns the collection they ask for.
func (g *gcFlags) options() (loch.GCOptions, error) {
	if g.grace < 0 {
		return loch.GCOptions{}, usagef("--grace %s: want 0 or more", g.grace)
	}
	if g.keepLast < 0 || g.olderThan < 0 {
		return loch.GCOptions{}, usagef("--keep-last %d --older-than %s: want 0 or more", g.keepLast, g.olderThan)
	}
	return loch.GCOptions{Grace: g.grace, DryRun: g.dryRun, KeepLast: g.keepLast, OlderThan: g.olderThan}, nil
}

// gcOptions are the arguments and flags of loch gc.
type gcOptions struct {
	streams
	url    string
	gcf    gcFlags
	asJSON bool
	prog   progressFlags
}

func newGCCmd() *cobra.Command {
	var o gcOptions
	cmd := &cobra.Command{
		Use:   "gc URL [--dry-run] [--grace DURATION] [--keep-last N] [--older-than DURATION]",
		Short: "Delete the objects that no branch or tag reaches",
		Long: `GC deletes the stored objects (commits, manifests, fragments, chunks) that
no branch or tag reaches through its versions and their parents: what
deleted branches and tags, reverts and failed writes left behind. A version
that only a deleted branch or tag reached is no longer readable after gc.

The grace period --grace (default 24h) protects recent work: objects written
within it are kept, so that a writer's objects not yet committed survive,
and so is what branches and tags reached at any time within it (a branch
deleted a minute ago is still collected only an hour later). --grace 0 is
safe only when nothing else writes to the dataset. A writer (a handle
holding staged rows, in any process that runs this loch) holds a lease that
gc respects however old its objects are; a commit whose lease lapsed checks
its objects and refuses, rather than publish a version gc emptied.

Version retention: with --keep-last N and/or --older-than DURATION, gc also
collects old versions. A commit that is none of the newest N (default 1) of
a branch's first-parent history and is older than DURATION (any age when
not given) is expired: it and what only expired versions use are deleted.
Branch heads, tags, saved selections and the versions they name, and the
vector index a kept version searches with, are always kept; a kept version
is whole and readable. The log of a kept version then ends where its history
was collected. The rule is docs/format.md §5.2.

It prints the objects and bytes deleted, by kind, and those kept. With
--dry-run it deletes nothing and reports what it would delete. With --json
it prints one JSON object with the fields url, dry_run, reachable, young,
leased, deleted (each objects and bytes), by_kind (kind: objects and bytes
deleted), expired (expired versions where kept history now ends, each
left an expiry marker; the history behind them is in by_kind), dead_leases
(leases of writers gone, deleted) and missing (reachable objects not found;
absent when none).

Progress is shown on standard error while it works when that is a
terminal, or with --progress; never with --quiet: the reachable objects
found so far, then the unreachable objects deleted out of their total.`,
		Example: `  loch gc ./pets --dry-run
  loch gc s3://bucket/pets --grace 24h
  loch gc s3://bucket/pets --keep-last 10 --older-than 168h`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			return runGC(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.gcf.dryRun, "dry-run", false, "report what would be deleted; delete nothing")
	cmd.Flags().DurationVar(&o.gcf.grace, "grace", loch.DefaultGCGrace, "keep unreachable objects younger than this")
	cmd.Flags().IntVar(&o.gcf.keepLast, "keep-last", 0, "version retention: keep the newest N versions of each branch (with --older-than: and those younger)")
	cmd.Flags().DurationVar(&o.gcf.olderThan, "older-than", 0, "version retention: expire only versions older than this")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	o.prog.add(cmd.Flags())
	return cmd
}

// runGC collects the dataset at o.url and reports.
func runGC(ctx context.Context, o *gcOptions) error {
	opts, err := o.gcf.options()
	if err != nil {
		return err
	}
	d, err := openDataset(ctx, o.url, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	bar := o.prog.start(o.stderr, "gc", -1, unitObjects)
	rep, err := d.GC(bar.report(ctx), opts)
	bar.done()
	if err != nil {
		return err
	}
	if rep.ByKind == nil {
		rep.ByKind = map[string]loch.GCKind{}
	}
	if o.asJSON {
		return printJSON(o.stdout, struct {
			URL string `json:"url"`
			*loch.GCReport
		}{d.URL(), rep})
	}
	if err := printGC(o.stdout, rep, o.gcf.grace); err != nil {
		return err
	}
	if len(rep.Missing) > 0 {
		fmt.Fprintf(o.stderr, "loch: warning: %d reachable objects are missing (first: %s); run loch verify\n", len(rep.Missing), rep.Missing[0])
	}
	return nil
}

// printGC describes a collection run with the grace period grace: what was
// (or would be) deleted, by kind, and what was kept.
func printGC(w io.Writer, rep *loch.GCReport, grace time.Duration) error {
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(w, "%s %s\n", verb, objects(rep.Deleted))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range slices.Sorted(maps.Keys(rep.ByKind)) {
		if n := rep.ByKind[k]; n.Objects > 0 {
			fmt.Fprintf(tw, "  %s\t%d\t%s\n", k, n.Objects, formatBytes(n.Bytes))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if grace == 0 {
		fmt.Fprintf(w, "kept %s reachable from branches and tags\n", objects(rep.Reachable))
	} else {
		fmt.Fprintf(w, "kept %s reachable from branches and tags as they are or were in the last %s\n", objects(rep.Reachable), grace)
		fmt.Fprintf(w, "kept %s unreachable but written in the last %s\n", objects(rep.Young), grace)
	}
	if rep.Leased.Objects > 0 {
		fmt.Fprintf(w, "kept %s that writers' live leases hold (staged, not yet committed)\n", objects(rep.Leased))
	}
	if rep.Expired > 0 {
		fmt.Fprintf(w, "version retention: kept history now ends at %d expired versions (commits %s in all: %d)\n", rep.Expired, verb, rep.ByKind["commits"].Objects)
	}
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: nothing was deleted")
	}
	return nil
}

// objects describes a count of objects and their size.
func objects(k loch.GCKind) string {
	noun := "objects"
	if k.Objects == 1 {
		noun = "object"
	}
	return fmt.Sprintf("%d %s (%s)", k.Objects, noun, formatBytes(k.Bytes))
}
