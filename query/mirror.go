package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
)

// MirrorSchema is the DuckDB schema that holds a Mirror's tables.
const MirrorSchema = "public"

// Mirror is an in-memory DuckDB with one empty table per table it was
// made of, in schema public, with the columns and DuckDB types of the
// engine's view of that table (_rowid and _pos first). It answers what can
// be answered without reading rows: the parameter and result types of a
// statement (Describe), and the queries PostgreSQL clients make of
// DuckDB's pg_catalog and information_schema views (Rows), for package
// pgwire. Its DuckDB has external access off and its configuration
// locked. A Mirror is safe for concurrent use; statements run one at a
// time on each of its mirrorConns DuckDB connections. Close releases it.
type Mirror struct {
	e    *Engine
	pool chan *sql.Conn
}

// mirrorConns is how many statements a Mirror runs at once.
const mirrorConns = 4

// NewMirror makes the mirror of tables (by name), each at its current
// version; it reads their schemas, not their rows, and keeps no handle.
// setup are statements (macros, views) run on it before its
// configuration is locked; search_path is public, then main. sampleData
// types the tables as an engine with Options.SampleData does.
func NewMirror(ctx context.Context, tables map[string]*loch.Dataset, setup []string, sampleData bool) (*Mirror, error) {
	e, err := New(ctx, nil, Options{Threads: 1, SampleData: sampleData})
	if err != nil {
		return nil, err
	}
	if err := e.define(ctx, ""); err != nil {
		e.Close()
		return nil, err
	}
	m := &Mirror{e: e, pool: make(chan *sql.Conn, mirrorConns)}
	if err := m.build(ctx, tables, setup); err != nil {
		e.Close()
		return nil, err
	}
	return m, nil
}

func (m *Mirror) build(ctx context.Context, tables map[string]*loch.Dataset, setup []string) error {
	names := make([]string, 0, len(tables))
	for n := range tables {
		names = append(names, n)
	}
	sort.Strings(names)
	run := func(q string) error {
		if _, err := m.e.conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("query: mirror: %s: %w", oneLineSQL(q), err)
		}
		return nil
	}
	if err := run("CREATE SCHEMA " + MirrorSchema); err != nil {
		return err
	}
	for _, n := range names {
		if err := m.e.Attach(ctx, n, tables[n]); err != nil {
			return err
		}
		if err := m.table(ctx, n); err != nil {
			return err
		}
		if err := run("DROP VIEW main." + quoteIdent(n)); err != nil {
			return err
		}
	}
	m.e.attached = map[string]*loch.Dataset{}
	m.e.opts.Sandbox = true // loch_scan of any URL fails
	for _, q := range setup {
		if err := run(q); err != nil {
			return err
		}
	}
	for range mirrorConns {
		c, err := m.e.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("query: mirror: connect: %w", err)
		}
		m.pool <- c
		if _, err := c.ExecContext(ctx, "SET search_path = '"+MirrorSchema+",main'"); err != nil {
			return fmt.Errorf("query: mirror: search_path: %w", err)
		}
	}
	for _, q := range []string{"SET enable_external_access = false", "SET lock_configuration = true"} {
		if err := run(q); err != nil {
			return err
		}
	}
	return nil
}

