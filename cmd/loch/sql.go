package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/sqlcat"
)

// sqlOptions are the arguments and flags of loch sql.
type sqlOptions struct {
	streams
	root, stmt                    string
	hasStmt                       bool // STATEMENT given (else stdin)
	branch, message, format, base string
	table, outFile                string
	pins                          []string
	limit                         int
	asJSON, formatSet             bool
	seed                          *uint64
}

// sqlLong is the help text of loch sql.
const sqlLong = `Sql runs one statement over the catalog at ROOT (docs/sql.md). Every table
is a view by its name, so a SELECT can join tables; DuckDB runs every
expression and query.

CREATE TABLE takes DuckDB's types and loch's: IMAGE, IMAGE('jpeg'),
VIDEO, AUDIO, MASK, BBOX('xywh'), CLASS_LABEL('cat', 'dog'),
EMBEDDING(768), TENSOR(float32, [3, NULL]), POINT_CLOUD(3), LINK, with
column options in WITH (chunk_bytes = '4MiB', chunk_compression = 'zstd',
...). A CREATE TABLE on a ROOT with no catalog creates it.

INSERT INTO t [(columns)] VALUES ... | SELECT ..., UPDATE t SET c = expr
[WHERE ...], DELETE FROM t [WHERE ...] and MERGE INTO t USING src ON cond
WHEN MATCHED THEN UPDATE SET ... WHEN NOT MATCHED THEN INSERT ... (an
upsert) are one commit each on --branch (default main), or nothing and an
error naming the row and column that failed. UPDATE, DELETE and MERGE
address rows by their stable row ids; an updated row keeps its place. A SELECT
can read read_parquet, read_csv and read_json, and loch_file(path) reads a
file's bytes (an image into an IMAGE column); relative paths are taken from
--base (default the current directory).

Only loch writes: COPY (query) TO 'file' [(FORMAT csv|json|parquet)]
writes a query's result to a file (relative to --base); DuckDB's other
writes and loads (its COPY of a table or FROM a file, ATTACH, INSTALL,
LOAD, CREATE VIEW, SET, EXPORT) are refused.

OPTIMIZE t [WITH (target_rows = N, target_bytes = '256MiB', max_deleted =
0.2, fanout = N, dry_run = true)] compacts table t as one commit (as 'loch
compact' does a dataset): small fragments and fragments with many deleted
rows are rewritten, every row keeping its row id, values and position. It
prints the fragments before and after, the rows copied and the deleted
rows dropped (with --json: the object of a write with "compaction", the
report of 'loch compact --json').

With LOCH_AUTO_COMPACT=1 in the environment, every write ends with an
automatic (tiered) compaction of its table once 8 small fragments pile up
(loch ingest does the same with its dataset).

CALL loch_merge('t', 'source' [, 'into']) merges a branch, tag or version
of table t into branch 'into' (default --branch, else main) as one merge
commit, as 'loch merge' does; rows changed on both sides are refused and
nothing is committed (resolve them with 'loch merge --strategy').

The commit message is -m, else a first line '-- loch: message "..."'
in the statement, else the statement's text.

A query prints its result as --format table, json (one object per line),
csv or parquet (with --out FILE), at most --limit rows (with --json: one object, statement "QUERY"
and rows, a list of objects). --format selection prints a SELECT over one
table as a selection of that table's version (as 'loch query --format
selection' does), with the fields table and url added. --seed seeds
random() in a query. A SELECT that joins tables selects the rows of --table: its
result carries that table's row id (SELECT f._rowid, ... FROM frames f
JOIN labels l ...), each row once; the other tables filter and order them,
and the columns of theirs it names (and expressions) come with the
selection as its joined columns, one value per row ("joined"), which the
loader delivers beside the table's columns. --pin TABLE=VERSION reads a
table at a version (a selection's, to see its result again). A write
prints what it did and the table's new
version (with --json as one object: statement, table, rows, version).

Without STATEMENT, sql reads statements ending in ';' from standard input
(an interactive shell on a terminal: arrow keys edit the line and recall
earlier lines, kept in the user's cache directory, loch/sql_history;
Ctrl-D ends it).`

