package pgwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/sqlcat"
)

// result is what a statement gives: rows to send (from DuckDB, or static
// ones) or only a command tag.
type result struct {
	names   []string
	types   []pgType
	rows    *sql.Rows
	static  [][]any
	si      int    // static rows sent
	sent    int    // rows sent
	release func() // closes rows
	end     func() bool
	tag     string // the tag of a statement without rows; SELECT n is made as rows go
	done    bool   // nothing left to send but tag
	copyOut *copySpec
	// fetchTag is the verb of the CommandComplete tag when not SELECT
	// (FETCH).
	fetchTag string
}

// close releases the result's rows and statement.
func (r *result) close() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
	if r.end != nil {
		r.end()
		r.end = nil
	}
}

// fieldsIn is the row description with formats (Bind's result format
// codes: none, one for all, or one per column).
func (r *result) fieldsIn(formats []int16) []pgproto3.FieldDescription {
	out := make([]pgproto3.FieldDescription, len(r.names))
	for i, n := range r.names {
		out[i] = field(n, r.types[i], formatOf(formats, i, r.types[i]))
	}
	return out
}

func formatOf(formats []int16, i int, t pgType) int16 {
	f := int16(0)
	switch len(formats) {
	case 0:
	case 1:
		f = formats[0]
	default:
		if i < len(formats) {
			f = formats[i]
		}
	}
	if !t.binary {
		return 0
	}
	return f
}

func field(name string, t pgType, format int16) pgproto3.FieldDescription {
	return pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: t.oid, DataTypeSize: t.size, TypeModifier: -1, Format: format}
}

func tagResult(tag string) *result { return &result{tag: tag, done: true} }

// exec runs one statement (parameters bound) after checking that the
// user's role allows it.
func (c *conn) exec(ctx context.Context, q string) (*result, error) {
	w := firstWords(q, 2)
	if res, ok, err := c.txStatement(ctx, w); ok {
		return res, err
	}
	switch w[0] {
	case "set", "reset":
		if !strings.HasPrefix(w[1], "loch_") {
			return tagResult(strings.ToUpper(w[0])), nil // client settings: accepted, not kept
		}
	case "show":
		return show(w[1])
	case "discard":
		return tagResult("DISCARD ALL"), nil
	case "deallocate":
		return tagResult("DEALLOCATE"), nil
	case "copy":
		if c.sess.InTransaction() && copyFromRE().MatchString(q) {
			return nil, fmt.Errorf("COPY FROM inside a transaction block: loch commits a COPY on its own; run it outside BEGIN ... COMMIT (autocommit): %w", errUnsupported)
		}
		return c.copyStatement(ctx, q)
	case "declare", "fetch", "close", "move":
		return c.cursorStatement(q, w[0])
	case "listen", "unlisten", "notify", "lock", "vacuum", "analyze", "prepare", "execute", "grant", "revoke", "savepoint", "release":
		return nil, fmt.Errorf("%s is not supported by loch: %w", strings.ToUpper(w[0]), errUnsupported)
	}
	if res, ok, err := c.tableURL(ctx, q); ok {
		return res, err
	}
	kind := sqlcat.Kind(q)
	switch kind {
	case sqlcat.KindQuery:
		return c.read(ctx, q)
	case "SET":
		r, err := c.sess.Run(ctx, q, sqlcat.Output{})
		if err != nil {
			return nil, err
		}
		return tagResult(r.Statement), nil
	case "COPY":
		return c.copyStatement(ctx, q)
	}
	return c.write(ctx, q, kind)
}

// isRead reports whether q is a statement exec runs as a read, whose
// columns Describe may learn by running it (not FETCH, which would take
// the cursor's rows).
func (c *conn) isRead(q string) bool {
	switch firstWords(q, 1)[0] {
	case "show", "copy":
		return true
	case "begin", "start", "commit", "end", "rollback", "abort", "set", "reset", "discard", "deallocate",
		"declare", "fetch", "close", "move", "listen", "unlisten", "notify", "lock", "vacuum", "analyze",
		"prepare", "execute", "grant", "revoke", "savepoint", "release":
		return false
	}
	return sqlcat.Kind(q) == sqlcat.KindQuery
}

