package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// compactOptions are the arguments and flags of loch compact.
type compactOptions struct {
	streams
	url             string
	branch, message string
	targetRows      int64
	targetBytes     sizeFlag
	maxDeleted      float64
	fanout          int
	dryRun, asJSON  bool
	prog            progressFlags
}

func newCompactCmd() *cobra.Command {
	f := &compactOptions{}
	cmd := &cobra.Command{
		Use:   "compact URL [--target-rows N] [--target-bytes SIZE] [--max-deleted F] [--fanout N] [--dry-run]",
		Short: "Rewrite small fragments, and fragments with many deleted rows, into large ones",
		Long: `Compact rewrites the fragments of --branch (default main) that many small
commits and deletions left into fragments of the target size, as one new
version (docs/format.md §8). Every live row keeps its row id, its values
and its position; deleted rows are dropped. Samples are copied as stored,
never decoded. Fragments that need no rewriting are not read.

A fragment is small when it holds under half of --target-rows live rows
(default 1048576) and under half of --target-bytes of chunks (default
512MiB); it has too many deleted rows when more than --max-deleted of its
rows are deleted (default 0.1; a negative value never rewrites a fragment
for its deletions alone). Runs of such consecutive fragments are cut into
groups of at most the target size, each rewritten into one fragment.
--fanout N (2 or more) compacts in tiers, as automatic compaction does:
only runs of at least N small fragments of one size class are merged.

Compaction never makes another writer fail: when the branch moves while it
runs, it rebases onto the new head, carrying over rows deleted meanwhile,
and leaves out (yields) the groups whose fragments changed. Interrupted,
it leaves the dataset as it was (its unreferenced objects are removed by
gc).

It prints the fragments before and after, the groups rewritten, the rows
copied, the deleted rows dropped and the chunk bytes before and after.
With --dry-run it plans and reports and writes nothing (the bytes after
are then unknown, 0). With --json it prints one JSON object with the fields
url, branch, dry_run, version, fragments_before, fragments_after, groups,
rewritten, rows, dropped, bytes_before, bytes_after and yielded.

The rows copied out of those to copy are shown on standard error while it
works when that is a terminal, or with --progress; never with --quiet.`,
		Example: `  loch compact ./pets --dry-run
  loch compact s3://bucket/pets --target-rows 500000 -m "nightly compaction"
  loch compact ./pets --fanout 8 --json`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.streams, f.url = streamsOf(cmd), args[0]
			return runCompact(cmd.Context(), f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.branch, "branch", defaultBranch, "the branch to compact")
	fs.Int64Var(&f.targetRows, "target-rows", loch.DefaultCompactTargetRows, "live rows of a compacted fragment")
	f.targetBytes = loch.DefaultCompactTargetBytes
	fs.Var(&f.targetBytes, "target-bytes", "chunk bytes of a compacted fragment, e.g. 256MiB (see 'loch --help' for units)")
	fs.Float64Var(&f.maxDeleted, "max-deleted", loch.DefaultCompactDeleted, "rewrite a fragment with more than this fraction of deleted rows (negative: never)")
	fs.IntVar(&f.fanout, "fanout", 0, "compact in tiers: merge only runs of at least N small fragments of one size class (0: merge every run)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "report what would be compacted; write nothing")
	fs.StringVarP(&f.message, "message", "m", "", `commit message (default "compact")`)
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	f.prog.add(fs)
	return cmd
}

// compactJSON is the document printed by "loch compact --json".
type compactJSON struct {
	URL    string `json:"url"`
	Branch string `json:"branch"`
	*loch.CompactReport
}

// runCompact compacts the dataset at f.url as f says and prints the report
// on stdout (progress on stderr).
func runCompact(ctx context.Context, f *compactOptions) error {
	switch {
	case f.targetRows < 1:
		return usagef("--target-rows %d: want 1 or more", f.targetRows)
	case f.targetBytes < 1:
		return usagef("--target-bytes %s: want 1 byte or more", f.targetBytes.String())
	case f.maxDeleted == 0 || f.maxDeleted >= 1:
		return usagef("--max-deleted %g: want a fraction above 0 and below 1, or a negative value (never)", f.maxDeleted)
	case f.fanout == 1 || f.fanout < 0:
		return usagef("--fanout %d: want 0 (merge every run) or 2 or more", f.fanout)
	}
	d, err := openBranch(ctx, f.url, f.branch)
	if err != nil {
		return err
	}
	defer d.Close()
	bar := f.prog.start(f.stderr, "compact", -1, unitRows)
	rep, err := d.Compact(bar.report(ctx), loch.CompactOptions{
		TargetRows: f.targetRows, TargetBytes: int64(f.targetBytes), MaxDeleted: f.maxDeleted,
		Fanout: f.fanout, DryRun: f.dryRun, Message: f.message,
	})
	bar.done()
	if err != nil {
		return err
	}
	if f.asJSON {
		return printJSON(f.stdout, compactJSON{URL: d.URL(), Branch: f.branch, CompactReport: rep})
	}
	printCompact(f.stdout, rep, f.branch)
	return nil
}

// printCompact describes a compaction of branch.
func printCompact(w io.Writer, rep *loch.CompactReport, branch string) {
	switch {
	case rep.Groups == 0 && rep.Yielded > 0:
		fmt.Fprintf(w, "nothing compacted on %s: all %d %s changed while compaction ran (run it again); version %s\n",
			branch, rep.Yielded, plural(rep.Yielded, "group", "groups"), rep.Version)
		return
	case rep.Groups == 0:
		fmt.Fprintf(w, "nothing to compact on %s: %d %s, none small or with too many deleted rows; version %s\n",
			branch, rep.FragmentsBefore, plural(rep.FragmentsBefore, "fragment", "fragments"), rep.Version)
		return
	case rep.DryRun:
		fmt.Fprintf(w, "would compact %s at version %s\n", branch, rep.Version)
	default:
		fmt.Fprintf(w, "compacted %s: version %s\n", branch, rep.Version)
	}
	fmt.Fprintf(w, "  fragments  %d -> %d (%d rewritten into %d)\n", rep.FragmentsBefore, rep.FragmentsAfter, rep.Rewritten, rep.Groups)
	fmt.Fprintf(w, "  rows       %d copied, %d deleted %s dropped\n", rep.Rows, rep.Dropped, plural(rep.Dropped, "row", "rows"))
	if rep.DryRun {
		fmt.Fprintf(w, "  bytes      %s to rewrite\n", formatBytes(rep.BytesBefore))
		fmt.Fprintln(w, "dry run: nothing was written")
		return
	}
	fmt.Fprintf(w, "  bytes      %s -> %s\n", formatBytes(rep.BytesBefore), formatBytes(rep.BytesAfter))
	if rep.Yielded > 0 {
		fmt.Fprintf(w, "  yielded    %d %s changed by a concurrent commit (a later compaction takes them)\n", rep.Yielded, plural(rep.Yielded, "group", "groups"))
	}
}

// autoCompactEnv is the automatic compaction that $LOCH_AUTO_COMPACT asks
// of the commands that write rows (sql, ingest): nil when it is unset,
// empty, 0, false or off; tiered compaction with the defaults
// (loch.WithAutoCompact) when it is 1, true or on.
func autoCompactEnv() (*loch.CompactOptions, error) {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("LOCH_AUTO_COMPACT")))
	switch v {
	case "", "0", "false", "off":
		return nil, nil
	case "1", "true", "on":
		return &loch.CompactOptions{}, nil
	}
	return nil, fmt.Errorf("LOCH_AUTO_COMPACT=%q: want 1 (or true, on) to compact after each commit, 0 (or false, off, empty) not to", v)
}