func newSQLCmd() *cobra.Command {
	var (
		o    sqlOptions
		seed uint64
	)
	cmd := &cobra.Command{
		Use:   "sql ROOT [STATEMENT]",
		Short: "Run SQL over a catalog: CREATE/ALTER/DROP TABLE, INSERT, UPDATE, DELETE, MERGE, OPTIMIZE, CALL loch_merge, SELECT",
		Long:  sqlLong,
		Example: `  loch sql ./lake "CREATE TABLE frames (id BIGINT, caption TEXT, image IMAGE('jpeg'), label CLASS_LABEL('cat', 'dog'))"
  loch sql ./lake "INSERT INTO frames SELECT id, caption, loch_file(path), label FROM read_parquet('frames.parquet')"
  loch sql ./lake "UPDATE frames SET label = 'dog' WHERE id = 17" -m "relabel 17"
  loch sql ./lake "SELECT label, count(*) FROM frames GROUP BY label" --format csv
  loch sql ./lake --branch relabel < fixes.sql`,
		Args: rangeArgs(1, "ROOT", "STATEMENT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.root = streamsOf(cmd), args[0]
			if len(args) == 2 {
				o.stmt, o.hasStmt = args[1], true
			}
			o.formatSet, o.seed = cmd.Flags().Changed("format"), seedIf(cmd, "seed", seed)
			return runSQL(cmd.Context(), &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.branch, "branch", "", "branch that writes go to and reads prefer (default main)")
	f.StringVarP(&o.message, "message", "m", "", "commit message of the writes")
	f.StringVar(&o.format, "format", query.FormatTable, "format of a query's result: table, json or csv")
	f.IntVar(&o.limit, "limit", 0, "print at most N rows of a query's result (0: all)")
	f.StringVar(&o.base, "base", "", "directory loch_file resolves relative paths against (default the current directory)")
	f.BoolVar(&o.asJSON, "json", false, "print what a write did as one JSON object")
	f.Uint64Var(&seed, "seed", 0, "seed of random() in a query")
	f.StringVar(&o.table, "table", "", "the table whose rows a --format selection query of several tables selects")
	f.StringVarP(&o.outFile, "out", "o", "", "write a query's result to this file instead of standard output")
	f.StringArrayVar(&o.pins, "pin", nil, "read table TABLE at version VERSION (TABLE=VERSION; repeatable)")
	return cmd
}

// check refuses flags that do not go together.
func (o *sqlOptions) check() error {
	switch o.format {
	case query.FormatTable, query.FormatJSON, query.FormatCSV:
	case query.FormatParquet:
		if o.outFile == "" {
			return usagef("--format parquet needs --out FILE")
		}
	case formatSelection:
		if !o.hasStmt || o.limit != 0 {
			return usagef("--format selection needs one STATEMENT (a SELECT) and no --limit")
		}
	default:
		return usagef("--format %q: want table, json, csv, parquet or selection", o.format)
	}
	if o.table != "" && o.format != formatSelection {
		return usagef("--table goes with --format selection")
	}
	if o.limit < 0 {
		return usagef("--limit %d: want at least 0", o.limit)
	}
	if o.asJSON && o.formatSet {
		return usagef("--json prints one object (a query's rows in it): give no --format")
	}
	return checkURL(o.root)
}

// runSQL runs loch sql: one statement, or those of standard input.
func runSQL(ctx context.Context, o *sqlOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.base == "" {
		o.base, _ = os.Getwd()
	}
	var opts []catalog.Option
	if o.hasStmt && sqlcat.Kind(o.stmt) == "CREATE TABLE" {
		opts = append(opts, catalog.WithCreate())
	}
	cat, err := catalog.Open(ctx, o.root, opts...)
	if err != nil {
		return err
	}
	defer cat.Close()
	s, err := o.session(cat)
	if err != nil {
		return err
	}
	// the shell's statements share one query engine
	s.KeepEngine = !o.hasStmt
	defer s.Close()
	w, closeOut, err := outWriter(o.stdout, o.outFile)
	if err != nil {
		return err
	}
	defer closeOut()
	out := sqlcat.Output{W: w, Format: o.format, Limit: o.limit}
	if o.format == formatSelection {
		sel, table, err := s.Select(ctx, o.stmt, o.seed, o.table)
		if err != nil {
			return err
		}
		return printTableSelection(ctx, out.W, cat, sel, table)
	}
	if o.hasStmt {
		return runStatement(ctx, s, o.stmt, out, o.asJSON)
	}
	return sqlShell(ctx, s, o.stdin, out, o.stderr, o.asJSON)
}

// session is the SQL session over cat that the flags describe.
func (o *sqlOptions) session(cat *catalog.Catalog) (*sqlcat.Session, error) {
	s := sqlcat.NewSession(cat)
	s.Branch, s.Message, s.FileBase, s.Seed = o.branch, o.message, o.base, o.seed
	var err error
	if s.AutoCompact, err = autoCompactEnv(); err != nil {
		return nil, err
	}
	for _, p := range o.pins {
		t, v, ok := strings.Cut(p, "=")
		if !ok || t == "" || v == "" {
			return nil, usagef("--pin %q: want TABLE=VERSION", p)
		}
		if s.Pins == nil {
			s.Pins = map[string]string{}
		}
		s.Pins[t] = v
	}
	return s, nil
}

func runStatement(ctx context.Context, s *sqlcat.Session, stmt string, out sqlcat.Output, asJSON bool) error {
	if asJSON && sqlcat.IsQuery(stmt) {
		return runQueryJSON(ctx, s, stmt, out)
	}
	r, err := s.Run(ctx, stmt, out)
	if err != nil {
		return err
	}
	if r.Statement == "QUERY" {
		return nil
	}
	if asJSON {
		return printJSON(out.W, r)
	}
	_, err = fmt.Fprintln(out.W, r)
	return err
}

// sqlShell runs the statements read from in, each when its ';' comes. On
// a terminal it keeps going after an error, and reads lines with a line
// editor whose history outlives the session (sqlHistoryPath) when stderr,
// where it prompts and echoes, is a terminal too; otherwise it stops at
// the first error.
func sqlShell(ctx context.Context, s *sqlcat.Session, in io.Reader, out sqlcat.Output, stderr io.Writer, asJSON bool) error {
	interactive := stdinTerminal(in)
	var lines lineReader = newScanLines(in)
	if interactive && isTerminal(stderr) { // the editor echoes on stderr
		lines = newLineEditor(in.(*os.File), stderr, sqlHistoryPath())
	}
	var buf strings.Builder
	for {
		prompt := "loch> "
		if strings.TrimSpace(buf.String()) != "" {
			prompt = "  ... "
		}
		line, err := lines.ReadLine(prompt)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read statements: %w", err)
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		stmts, rest, err := sqlcat.Split(buf.String())
		if err != nil { // an open string or comment: read on
			continue
		}
		buf.Reset()
		buf.WriteString(rest)
		for _, st := range stmts {
			if err := runStatement(ctx, s, st, out, asJSON); err != nil {
				if !interactive {
					return err
				}
				fmt.Fprintf(stderr, "error: %v\n", err)
			}
		}
	}
	if rest := strings.TrimSpace(buf.String()); rest != "" {
		if _, _, err := sqlcat.Split(rest); err != nil {
			return err
		}
		return errors.New("the last statement has no ';': not run")
	}
	return nil
}

// stdinTerminal reports whether r is a terminal.
func stdinTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// tableSelectionJSON is a selection of a catalog table, as loch sql
// --format selection prints it.
type tableSelectionJSON struct {
	selectionJSON
	Table string `json:"table"`
	URL   string `json:"url"`
}

// runQueryJSON prints a query's result as one JSON object:
// {"statement": "QUERY", "rows": N, "result": [{...}, ...]}.
func runQueryJSON(ctx context.Context, s *sqlcat.Session, stmt string, out sqlcat.Output) error {
	var buf bytes.Buffer
	r, err := s.Run(ctx, stmt, sqlcat.Output{W: &buf, Format: query.FormatJSON, Limit: out.Limit})
	if err != nil {
		return err
	}
	result := []json.RawMessage{}
	for _, line := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			result = append(result, json.RawMessage(line))
		}
	}
	return printJSON(out.W, struct {
		Statement string            `json:"statement"`
		Rows      int64             `json:"rows"`
		Result    []json.RawMessage `json:"result"`
	}{r.Statement, int64(len(result)), result})
}