// read runs a query: on the catalog's mirror when it names no table of
// the catalog or asks PostgreSQL's system catalogs, else through sqlcat
// after checking the read right on each table it names.
func (c *conn) read(ctx context.Context, q string) (*result, error) {
	tables, err := c.sess.Tables(ctx, q)
	if err != nil {
		return nil, err
	}
	if len(tables) == 0 || mentionsSystem(q) {
		return c.mirrorRows(ctx, rewriteSystem(q))
	}
	if err := c.checkReads(ctx, q, tables, ""); err != nil {
		return nil, err
	}
	rows, release, err := c.sess.Rows(ctx, q)
	if err != nil {
		return nil, err
	}
	return rowsResult(rows, release)
}

// checkReads checks the read right on each table (but skip, a write's
// target) at the ref the session reads it at; a query that reads other
// refs itself (loch_table, loch_scan) needs the right at every ref.
func (c *conn) checkReads(ctx context.Context, q string, tables []string, skip string) error {
	anyRef := strings.Contains(strings.ToLower(q), "loch_table") || strings.Contains(strings.ToLower(q), "loch_scan")
	for _, t := range tables {
		if strings.EqualFold(t, skip) {
			continue
		}
		ref, tag, err := c.sess.ReadRef(ctx, t)
		if err != nil {
			return err
		}
		a := access{right: RightRead, table: t, ref: ref, tag: tag}
		if !c.role.allows(a) {
			return refusal(c.user, c.roleName, a)
		}
		if anyRef && !c.role.everyRef(t) {
			a.ref = "every ref (loch_table and loch_scan read any ref)"
			return refusal(c.user, c.roleName, a)
		}
	}
	return nil
}

// write runs a write or DDL statement of kind as one commit, after
// checking the role's right on its target and its read right on the
// other tables it names.
func (c *conn) write(ctx context.Context, q, kind string) (*result, error) {
	target, err := sqlcat.Target(q)
	if err != nil {
		return nil, err
	}
	ddl := strings.HasSuffix(kind, " TABLE")
	ref := c.sess.Branch
	if ref == "" {
		ref = "main"
	}
	a := access{right: RightWrite, table: target, ref: ref}
	switch {
	case ddl:
		a.right = RightDDL
	case kind == sqlcat.KindBranchMerge:
		m, err := sqlcat.ParseBranchMerge(q)
		if err != nil {
			return nil, err
		}
		a.right, a.ref = RightMerge, c.sess.IntoBranch(m)
	}
	if target != "" && !c.role.allows(a) {
		return nil, refusal(c.user, c.roleName, a)
	}
	tables, err := c.sess.Tables(ctx, q)
	if err != nil {
		return nil, err
	}
	if err := c.checkReads(ctx, q, tables, target); err != nil {
		return nil, err
	}
	r, err := c.sess.Run(ctx, q, sqlcat.Output{})
	if ddl && err == nil {
		c.srv.schemaChanged()
	}
	if err != nil {
		return nil, err
	}
	c.srv.logf("user %s: %s %s (version %s)", c.user, r.Statement, r.Table, r.Version)
	if kind == sqlcat.KindBranchMerge {
		return mergeResult(r), nil
	}
	return tagResult(commandTag(r)), nil
}

// mergeColumns are the columns of the one row a CALL loch_merge returns
// (tagged CALL 1); version is the branch's head after the merge.
var mergeColumns = []string{"table", "source", "into", "version", "added", "deleted", "modified"}

// mergeFields is the row description of a CALL loch_merge.
func mergeFields() ([]string, []pgType) {
	types := make([]pgType, len(mergeColumns))
	for i := range types {
		types[i] = typeFor("VARCHAR")
		if i >= 4 {
			types[i] = typeFor("BIGINT")
		}
	}
	return mergeColumns, types
}

// mergeResult is the row of a CALL loch_merge.
func mergeResult(r sqlcat.Result) *result {
	names, types := mergeFields()
	row := []any{r.Table, r.Source, r.Into, r.Version, r.Inserted, r.Deleted, r.Updated}
	return &result{names: names, types: types, static: [][]any{row}, fetchTag: "CALL"}
}

