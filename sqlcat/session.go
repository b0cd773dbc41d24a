package sqlcat

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/query"
)

// Session runs statements over one catalog (docs/sql.md §5). Its fields
// may be set between statements; SET loch_branch and SET loch_message set
// them too. A Session is not safe for concurrent use.
type Session struct {
	cat *catalog.Catalog
	// Branch is the branch writes go to and reads prefer ("": main).
	// A table without it is read at main and cannot be written.
	Branch string
	// Message is the commit message of writes; "" means the statement's
	// text, cut to 200 characters. A leading comment
	// -- loch: message "..." overrides it for one statement.
	Message string
	// FileBase is the directory loch_file resolves relative paths against.
	FileBase string
	// Threads is DuckDB's number of threads (0: GOMAXPROCS).
	Threads int
	// Pins maps table names (compared without case) to versions (commit
	// ids) that reads see instead of the head: a selection's table at the
	// version it ran on (loch sql --pin).
	Pins map[string]string
	// Seed seeds random() in reads (nil: seed 0), as a selection's seed
	// does (Select).
	Seed *uint64
	// MemoryLimit is DuckDB's memory_limit of each statement's engine
	// (query.Options.MemoryLimit; "": DuckDB's default).
	MemoryLimit string
	// Sandbox confines statements to the catalog's tables
	// (query.Options.Sandbox): no files, other stores or DuckDB
	// configuration.
	Sandbox bool
	// SampleData gives reads the bytes of image, video, audio and
	// large-tensor samples in their STRUCT's data field
	// (query.Options.SampleData; loch serve --pg sends them as bytea).
	SampleData bool
	// AutoCompact, when not nil, makes every write end with a tiered
	// compaction of its table (loch.WithAutoCompact) when the table holds
	// enough small fragments; a failed compaction does not fail the
	// write, and the next write tries again.
	AutoCompact *loch.CompactOptions
	// KeepEngine keeps one query engine (one in-memory DuckDB) across
	// statements, with the tables they named open, instead of starting
	// one per statement: a table is refreshed or re-opened only when a
	// commit (of this session or any other writer) moved the version the
	// session reads, so every statement still sees the newest commits.
	// MemoryLimit applies to the kept engine as to each statement's; a
	// statement run while another's Rows are still open gets an engine of
	// its own. Close releases the kept engine.
	KeepEngine bool

	kept *kept
	tx   *tx // the open transaction (Begin), or nil
}

// NewSession starts a session over cat, on branch main.
func NewSession(cat *catalog.Catalog) *Session { return &Session{cat: cat} }

// Output is where Run writes a query's result: w in format (query.FormatTable,
// FormatJSON, FormatCSV), at most Limit rows when Limit > 0.
type Output struct {
	W      io.Writer
	Format string
	Limit  int
	// Read, when set, reads the result instead of W: Run hands it
	// DuckDB's connection and the statement's rewritten SQL
	// (query.Engine.Raw), to read it as Arrow (query.ArrowRecords).
	Read func(conn driver.Conn, sql string) error
}

// Result says what a statement did.
type Result struct {
	// Statement is the statement's kind: CREATE TABLE, ALTER TABLE, DROP
	// TABLE, INSERT, UPDATE, DELETE, MERGE, OPTIMIZE, SET, COPY, or QUERY
	// for a read.
	Statement string `json:"statement"`
	Table     string `json:"table,omitempty"`
	// File is the file a COPY wrote, as the statement named it.
	File string `json:"file,omitempty"`
	// Rows is the rows inserted, updated, deleted (merged by a CALL
	// loch_merge), copied by an OPTIMIZE
	// or (for a query) written to the output.
	Rows int64 `json:"rows"`
	// Version is the table's version after a write ("" for a query).
	Version string `json:"version,omitempty"`
	// Compaction is what an OPTIMIZE did (nil for other statements); its
	// Rows are copied into Rows.
	Compaction *loch.CompactReport `json:"compaction,omitempty"`
	// Updated, Deleted and Inserted split a MERGE's Rows.
	Updated  int64 `json:"updated,omitempty"`
	Deleted  int64 `json:"deleted,omitempty"`
	Inserted int64 `json:"inserted,omitempty"`
	// Source and Into are the ref a CALL loch_merge merged and the branch
	// it merged into; UpToDate is true when there was nothing to merge
	// (no commit). Its Inserted, Deleted and Updated are the rows the
	// merge brought in, deleted and modified.
	Source   string `json:"source,omitempty"`
	Into     string `json:"into,omitempty"`
	UpToDate bool   `json:"up_to_date,omitempty"`
}