// take waits for a free connection (or ctx's end).
func (m *Mirror) take(ctx context.Context) (*sql.Conn, error) {
	select {
	case c := <-m.pool:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// table makes the mirror's table of the view name: its columns and
// types, with _rowid and _pos generated (an INSERT without a column list
// names the others, as loch's does).
func (m *Mirror) table(ctx context.Context, name string) error {
	rows, err := m.e.conn.QueryContext(ctx, "SELECT column_name, column_type FROM (DESCRIBE main."+quoteIdent(name)+")")
	if err != nil {
		return fmt.Errorf("query: mirror: describe %s: %w", name, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c, t string
		if err := rows.Scan(&c, &t); err != nil {
			return fmt.Errorf("query: mirror: describe %s: %w", name, err)
		}
		def := quoteIdent(c) + " " + t
		if c == RowIDColumn || c == PosColumn {
			def += fmt.Sprintf(" GENERATED ALWAYS AS (NULL::%s) VIRTUAL", t)
		}
		cols = append(cols, def)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query: mirror: describe %s: %w", name, err)
	}
	rows.Close()
	q := fmt.Sprintf("CREATE TABLE %s.%s (%s)", MirrorSchema, quoteIdent(name), strings.Join(cols, ", "))
	if _, err := m.e.conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("query: mirror: %s: %w", oneLineSQL(q), err)
	}
	return nil
}

// Close releases the mirror's DuckDB, once the statements running on it
// (and rows Rows returned) are done.
func (m *Mirror) Close() error {
	for range mirrorConns {
		c := <-m.pool
		c.Close()
	}
	return m.e.Close()
}

// Param is a statement parameter's DuckDB type name ("BIGINT", "VARCHAR",
// "LIST"); "" when DuckDB cannot tell.
type Param = string

// Described is what Describe finds of a statement.
type Described struct {
	// Params are the DuckDB type names of $1, $2, ... ("" where DuckDB
	// cannot tell).
	Params []Param
	// Read is whether the statement is a read (a SELECT, or an EXPLAIN).
	Read bool
	// Names and Types are the result's column names and DuckDB type
	// names (ColumnType.DatabaseTypeName: "BIGINT", "FLOAT[3]", "JSON"),
	// for a read.
	Names, Types []string
}

// Describe prepares q on the mirror's tables (it does not run it) and
// returns its parameter types and, for a read, its result columns.
func (m *Mirror) Describe(ctx context.Context, q string) (Described, error) {
	conn, err := m.take(ctx)
	if err != nil {
		return Described{}, err
	}
	defer func() { m.pool <- conn }()
	var d Described
	err = conn.Raw(func(dc any) error {
		s, done, err := prepareRaw(ctx, dc, q)
		if err != nil {
			return err
		}
		defer done()
		if d.Read, err = isReadStmt(s); err != nil {
			return err
		}
		for i := 1; i <= s.NumInput(); i++ {
			pt, err := s.ParamType(i)
			if err != nil {
				pt = duckdb.TYPE_INVALID
			}
			d.Params = append(d.Params, typeNames[pt])
		}
		if !d.Read {
			return nil
		}
		names, types, err := stmtColumns(s)
		for i, t := range types {
			d.Names, d.Types = append(d.Names, names[i]), append(d.Types, typeInfoName(t))
		}
		return err
	})
	return d, err
}

// stmtColumns returns the names and types of a prepared statement's
// result columns, as DuckDB names them (duplicates kept).
func stmtColumns(s *duckdb.Stmt) ([]string, []duckdb.TypeInfo, error) {
	n, err := s.ColumnCount()
	if err != nil {
		return nil, nil, err
	}
	names, types := make([]string, 0, n), make([]duckdb.TypeInfo, 0, n)
	for i := range n {
		name, err := s.ColumnName(i)
		if err != nil {
			return nil, nil, err
		}
		t, err := s.ColumnTypeInfo(i)
		if err != nil {
			return nil, nil, err
		}
		names, types = append(names, name), append(types, t)
	}
	return names, types, nil
}

// typeInfoName is DuckDB's name of a type as database/sql's
// DatabaseTypeName gives it: JSON, FLOAT[3], INTEGER[], DECIMAL(18,3),
// STRUCT("name" TYPE, ...), ENUM.
func typeInfoName(t duckdb.TypeInfo) string {
	if t.Alias() == "JSON" {
		return "JSON"
	}
	switch d := t.Details().(type) {
	case *duckdb.ListDetails:
		return typeInfoName(d.Child) + "[]"
	case *duckdb.ArrayDetails:
		return fmt.Sprintf("%s[%d]", typeInfoName(d.Child), d.Size)
	case *duckdb.DecimalDetails:
		return fmt.Sprintf("DECIMAL(%d,%d)", d.Width, d.Scale)
	case *duckdb.StructDetails:
		fields := make([]string, len(d.Entries))
		for i, e := range d.Entries {
			fields[i] = quoteIdent(e.Name()) + " " + typeInfoName(e.Info())
		}
		return "STRUCT(" + strings.Join(fields, ", ") + ")"
	}
	switch t.InternalType() {
	case duckdb.TYPE_MAP:
		return "MAP()"
	case duckdb.TYPE_UNION:
		return "UNION()"
	case duckdb.TYPE_ENUM:
		return "ENUM"
	}
	if n, ok := typeNames[t.InternalType()]; ok {
		return n
	}
	return "VARCHAR"
}

// prepareRaw prepares q on a DuckDB driver connection.
func prepareRaw(ctx context.Context, dc any, q string) (*duckdb.Stmt, func(), error) {
	c, ok := dc.(*duckdb.Conn)
	if !ok {
		return nil, nil, fmt.Errorf("query: driver connection %T, want DuckDB's", dc)
	}
	st, err := c.PrepareContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	return st.(*duckdb.Stmt), func() { st.Close() }, nil
}

// isReadStmt reports whether a prepared statement is a SELECT or EXPLAIN.
func isReadStmt(s *duckdb.Stmt) (bool, error) {
	t, err := s.StatementType()
	return t == duckdb.STATEMENT_TYPE_SELECT || t == duckdb.STATEMENT_TYPE_EXPLAIN, err
}

// Rows runs the read q on the mirror with args and returns its rows and
// the function that closes them (it may be called more than once); the
// connection it holds is busy until then. A statement that is not a read
// is refused.
func (m *Mirror) Rows(ctx context.Context, q string, args ...driver.Value) (*sql.Rows, func(), error) {
	conn, err := m.take(ctx)
	if err != nil {
		return nil, nil, err
	}
	give := func() { m.pool <- conn }
	err = conn.Raw(func(dc any) error {
		s, done, err := prepareRaw(ctx, dc, q)
		if err != nil {
			return err
		}
		defer done()
		if read, err := isReadStmt(s); err != nil || !read {
			return errors.Join(err, errors.New("not a SELECT or EXPLAIN"))
		}
		return nil
	})
	if err != nil {
		give()
		return nil, nil, fmt.Errorf("query %s: %s (queries only read: SELECT, EXPLAIN): %w", oneLineSQL(q), oneLine(err), loch.ErrInvalidArgument)
	}
	as := make([]any, len(args))
	for i, a := range args {
		as[i] = a
	}
	rows, err := conn.QueryContext(ctx, q, as...)
	if err != nil {
		give()
		return nil, nil, fmt.Errorf("query %s: %s: %w", oneLineSQL(q), oneLine(err), loch.ErrInvalidArgument)
	}
	var once sync.Once
	return rows, func() { once.Do(func() { rows.Close(); give() }) }, nil
}

// typeNames names the parameter types Describe reports.
var typeNames = map[duckdb.Type]string{
	duckdb.TYPE_BOOLEAN: "BOOLEAN", duckdb.TYPE_TINYINT: "TINYINT", duckdb.TYPE_SMALLINT: "SMALLINT",
	duckdb.TYPE_INTEGER: "INTEGER", duckdb.TYPE_BIGINT: "BIGINT", duckdb.TYPE_UTINYINT: "UTINYINT",
	duckdb.TYPE_USMALLINT: "USMALLINT", duckdb.TYPE_UINTEGER: "UINTEGER", duckdb.TYPE_UBIGINT: "UBIGINT",
	duckdb.TYPE_FLOAT: "FLOAT", duckdb.TYPE_DOUBLE: "DOUBLE", duckdb.TYPE_DECIMAL: "DECIMAL",
	duckdb.TYPE_TIMESTAMP: "TIMESTAMP", duckdb.TYPE_TIMESTAMP_TZ: "TIMESTAMP WITH TIME ZONE",
	duckdb.TYPE_DATE: "DATE", duckdb.TYPE_TIME: "TIME", duckdb.TYPE_VARCHAR: "VARCHAR",
	duckdb.TYPE_BLOB: "BLOB", duckdb.TYPE_UUID: "UUID", duckdb.TYPE_LIST: "LIST", duckdb.TYPE_ARRAY: "ARRAY",
	duckdb.TYPE_ENUM: "VARCHAR", duckdb.TYPE_HUGEINT: "HUGEINT", duckdb.TYPE_UHUGEINT: "UHUGEINT",
	duckdb.TYPE_TIMESTAMP_S: "TIMESTAMP_S", duckdb.TYPE_TIMESTAMP_MS: "TIMESTAMP_MS", duckdb.TYPE_TIMESTAMP_NS: "TIMESTAMP_NS",
	duckdb.TYPE_INTERVAL: "INTERVAL", duckdb.TYPE_TIME_TZ: "TIMETZ", duckdb.TYPE_BIT: "BIT",
}
