package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// defaultBranch is the branch a dataset is created with, which commands
// read and write when not told otherwise.
const defaultBranch = "main"

func newBranchCmd() *cobra.Command {
	var (
		from        string
		del, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "branch URL [NAME]",
		Short: "List, create or delete branches",
		Long: `Branch with only URL lists the branches, sorted by name, with the version
id each points at; "*" marks main, the default branch.

With NAME it creates a branch at the version --from names (a branch, a tag,
a version id or a unique prefix of 6 or more of its digits; default main).
Nothing is copied: a branch is one entry in the dataset's log. Names have 1
to 200 letters, digits and . _ - /. Write to a branch with
'loch ingest ... --branch NAME' and bring it back with 'loch merge'.

--delete removes branch NAME (main cannot be deleted). Its versions stay
readable by id until 'loch gc' removes those that no branch or tag reaches.

With --json the listing is one JSON object with the fields url and
branches, a list of objects with the fields name, kind ("branch"), commit
(the version id) and, for main, default (true).`,
		Example: `  loch branch ./pets
  loch branch ./pets dev
  loch branch ./pets fix --from v1.0
  loch branch ./pets --delete dev`,
		Args: rangeArgs(1, "URL", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed := cmd.Flags().Changed
			switch {
			case len(args) == 1 && (del || changed("from")):
				return usagef("--delete and --from need a branch NAME")
			case len(args) == 2 && asJSON:
				return usagef("--json is for the listing, without NAME")
			case del && changed("from"):
				return usagef("give --delete or --from, not both")
			}
			return manageRefs(cmd, args, refBranches, del, asJSON, func(ctx context.Context, d *loch.Dataset, name string) (string, error) {
				return d.CreateBranch(ctx, name, from)
			})
		},
	}
	cmd.Flags().StringVar(&from, "from", defaultBranch, "the branch, tag or version the new branch starts at")
	cmd.Flags().BoolVarP(&del, "delete", "d", false, "delete branch NAME")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the listing as one JSON object")
	return cmd
}

// refKind describes branches or tags to the commands that manage them.
type refKind struct {
	kind   string // loch.RefBranch or loch.RefTag
	prefix string // the namespace that resolves only names of this kind
	header string // the title of the name column of the listing
	// listName is the field of the --json object that holds the list.
	listName string
}

var (
	refBranches = refKind{kind: loch.RefBranch, prefix: "heads/", header: "BRANCH", listName: "branches"}
	refTags     = refKind{kind: loch.RefTag, prefix: "tags/", header: "TAG", listName: "tags"}
)

// refJSON is an entry of "loch branch --json" and "loch tag --json".
type refJSON struct {
	loch.Ref
	Default bool `json:"default,omitempty"`
}

// manageRefs runs "loch branch" or "loch tag" on URL [NAME ...]: it lists
// the references of kind k, deletes NAME, or creates it with create.
func manageRefs(cmd *cobra.Command, args []string, k refKind, del, asJSON bool,
	create func(ctx context.Context, d *loch.Dataset, name string) (string, error)) error {
	ctx := cmd.Context()
	d, err := openDataset(ctx, args[0], nil)
	if err != nil {
		return err
	}
	defer d.Close()
	w := cmd.OutOrStdout()
	switch {
	case len(args) == 1:
		return listRefs(ctx, w, d, k, asJSON)
	case del:
		name := args[1]
		// The version it pointed at, so that a mistaken delete can be undone.
		was, _ := d.Resolve(ctx, k.prefix+name)
		if k.kind == loch.RefBranch {
			err = d.DeleteBranch(ctx, name)
		} else {
			err = d.DeleteTag(ctx, name)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "deleted %s %s (was %s)\n", k.kind, name, orDash(was))
		return nil
	}
	id, err := create(ctx, d, args[1])
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "created %s %s at version %s\n", k.kind, args[1], id)
	return nil
}

// listRefs prints the references of kind k as a table or a JSON object.
func listRefs(ctx context.Context, w io.Writer, d *loch.Dataset, k refKind, asJSON bool) error {
	refs, err := d.Refs(ctx)
	if err != nil {
		return err
	}
	list := []refJSON{}
	for _, r := range refs {
		if r.Kind == k.kind {
			list = append(list, refJSON{Ref: r, Default: r.Kind == loch.RefBranch && r.Name == defaultBranch})
		}
	}
	if asJSON {
		return printJSON(w, map[string]any{"url": d.URL(), k.listName: list})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	marks := k.kind == loch.RefBranch
	line := func(mark, name, id string) {
		if marks {
			name = mark + " " + name
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, id)
	}
	line(" ", k.header, "VERSION")
	for _, r := range list {
		mark := " "
		if r.Default {
			mark = "*"
		}
		line(mark, r.Name, r.Commit)
	}
	return tw.Flush()
}
