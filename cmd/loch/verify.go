package main

import (
	"fmt"

	"github.com/spf13/cobra"
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

func newVerifyCmd() *cobra.Command {
	var (
		refs   refFlags
		prog   progressFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "verify URL",
		Short: "Check every object of a version against its checksums",
		Long: `Verify reads every object that a version references (commit, manifest,
fragments, chunks) and checks its checksums and sizes. It prints
"ok: N objects checked" when all are sound; otherwise it prints one line per
problem, naming the broken object's key, and exits with status 1.

With --json it prints one JSON object instead, with the fields url,
version, ok (no problems), checked (objects checked) and problems (key,
error), and still exits with status 1 when there are problems.

The objects checked so far are counted on standard error while it works
when that is a terminal, or with --progress; never with --quiet.`,
		Example: `  loch verify ./pets
  loch verify s3://bucket/pets --ref dev
  loch verify ./pets --json | jq .problems`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := openDataset(cmd.Context(), args[0], &refs)
			if err != nil {
				return err
			}
			defer d.Close()
			bar := prog.start(cmd.ErrOrStderr(), "verify", -1, unitObjects)
			checked, problems, err := d.Verify(bar.report(cmd.Context()))
			bar.done()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				doc := verifyJSON{URL: d.URL(), Version: d.Version(), OK: len(problems) == 0, Checked: checked, Problems: []problemJSON{}}
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
			return fmt.Errorf("verify %s: %d %s in %d objects checked", d.URL(), len(problems), noun, checked)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	prog.add(cmd.Flags())
	refs.add(cmd, "verify")
	return cmd
}
