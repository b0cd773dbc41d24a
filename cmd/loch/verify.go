package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/storage"
)

// verifyJSON is the document printed by "loch verify --json".
type verifyJSON struct {
	URL      string        `json:"url"`
	Version  string        `json:"version"`
	OK       bool          `json:"ok"`
	Checked  int           `json:"checked"`
	Problems []problemJSON `json:"problems"`
}

type problemJSON struct {
	Key   string `json:"key"`
	Error string `json:"error"`
}

type verifyOptions struct {
	streams
	url       string
	refs      refFlags
	prog      progressFlags
	asJSON    bool
	repairLog bool
}

func newVerifyCmd() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify URL",
		Short: "Check every object of a version, or of a catalog, against its checksums",
		Long: `Verify reads every entry of the dataset's log and every object that a
version references (commit, manifest, fragments, chunks) and checks its
checksums and sizes, and that no log entry is missing. It prints
"ok: N objects checked" when all are sound; otherwise it prints one line per
problem, naming the broken object's key, and exits with status 1.

On a catalog's root it checks every entry of the catalog log, lists the
table directories that no entry names (the tables of a lost entry, or what
a failed creation or an old drop left, which 'loch tables ROOT --gc'
deletes after the grace period), and verifies every table as a dataset,
naming its objects under tables/<dir>/.

When log/_latest names an entry above the highest one there, the newest
entries were lost (deleted, or the hint damaged): readers and writers then
refuse the dataset or catalog rather than step back to the entry before.
Restore the missing entries if you can; --repair-log accepts their loss,
pointing log/_latest at the highest entry left (the changes of the lost
entries are gone; the next change takes the first lost number), then
verifies.

With --json it prints one JSON object instead, with the fields url,
version, ok (no problems), checked (objects checked) and problems (key,
error), and still exits with status 1 when there are problems.

The objects checked so far are counted on standard error while it works
when that is a terminal, or with --progress; never with --quiet.`,
		Example: `  loch verify ./pets
  loch verify s3://bucket/pets --ref dev
  loch verify ./pets --json | jq .problems
  loch verify ./lake
  loch verify ./pets --repair-log`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url = streamsOf(cmd), args[0]
			return runVerify(cmd.Context(), &o)
		},
	}
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&o.repairLog, "repair-log", false, "accept the loss of the newest log entries (see above), then verify")
	o.prog.add(cmd.Flags())
	o.refs.add(cmd, "verify")
	return cmd
}

// runVerify verifies a dataset, or a catalog when the URL holds none, and
// reports.
func runVerify(ctx context.Context, o *verifyOptions) error {
	if err := checkURL(o.url); err != nil {
		return err
	}
	if o.repairLog {
		if err := repairLog(ctx, o.stdout, o.url); err != nil {
			return err
		}
	}
	url, version := storage.Redact(o.url), ""
	bar := o.prog.start(o.stderr, "verify", -1, unitObjects)
	checked, problems, err := func() (int, []loch.Problem, error) {
		defer bar.done()
		d, err := openDataset(ctx, o.url, &o.refs)
		switch {
		case errors.Is(err, loch.ErrNoDataset):
			if o.refs != (refFlags{}) {
				if c, cerr := catalog.Open(ctx, o.url); cerr == nil || errors.Is(cerr, loch.ErrCorrupt) {
					if c != nil {
						c.Close()
					}
					return 0, nil, usagef("--ref and --as-of are for a dataset: %s is a catalog, verified whole", url)
				}
				return 0, nil, err
			}
			checked, problems, cerr := catalog.Verify(bar.report(ctx), o.url)
			if errors.Is(cerr, catalog.ErrNoCatalog) {
				return 0, nil, err // neither: say there is no dataset
			}
			return checked, problems, cerr
		case errors.Is(err, loch.ErrCorrupt):
			// A log too damaged to open: say what is wrong with it.
			checked, problems, lerr := loch.VerifyLog(bar.report(ctx), o.url)
			if lerr == nil && len(problems) == 0 {
				return 0, nil, err
			}
			return checked, problems, lerr
		case err != nil:
			return 0, nil, err
		}
		defer d.Close()
		url, version = d.URL(), d.Version()
		return d.Verify(bar.report(ctx))
	}()
	if err != nil {
		return err
	}
	w := o.stdout
	if o.asJSON {
		doc := verifyJSON{URL: url, Version: version, OK: len(problems) == 0, Checked: checked, Problems: []problemJSON{}}
		for _, p := range problems {
			doc.Problems = append(doc.Problems, problemJSON{Key: p.Key, Error: oneLine(p.Err.Error())})
		}
		if err := printJSON(w, doc); err != nil {
			return err
		}
	} else if len(problems) == 0 {
		fmt.Fprintf(w, "ok: %d objects checked\n", checked)
	} else {
		for _, p := range problems {
			fmt.Fprintln(w, oneLine(p.String()))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	noun := "problems"
	if len(problems) == 1 {
		noun = "problem"
	}
	return fmt.Errorf("verify %s: %d %s in %d objects checked", url, len(problems), noun, checked)
}

// repairLog accepts the loss of the newest entries of the log of the
// dataset or catalog at url and says what it did.
func repairLog(ctx context.Context, w io.Writer, url string) error {
	what, hintKey := "dataset", "log/_latest"
	hint, high, err := loch.RepairLog(ctx, url)
	if errors.Is(err, loch.ErrNoDataset) {
		what, hintKey = "catalog", "_catalog/log/_latest"
		var cerr error
		if hint, high, cerr = catalog.RepairLog(ctx, url); !errors.Is(cerr, catalog.ErrNoCatalog) {
			err = cerr
		}
	}
	switch {
	case err != nil:
		return err
	case hint <= high:
		fmt.Fprintf(w, "repair-log: no entry lost: the %s's log goes on from entry %d\n", what, high)
	default:
		fmt.Fprintf(w, "repair-log: entries %d to %d were lost; %s now names entry %d, which the %s goes on from\n", high+1, hint, hintKey, high, what)
	}
	return nil
}
