package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newRevertCmd() *cobra.Command {
	var to, branch, message string
	cmd := &cobra.Command{
		Use:   "revert URL --to REF [--branch BRANCH]",
		Short: "Make a new commit on a branch with the contents of an older version",
		Long: `Revert makes a new commit on --branch (default main) whose rows and schema
are those of the version --to names (a branch, a tag, a version id or a
unique prefix of 6 or more digits). History is kept: the new commit's parent
is the branch's head, so the revert itself can be reverted. It prints the
new version id.`,
		Example: `  loch revert ./pets --to v1.0
  loch revert ./pets --to 3f2a9c --branch dev --message "drop the bad batch"`,
		Args: exactArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usagef("missing --to REF: the version to revert to")
			}
			ctx := cmd.Context()
			d, err := openBranch(ctx, args[0], branch)
			if err != nil {
				return err
			}
			defer d.Close()
			id, err := d.Revert(ctx, to, message)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "reverted %s to %s: version %s, %d %s\n", branch, to, id, d.Len(), plural(d.Len(), "row", "rows"))
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the branch, tag or version whose contents the new commit has (required)")
	cmd.Flags().StringVar(&branch, "branch", defaultBranch, "the branch to revert")
	cmd.Flags().StringVarP(&message, "message", "m", "", `commit message (default "revert BRANCH to VERSION")`)
	return cmd
}
