package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newVerifyCmd() *cobra.Command {
	var refs refFlags
	cmd := &cobra.Command{
		Use:   "verify URL",
		Short: "Check every object of a version against its checksums",
		Long: `Verify reads every object that a version references (commit, manifest,
fragments, chunks) and checks its checksums and sizes. It prints
"ok: N objects checked" when all are sound; otherwise it prints one line per
problem, naming the broken object's key, and exits with status 1.`,
		Example: `  loch verify ./pets
  loch verify s3://bucket/pets --ref dev`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := openDataset(cmd.Context(), args[0], &refs)
			if err != nil {
				return err
			}
			defer d.Close()
			checked, problems, err := d.Verify(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if len(problems) == 0 {
				fmt.Fprintf(w, "ok: %d objects checked\n", checked)
				return nil
			}
			for _, p := range problems {
				fmt.Fprintln(w, oneLine(p.String()))
			}
			noun := "problems"
			if len(problems) == 1 {
				noun = "problem"
			}
			return fmt.Errorf("verify %s: %d %s in %d objects checked", d.URL(), len(problems), noun, checked)
		},
	}
	refs.add(cmd, "verify")
	return cmd
}