// commandTag is the CommandComplete tag of a write.
func commandTag(r sqlcat.Result) string {
	switch r.Statement {
	case "INSERT":
		return "INSERT 0 " + strconv.FormatInt(r.Rows, 10)
	case "UPDATE", "DELETE", "MERGE":
		return r.Statement + " " + strconv.FormatInt(r.Rows, 10)
	}
	return r.Statement
}

// rowsResult describes DuckDB's rows.
func rowsResult(rows *sql.Rows, release func()) (*result, error) {
	cts, err := rows.ColumnTypes()
	if err != nil {
		release()
		return nil, err
	}
	r := &result{rows: rows, release: release}
	for _, ct := range cts {
		r.names = append(r.names, ct.Name())
		r.types = append(r.types, typeFor(ct.DatabaseTypeName()))
	}
	return r, nil
}

// mirrorRows runs q on the catalog's mirror.
func (c *conn) mirrorRows(ctx context.Context, q string) (*result, error) {
	m, err := c.srv.getMirror(ctx)
	if err != nil {
		return nil, err
	}
	rows, release, err := m.Rows(ctx, sqlcat.PostgresOperators(q))
	if err != nil {
		return nil, err
	}
	return rowsResult(rows, release)
}

// mirrorDescribe describes q on the catalog's mirror.
func (c *conn) mirrorDescribe(ctx context.Context, q string) (query.Described, error) {
	m, err := c.srv.getMirror(ctx)
	if err != nil {
		return query.Described{}, err
	}
	if mentionsSystem(q) {
		q = rewriteSystem(q)
	}
	return m.Describe(ctx, sqlcat.PostgresOperators(q))
}

// firstWords is the first n words of q after comments, lower-cased ("" past the end).
func firstWords(q string, n int) []string {
	out := make([]string, n)
	k, start := 0, -1
	scanSQL(q, func(i int) int {
		if k >= n {
			return len(q) - i
		}
		if isIdentByte(q[i]) {
			if start < 0 {
				start = i
			}
			if i+1 == len(q) || !isIdentByte(q[i+1]) {
				out[k] = strings.ToLower(q[start : i+1])
				k, start = k+1, -1
			}
			return 1
		}
		if start >= 0 {
			start = -1
		}
		if q[i] != ' ' && q[i] != '\t' && q[i] != '\n' && q[i] != '\r' && k == 0 {
			k = n // a statement that starts with punctuation: ( SELECT ...
		}
		return 1
	})
	return out
}

// show answers SHOW of the settings clients ask about.
func show(name string) (*result, error) {
	v, ok := map[string]string{
		"server_version": serverVersion, "server_encoding": "UTF8", "client_encoding": "UTF8",
		"standard_conforming_strings": "on", "transaction_isolation": "read committed",
		"default_transaction_isolation": "read committed", "transaction_read_only": "off",
		"search_path": query.MirrorSchema, "timezone": "UTC", "datestyle": "ISO, MDY",
		"integer_datetimes": "on", "max_identifier_length": "63", "intervalstyle": "postgres",
		"lc_collate": "C", "lc_ctype": "C", "max_connections": "64",
	}[name]
	if !ok {
		return nil, fmt.Errorf("unrecognized configuration parameter %q: %w", name, errUnsupported)
	}
	return &result{names: []string{name}, types: []pgType{typeFor("VARCHAR")}, static: [][]any{{v}}}, nil
}