// String is the line the CLI prints for a write: INSERT 1000 (version 3f2a...).
func (r Result) String() string {
	if r.Compaction != nil {
		return compactionString(r)
	}
	if r.Statement == KindBranchMerge {
		return branchMergeString(r)
	}
	s := r.Statement
	switch r.Statement {
	case "INSERT", "UPDATE", "DELETE":
		s += " " + strconv.FormatInt(r.Rows, 10)
	case "MERGE":
		s += fmt.Sprintf(" %d (%d updated, %d deleted, %d inserted)", r.Rows, r.Updated, r.Deleted, r.Inserted)
	case "COPY":
		s += fmt.Sprintf(" %d rows to %s", r.Rows, r.File)
	}
	if r.Table != "" {
		s += " " + r.Table
	}
	if r.Version != "" {
		s += " (version " + r.Version + ")"
	}
	return s
}

// Statement kinds that Kind returns besides the Result.Statement of
// loch's writes.
const (
	// KindQuery is every statement that is not loch's: Run gives it to
	// DuckDB (package query), which runs it only when DuckDB's own type
	// of it (a prepared statement's) is a read, and refuses it otherwise.
	KindQuery = "QUERY"
	// KindDDL is a CREATE, ALTER or DROP of anything but a TABLE, which
	// Run refuses.
	KindDDL = "DDL"
)

// Kind is the kind of statement stmt, by its first words after comments:
// "CREATE TABLE", "ALTER TABLE", "DROP TABLE", "INSERT", "UPDATE",
// "DELETE", "MERGE", "OPTIMIZE", "COPY" or "SET" (SET and RESET of a
// loch_ setting), which loch runs itself; KindDDL; "" for an empty
// statement; else KindQuery. loch's writes name tables that DuckDB sees
// only as views, so DuckDB cannot bind, and so cannot classify, them:
// Kind is the one place loch reads a statement's kind itself.
func Kind(stmt string) string {
	toks, err := lex(stmt)
	if err != nil {
		return KindQuery // DuckDB reports the error
	}
	first, second := toks[0], toks[min(1, len(toks)-1)]
	if first.kind != tokIdent {
		if first.kind == tokEOF {
			return ""
		}
		return KindQuery
	}
	switch first.text {
	case "create", "alter", "drop":
		if second.is("table") {
			return strings.ToUpper(first.text) + " TABLE"
		}
		return KindDDL
	case "insert", "update", "delete", "merge", "optimize", "copy":
		return strings.ToUpper(first.text)
	case "set", "reset":
		if strings.HasPrefix(second.text, "loch_") {
			return "SET"
		}
	case "call":
		if second.is("loch_merge") {
			return KindBranchMerge
		}
	}
	return KindQuery
}

// IsQuery reports whether stmt is a read that Run writes to its Output:
// Kind(stmt) is KindQuery.
func IsQuery(stmt string) bool { return Kind(stmt) == KindQuery }

// Run runs one statement. A write is one commit on the session's branch,
// or nothing and an error; a read writes its result to out.
func (s *Session) Run(ctx context.Context, stmt string, out Output) (Result, error) {
	// text is what runs; stmt, as given, makes the commit message.
	text := PostgresOperators(stmt)
	kind := Kind(text)
	switch kind {
	case "":
		return Result{}, fmt.Errorf("sql: empty statement: %w", loch.ErrInvalidArgument)
	case KindQuery:
		n, err := s.query(ctx, text, out)
		return Result{Statement: "QUERY", Rows: n}, err
	}
	p, err := newParser(text)
	if err != nil {
		return Result{}, err
	}
	if s.tx != nil && kind != "SET" && kind != "COPY" {
		target, err := Target(text)
		if err != nil {
			return Result{}, err
		}
		if err := s.txCheck(ctx, kind, target); err != nil {
			return Result{}, err
		}
	}
	r, err := s.run(ctx, p, kind, text, stmt)
	if err == nil && s.tx != nil && s.tx.table != "" && strings.EqualFold(r.Table, s.tx.table) {
		s.tx.writes++
	}
	return r, err
}

