package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

func newTagCmd() *cobra.Command {
	var del, asJSON bool
	cmd := &cobra.Command{
		Use:   "tag URL [NAME [REF]]",
		Short: "List, create or delete tags",
		Long: `Tag with only URL lists the tags, sorted by name, with the version id each
points at.

With NAME it creates a tag at the version REF names (a branch, a tag, a
version id or a unique prefix of 6 or more of its digits; default main).
A tag never moves: pin a training run to it with --ref NAME. Reading a tag
is read-only. Names have 1 to 200 letters, digits and . _ - /.

--delete removes tag NAME; its version stays readable by id until 'loch gc'
removes what no branch or tag reaches.

With --json the listing is one JSON object with the fields url and tags, a
list of objects with the fields name, kind ("tag") and commit (the version
id).`,
		Example: `  loch tag ./pets
  loch tag ./pets v1.0
  loch tag ./pets before-fix 3f2a9c
  loch tag ./pets v1.0 --delete`,
		Args: rangeArgs(1, "URL", "NAME", "REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && del:
				return usagef("--delete needs a tag NAME")
			case len(args) > 1 && asJSON:
				return usagef("--json is for the listing, without NAME")
			case len(args) == 3 && del:
				return usagef("--delete takes NAME only, not REF")
			}
			ref := defaultBranch
			if len(args) == 3 {
				ref = args[2]
			}
			return manageRefs(cmd, args, refTags, del, asJSON, func(ctx context.Context, d *loch.Dataset, name string) (string, error) {
				return d.CreateTag(ctx, name, ref)
			})
		},
	}
	cmd.Flags().BoolVarP(&del, "delete", "d", false, "delete tag NAME")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the listing as one JSON object")
	return cmd
}
