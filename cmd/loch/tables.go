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
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/schema"
)

// tablesOptions are the arguments and flags of loch tables.
type tablesOptions struct {
	streams
	root, name         string
	hasName            bool // NAME given
	schemaFile, rename string
	drop, asJSON, gc   bool
	gcf                gcFlags
	changed            func(flag string) bool
}

func newTablesCmd() *cobra.Command {
	var o tablesOptions
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
			o.streams, o.root, o.changed = streamsOf(cmd), args[0], cmd.Flags().Changed
			if len(args) == 2 {
				o.name, o.hasName = args[1], true
			}
			return runTables(cmd.Context(), &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.schemaFile, "schema", "", "create table NAME with this schema file, JSON or YAML (- for standard input)")
	f.StringVar(&o.rename, "rename", "", "rename table NAME to this name")
	f.BoolVar(&o.drop, "drop", false, "drop table NAME")
	f.BoolVar(&o.gc, "gc", false, "delete dropped tables' data older than the grace period, then collect every table")
	f.BoolVar(&o.gcf.dryRun, "dry-run", false, "with --gc: report what would be deleted; delete nothing")
	f.DurationVar(&o.gcf.grace, "grace", loch.DefaultGCGrace, "with --gc: keep what was dropped or written more recently than this")
	f.IntVar(&o.gcf.keepLast, "keep-last", 0, "with --gc: version retention in every table, as loch gc --keep-last")
	f.DurationVar(&o.gcf.olderThan, "older-than", 0, "with --gc: version retention in every table, as loch gc --older-than")
	f.BoolVar(&o.asJSON, "json", false, "print JSON")
	return cmd
}

// check refuses arguments and flags that do not go together.
func (o *tablesOptions) check() error {
	actions := 0
	for _, f := range []string{"schema", "rename", "drop", "gc"} {
		if o.changed(f) {
			actions++
		}
	}
	withName := o.hasName
	switch {
	case actions > 1:
		return usagef("give one of --schema, --rename, --drop and --gc")
	case withName && actions == 0:
		return usagef("NAME needs --schema, --rename or --drop")
	case !withName && actions == 1 && !o.gc:
		return usagef("--schema, --rename and --drop need a table NAME")
	case withName && o.gc:
		return usagef("--gc is for the whole catalog, without NAME")
	case (o.changed("grace") || o.gcf.dryRun || o.changed("keep-last") || o.changed("older-than")) && !o.gc:
		return usagef("--grace, --dry-run, --keep-last and --older-than go with --gc")
	}
	if _, err := o.gcf.options(); err != nil {
		return err
	}
	if o.asJSON && actions == 1 && !o.gc {
		return usagef("--json is for the listing and --gc")
	}
	return nil
}

// runTables lists the tables of a catalog, or creates, renames or drops
// one, or collects the catalog.
func runTables(ctx context.Context, o *tablesOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	var opts []catalog.Option
	var s schema.Schema
	if o.changed("schema") {
		opts = append(opts, catalog.WithCreate())
		var err error
		if s, err = readSchema(o.stdin, o.schemaFile); err != nil {
			return err
		}
	}
	if err := checkURL(o.root); err != nil {
		return err
	}
	c, err := catalog.Open(ctx, o.root, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	w := o.stdout
	switch {
	case o.changed("schema"):
		d, err := c.CreateTable(ctx, o.name, s)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "created table %s at %s\n", o.name, d.URL())
		return d.Close()
	case o.changed("rename"):
		if err := c.RenameTable(ctx, o.name, o.rename); err != nil {
			return err
		}
		fmt.Fprintf(w, "renamed table %s to %s\n", o.name, o.rename)
		return nil
	case o.drop:
		if err := c.DropTable(ctx, o.name); err != nil {
			return err
		}
		fmt.Fprintf(w, "dropped table %s (its data stays until gc, after the grace period)\n", o.name)
		return nil
	case o.gc:
		return collectCatalog(ctx, w, c, o)
	}
	return listTables(ctx, w, c, o.asJSON)
}

// collectCatalog runs loch tables --gc.
func collectCatalog(ctx context.Context, w io.Writer, c *catalog.Catalog, o *tablesOptions) error {
	opts, err := o.gcf.options()
	if err != nil {
		return err
	}
	rep, err := c.GC(ctx, opts)
	if err != nil {
		return err
	}
	if o.asJSON {
		return printJSON(w, rep)
	}
	return printCatalogGC(w, rep, o.gcf.grace)
}

// listTables prints the tables of c.
func listTables(ctx context.Context, w io.Writer, c *catalog.Catalog, asJSON bool) error {
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
}

// printCatalogGC describes a catalog's collection.
func printCatalogGC(w io.Writer, rep *catalog.GCReport, grace time.Duration) error {
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