// run runs the loch statement of kind that p reads (text as it runs,
// stmt as given).
func (s *Session) run(ctx context.Context, p *parser, kind, text, stmt string) (Result, error) {
	switch kind {
	case KindDDL:
		return Result{}, fmt.Errorf("sql: %s %s is not supported: loch's DDL is CREATE, ALTER and DROP TABLE: %w",
			strings.ToUpper(p.toks[0].text), strings.ToUpper(p.toks[1].text), loch.ErrInvalidArgument)
	case "CREATE TABLE":
		return parsed(p.parseCreate, func(st *createStmt) (Result, error) { return s.create(ctx, st, stmt) })
	case "ALTER TABLE":
		return parsed(p.parseAlter, func(st *alterStmt) (Result, error) { return s.alter(ctx, st, stmt) })
	case "DROP TABLE":
		return parsed(p.parseDrop, func(st *dropStmt) (Result, error) { return s.drop(ctx, st) })
	case "INSERT", "UPDATE", "MERGE":
		return s.retried(ctx, kind, text, stmt)
	case "DELETE":
		return s.delete(ctx, p, stmt)
	case "OPTIMIZE":
		return parsed(p.parseOptimize, func(st *optimizeStmt) (Result, error) { return s.optimize(ctx, st, stmt) })
	case "COPY":
		return s.copyOut(ctx, p)
	case KindBranchMerge:
		return s.mergeBranch(ctx, stmt)
	default: // SET
		if s.tx != nil && s.tx.table != "" {
			return Result{}, fmt.Errorf("sql: SET inside a transaction that writes %s: COMMIT or ROLLBACK first: %w", s.tx.table, ErrTxTable)
		}
		return s.set(p)
	}
}

// retried runs an INSERT, UPDATE or MERGE, again when another commit
// moved its table after it checked the table's keys (retryMoved).
func (s *Session) retried(ctx context.Context, kind, text, stmt string) (Result, error) {
	return retryMoved(func() (Result, error) {
		p, err := newParser(text)
		if err != nil {
			return Result{}, err
		}
		switch kind {
		case "INSERT":
			return s.insert(ctx, p, stmt)
		case "UPDATE":
			return s.update(ctx, p, stmt)
		}
		return s.merge(ctx, p, stmt)
	})
}

// parsed runs do on the statement parse reads, or returns parse's error.
func parsed[T any](parse func() (T, error), do func(T) (Result, error)) (Result, error) {
	st, err := parse()
	if err != nil {
		return Result{}, err
	}
	return do(st)
}

// set runs SET loch_branch = 'B', SET loch_message = '...' and their RESET.
func (s *Session) set(p *parser) (Result, error) {
	reset := p.next().text == "reset"
	name := p.next().text
	var field *string
	switch name {
	case "loch_branch":
		field = &s.Branch
	case "loch_message":
		field = &s.Message
	default:
		return Result{}, fmt.Errorf("sql: unknown setting %s (known: loch_branch, loch_message): %w", name, loch.ErrInvalidArgument)
	}
	if reset {
		*field = ""
		return Result{Statement: "RESET"}, p.end()
	}
	if !p.accept("=") && !p.accept("to") {
		return Result{}, p.errorf("SET %s: want =", name)
	}
	v := p.next()
	if v.kind != tokString {
		p.i--
		return Result{}, p.errorf("SET %s: want a 'string'", name)
	}
	*field = v.text
	return Result{Statement: "SET"}, p.end()
}

// messageRE is the comment that names one statement's commit message:
// -- loch: message "..." on a line of its own, or /* loch: message "..." */.
var messageRE = regexp.MustCompile(`^(?:--\s*loch:\s*message\s+("(?:[^"\\]|\\.)*")\s*$|/\*\s*loch:\s*message\s+("(?:[^"\\]|\\.)*")\s*\*/)`)

