package main

import (
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/schema"
)

func newTablesCmd() *cobra.Command {
	var (
		schemaFile, rename string
		drop, asJSON, gc   bool
		dryRun             bool
		grace, olderThan   time.Duration
		keepLast           int
	)
	cmd := &cobra.Command{
		Use:   "tables ROOT [NAME]",
		Short: "List, create, rename, drop or collect the tables of a catalog",
		Long: `A catalog is a root URL whose tables are loch datasets under it, one per
name. Tables with only ROOT lists them, sorted by name, with the time each
was created and its URL (any loch command takes that URL). Listing reads
the catalog's log only, whatever the number of tables.

With NAME and --schema FILE (JSON or YAML, as 'loch create' takes; "-"
reads standard input) it creates an empty table, and the catalog too if
ROOT holds none; it fails if a table of that name exists. --rename NEW
renames table NAME (its data does not move); --drop removes it from the
catalog. A dropped table's data stays, readable by whoever has it open,
until 'loch tables ROOT --gc' runs once the grace period (--grace, default
24h) has passed since the drop; --gc then also collects each table as
'loch gc' does (with its version retention, --keep-last and --older-than),
and deletes the catalog's log entries older than the grace period.

Names keep their case and compare case-insensitively; they have at most 255
bytes and no "/", "\", "..", control characters or leading or trailing
spaces, and do not start with "_loch".

With --json the listing is one JSON object with the fields url (the
catalog's) and tables (each with name, dir, url and created); --gc --json prints one object with the fields
dry_run, deleted and young (directories: dir, objects, bytes), tables
(each table's gc report) and log_entries (old catalog log entries
deleted).`,
		Example: `  loch tables s3://lake/tables
  loch tables ./lake frames --schema frames.yaml
  loch tables ./lake frames --rename clips
  loch tables ./lake clips --drop
  loch tables ./lake --gc --dry-run`,
		Args: rangeArgs(1, "ROOT", "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed := cmd.Flags().Changed
			actions := 0
			for _, f := range []string{"schema", "rename", "drop", "gc"} {
				if changed(f) {
					actions++
				}
			}
			switch {
			case actions > 1:
				return usagef("give one of --schema, --rename, --drop and --gc")
			case len(args) == 2 && actions == 0:
				return usagef("NAME needs --schema, --rename or --drop")
			case len(args) == 1 && actions == 1 && !gc:
				return usagef("--schema, --rename and --drop need a table NAME")
			case len(args) == 2 && gc:
				return usagef("--gc is for the whole catalog, without NAME")
			case (changed("grace") || dryRun || changed("keep-last") || changed("older-than")) && !gc:
				return usagef("--grace, --dry-run, --keep-last and --older-than go with --gc")
			case grace < 0:
				return usagef("--grace %s: want 0 or more", grace)
			case keepLast < 0 || olderThan < 0:
				return usagef("--keep-last %d --older-than %s: want 0 or more", keepLast, olderThan)
			case asJSON && actions == 1 && !gc:
				return usagef("--json is for the listing and --gc")
			}
			ctx := cmd.Context()
			w := cmd.OutOrStdout()
			var opts []catalog.Option
			if changed("schema") {
				opts = append(opts, catalog.WithCreate())
			}
			s, err := schemaIf(cmd, schemaFile)
			if err != nil {
				return err
			}
			if err := checkURL(args[0]); err != nil {
				return err
			}
			c, err := catalog.Open(ctx, args[0], opts...)
			if err != nil {
				return err
			}
			defer c.Close()
			switch {
			case changed("schema"):
				d, err := c.CreateTable(ctx, args[1], s)
				if err != nil {
					return err
				}
				fmt.Fprintf(w, "created table %s at %s\n", args[1], d.URL())
				return d.Close()
			case changed("rename"):
				if err := c.RenameTable(ctx, args[1], rename); err != nil {
					return err
				}
				fmt.Fprintf(w, "renamed table %s to %s\n", args[1], rename)
				return nil
			case drop:
				if err := c.DropTable(ctx, args[1]); err != nil {
					return err
				}
				fmt.Fprintf(w, "dropped table %s (its data stays until gc, after the grace period)\n", args[1])
				return nil
			case gc:
				rep, err := c.GC(ctx, loch.GCOptions{Grace: grace, DryRun: dryRun, KeepLast: keepLast, OlderThan: olderThan})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(w, rep)
				}
				return printCatalogGC(cmd, rep, grace)
			}
			tables, err := c.Tables(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				if tables == nil {
					tables = []catalog.Table{}
				}
				return printJSON(w, struct {
					URL    string          `json:"url"`
					Tables []catalog.Table `json:"tables"`
				}{c.URL(), tables})
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TABLE\tCREATED\tURL")
			for _, t := range tables {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Created.UTC().Format(time.DateTime), t.URL)
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&schemaFile, "schema", "", "create table NAME with this schema file, JSON or YAML (- for standard input)")
	f.StringVar(&rename, "rename", "", "rename table NAME to this name")
	f.BoolVar(&drop, "drop", false, "drop table NAME")
	f.BoolVar(&gc, "gc", false, "delete dropped tables' data older than the grace period, then collect every table")
	f.BoolVar(&dryRun, "dry-run", false, "with --gc: report what would be deleted; delete nothing")
	f.DurationVar(&grace, "grace", loch.DefaultGCGrace, "with --gc: keep what was dropped or written more recently than this")
	f.IntVar(&keepLast, "keep-last", 0, "with --gc: version retention in every table, as loch gc --keep-last")
	f.DurationVar(&olderThan, "older-than", 0, "with --gc: version retention in every table, as loch gc --older-than")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// schemaIf reads the schema file when --schema was given.
func schemaIf(cmd *cobra.Command, name string) (s schema.Schema, err error) {
	if !cmd.Flags().Changed("schema") {
		return s, nil
	}
	return readSchema(cmd.InOrStdin(), name)
}

// printCatalogGC describes a catalog's collection.
func printCatalogGC(cmd *cobra.Command, rep *catalog.GCReport, grace time.Duration) error {
	w := cmd.OutOrStdout()
	verb := "deleted"
	if rep.DryRun {
		verb = "would delete"
	}
	for _, d := range rep.Deleted {
		fmt.Fprintf(w, "%s directory %s: %s\n", verb, d.Dir, objects(loch.GCKind{Objects: d.Objects, Bytes: d.Bytes}))
	}
	for _, d := range rep.Young {
		fmt.Fprintf(w, "kept directory %s, named by no table but written in the last %s\n", d.Dir, grace)
	}
	for _, name := range slices.Sorted(maps.Keys(rep.Tables)) {
		fmt.Fprintf(w, "table %s: %s %s\n", name, verb, objects(rep.Tables[name].Deleted))
	}
	fmt.Fprintf(w, "catalog log: %s %d entries older than %s\n", verb, rep.LogEntries, grace)
	if rep.DryRun {
		fmt.Fprintln(w, "dry run: nothing was deleted")
	}
	return nil
}