// systemRE finds names of PostgreSQL's system catalogs and functions.
var systemRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(pg_[a-z_]+|information_schema|current_schema|current_database|version\s*\(|current_setting|has_[a-z_]+_privilege|format_type|obj_description|col_description)`)
})

// mentionsSystem reports whether q reads PostgreSQL's system catalogs.
func mentionsSystem(q string) bool { return systemRE().MatchString(q) }

// rewrites turn what clients write for PostgreSQL's catalogs into what
// DuckDB's pg_catalog views answer (compiled at the first use, not at
// every start of the loch command).
var rewrites = sync.OnceValue(func() []systemRewrite {
	return []systemRewrite{
		{regexp.MustCompile(`OPERATOR\(pg_catalog\.([^)]+)\)`), "$1"},
		{regexp.MustCompile(`(?i)\s+COLLATE\s+pg_catalog\."?default"?`), ""},
		{regexp.MustCompile(`(?i)::\s*pg_catalog\.(regclass|regtype|regproc|regnamespace|oid)`), ""},
		{regexp.MustCompile(`(?i)::\s*(regclass|regtype|regproc|regnamespace)\b`), ""},
		{regexp.MustCompile(`\bpg_catalog\.`), ""},
		// JDBC's getPrimaryKeys and getIndexInfo (a macro of pgcatalog.go)
		{regexp.MustCompile(`(?i)\binformation_schema\.(_pg_expandarray)\b`), "$1"},
		{regexp.MustCompile(`\bprattrs\[s\]`), "prattrs[s.generate_series]"}, // psql's \d: a set-returning function's alias as its value
	}
})

// systemRewrite replaces what re matches with with.
type systemRewrite struct {
	re   *regexp.Regexp
	with string
}

// rewriteSystem applies rewrites to q.
func rewriteSystem(q string) string {
	for _, r := range rewrites() {
		q = r.re.ReplaceAllString(q, r.with)
	}
	return q
}

// sqlState is the SQLSTATE of an error.
func sqlState(err error) string {
	switch {
	case errors.Is(err, loch.ErrPermission):
		return "42501"
	case errors.Is(err, errStatementTimeout), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "57014"
	case errors.Is(err, errUnsupported):
		return "0A000"
	case errors.Is(err, loch.ErrNotFound):
		return "42P01"
	case errors.Is(err, loch.ErrExists):
		return "42P07"
	case errors.Is(err, loch.ErrReadOnly):
		return "25006"
	case errors.Is(err, loch.ErrConflict):
		return "40001"
	case errors.Is(err, errNoCursor):
		return "34000"
	case errors.Is(err, errTxAborted):
		return "25P02"
	case errors.Is(err, sqlcat.ErrTxTable):
		return "25000"
	case errors.Is(err, loch.ErrInvalidArgument):
		return duckState(err.Error())
	}
	return "XX000"
}

// duckState is the SQLSTATE of an invalid statement by DuckDB's kind
// of error in its message.
func duckState(msg string) string {
	switch {
	case strings.Contains(msg, "Out of Memory Error"):
		return "53200"
	case strings.Contains(msg, "Catalog Error: Table with name"), strings.Contains(msg, "Catalog Error: Table Function"):
		return "42P01"
	case strings.Contains(msg, "Binder Error: Referenced column"), strings.Contains(msg, "Binder Error: Values list"):
		return "42703"
	case strings.Contains(msg, "Catalog Error: Scalar Function"), strings.Contains(msg, "No function matches"):
		return "42883"
	case strings.Contains(msg, "Conversion Error"), strings.Contains(msg, "Invalid Input Error"):
		return "22P02"
	case strings.Contains(msg, "Binder Error"):
		return "42P18"
	}
	return "42601"
}

// stmtErr is err of a statement whose context is ctx: when ctx ended,
// why it did (a cancel, the statement timeout, the client's going away).
func stmtErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if errors.Is(context.Cause(ctx), errStatementTimeout) {
		return fmt.Errorf("%w: %w", errStatementTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("canceling statement due to user request: %w", context.Canceled)
}

// sendError sends err as an ErrorResponse.
func (c *conn) sendError(err error) {
	msg := err.Error()
	switch {
	case errors.Is(err, errStatementTimeout):
		msg = errStatementTimeout.Error()
	case errors.Is(err, context.Canceled):
		msg = "canceling statement due to user request"
	}
	if c.txStatus == 'T' {
		c.txStatus = 'E' // until ROLLBACK (or COMMIT, which rolls back) as in PostgreSQL
	}
	c.be.Send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: sqlState(err), Message: msg})
}