// message is the commit message of stmt: its leading
// -- loch: message "..." comment, else the session's, else its text.
func (s *Session) message(stmt string) (string, error) {
	for _, line := range strings.Split(stmt, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "--") && !strings.HasPrefix(line, "/*") {
			break
		}
		if m := messageRE.FindStringSubmatch(line); m != nil {
			q := m[1] + m[2]
			msg, err := strconv.Unquote(q)
			if err != nil {
				return "", fmt.Errorf("sql: commit message %s: %w", q, loch.ErrInvalidArgument)
			}
			return msg, nil
		}
	}
	if s.Message != "" {
		return s.Message, nil
	}
	return cut(strings.Join(strings.Fields(stmt), " "), 200), nil
}

// engine starts a query engine for the SQL text q with every table that
// q names visible by its name (a table whose name is not among q's
// identifiers cannot be read, so it is not opened), at the session's
// branch where the table has it (else main); target, when not nil, is
// attached as table name instead (the handle a write stages on). The
// returned function closes the engine and the tables it opened.
func (s *Session) engine(ctx context.Context, q, name string, target *loch.Dataset) (*query.Engine, func(), error) {
	tables, err := s.cat.Tables(ctx)
	if err != nil {
		return nil, nil, err
	}
	named := map[string]bool{}
	if toks, err := lex(q); err == nil {
		for _, t := range toks {
			// identifiers, and strings for loch_table('name', ...)
			if t.kind == tokIdent || t.kind == tokQuoted || t.kind == tokString {
				named[strings.ToLower(t.text)] = true
			}
		}
	} else {
		named = nil // read every table
	}
	if s.KeepEngine && (s.kept == nil || !s.kept.busy) {
		return s.keptEngine(ctx, tables, named, name, target)
	}
	e, err := query.New(ctx, nil, s.engineOptions())
	if err != nil {
		return nil, nil, err
	}
	var opened []*loch.Dataset
	done := func() {
		e.Close()
		for _, d := range opened {
			d.Close()
		}
	}
	for _, t := range tables {
		if named != nil && !named[strings.ToLower(t.Name)] {
			continue
		}
		d := target
		if target == nil || !strings.EqualFold(t.Name, name) {
			d, err = s.openRead(ctx, t.Name)
			if err != nil {
				done()
				return nil, nil, err
			}
			opened = append(opened, d)
		}
		if err := e.Attach(ctx, t.Name, d); err != nil {
			done()
			return nil, nil, err
		}
	}
	return e, done, nil
}

// engineOptions are the options of the session's query engines.
func (s *Session) engineOptions() query.Options {
	return query.Options{Threads: s.Threads, FileBase: s.FileBase, Seed: s.Seed, Sandbox: s.Sandbox, MemoryLimit: s.MemoryLimit, SampleData: s.SampleData}
}

// readBranch is the branch the session reads and writes table name on
// ("" for main).
func (s *Session) readBranch(name string) string {
	if s.tx != nil && s.tx.table != "" && strings.EqualFold(name, s.tx.table) {
		return s.tx.branch
	}
	return s.Branch
}

// openRead opens a table at its pinned version, else at the session's
// branch, or main when the table has no such branch; opts are added.
func (s *Session) openRead(ctx context.Context, name string, opts ...loch.Option) (*loch.Dataset, error) {
	want, pinned := s.readWant(name)
	if pinned {
		return s.cat.OpenTable(ctx, name, append(opts, loch.WithVersion(want))...)
	}
	if want != "" {
		d, err := s.cat.OpenTable(ctx, name, append(slices.Clip(opts), loch.WithRef(want))...)
		if err == nil || !errors.Is(err, loch.ErrNotFound) {
			return d, err
		}
	}
	return s.cat.OpenTable(ctx, name, opts...)
}

// openWrite opens a table on the session's branch for a write.
func (s *Session) openWrite(ctx context.Context, name string) (*loch.Dataset, error) {
	var opts []loch.Option
	if b := s.readBranch(name); b != "" {
		opts = append(opts, loch.WithRef(b))
	}
	if s.AutoCompact != nil {
		opts = append(opts, loch.WithAutoCompact(*s.AutoCompact))
	}
	d, err := s.cat.OpenTable(ctx, name, opts...)
	if err != nil {
		if s.Branch != "" && errors.Is(err, loch.ErrNotFound) {
			if _, terr := s.cat.Table(ctx, name); terr == nil {
				return nil, fmt.Errorf("table %s has no branch %q (create it with loch branch): %w", name, s.Branch, loch.ErrNotFound)
			}
		}
		return nil, err
	}
	if d.ReadOnly() {
		d.Close()
		return nil, fmt.Errorf("table %s is read-only at %q, not a branch: %w", name, s.Branch, loch.ErrReadOnly)
	}
	return d, nil
}

// query runs a read statement.
func (s *Session) query(ctx context.Context, stmt string, out Output) (int64, error) {
	e, done, err := s.engine(ctx, stmt, "", nil)
	if err != nil {
		return 0, err
	}
	defer done()
	if out.Read != nil {
		return 0, e.Raw(ctx, stmt, out.Read)
	}
	w := out.W
	if w == nil {
		w = io.Discard
	}
	return e.Write(ctx, stmt, out.Format, out.Limit, w)
}

// Select runs a SELECT and returns the selection it makes of one table's
// version (query.Engine.Select: row ids in result order) and the table's
// name. The table is base, or when base is "" the only catalog table q
// names. A query that joins other tables makes a selection of base's rows
// (the other tables filter or order them; their columns are not part of
// a selection): its result must carry base's row id, as in SELECT
// f._rowid, f.image FROM frames f JOIN labels l USING (id) WHERE ..., each
// row once. seed, when not nil, seeds random().
func (s *Session) Select(ctx context.Context, q string, seed *uint64, base string) (*loch.Selection, string, error) {
	q = PostgresOperators(q)
	tables, err := s.cat.Tables(ctx)
	if err != nil {
		return nil, "", err
	}
	toks, err := lex(q)
	if err != nil {
		return nil, "", err
	}
	named := map[string]bool{}
	for _, t := range toks {
		if t.kind == tokIdent || t.kind == tokQuoted {
			named[strings.ToLower(t.text)] = true
		}
	}
	var hit []string
	for _, t := range tables {
		if named[strings.ToLower(t.Name)] {
			hit = append(hit, t.Name)
		}
	}
	if base == "" && len(hit) != 1 {
		return nil, "", fmt.Errorf("sql: a selection is of one table: the query names %d of the catalog's tables (%s); name the one whose rows it selects: %w",
			len(hit), strings.Join(hit, ", "), loch.ErrInvalidArgument)
	}
	if base == "" {
		base = hit[0]
	}
	if !slices.ContainsFunc(hit, func(h string) bool { return strings.EqualFold(h, base) }) {
		if _, err := s.cat.Table(ctx, base); err != nil {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("sql: a selection of table %s: the query does not read it: %w", base, loch.ErrInvalidArgument)
	}
	d, err := s.openRead(ctx, base)
	if err != nil {
		return nil, "", err
	}
	defer d.Close()
	e, err := query.New(ctx, d, query.Options{Threads: s.Threads, FileBase: s.FileBase, Seed: seed})
	if err != nil {
		return nil, "", err
	}
	defer e.Close()
	var opened []*loch.Dataset
	defer func() {
		for _, o := range opened {
			o.Close()
		}
	}()
	for _, h := range hit {
		o := d
		if !strings.EqualFold(h, base) {
			if o, err = s.openRead(ctx, h); err != nil {
				return nil, "", err
			}
			opened = append(opened, o)
		}
		if err := e.Attach(ctx, h, o); err != nil {
			return nil, "", err
		}
	}
	sel, err := e.Select(ctx, q)
	if err != nil {
		return nil, "", err
	}
	t, err := s.cat.Table(ctx, base)
	if err != nil {
		return nil, "", err
	}
	return sel, t.Name, nil
}
