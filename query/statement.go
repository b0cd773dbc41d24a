package query

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
)

// The engine only reads. A statement DuckDB can serialize
// (json_serialize_sql) is a SELECT; any other is classified by DuckDB
// itself, as a prepared statement's type (checkRead), and runs only when
// it is a SELECT (DESCRIBE, SHOW, SUMMARIZE, PIVOT, read-only PRAGMAs) or
// an EXPLAIN of one. COPY, ATTACH, INSTALL and LOAD, CREATE (a table, view
// or macro in DuckDB's memory), SET, CALL, EXPORT and the rest are
// refused with a message that says where that is done in loch. loch's
// own COPY of a result (Write's json and parquet) is not a user statement.

// stmtNames name DuckDB's statement types for messages, with what to do
// instead.
var stmtNames = map[duckdb.StmtType]struct{ name, instead string }{
	duckdb.STATEMENT_TYPE_COPY: {"COPY", "COPY writes or reads files as a table: write a query's result with " +
		"loch query URL|ROOT SQL --format csv|json|parquet --out FILE (Python: ds.sql, Selection.to_arrow)"},
	duckdb.STATEMENT_TYPE_EXPORT: {"EXPORT", "it writes files: write a query's result with loch query --format csv|json|parquet --out FILE"},
	duckdb.STATEMENT_TYPE_INSERT: {"INSERT", writesHint},
	duckdb.STATEMENT_TYPE_UPDATE: {"UPDATE", writesHint},
	duckdb.STATEMENT_TYPE_DELETE: {"DELETE", writesHint},
	duckdb.STATEMENT_TYPE_CREATE: {"CREATE", writesHint},
	duckdb.STATEMENT_TYPE_ALTER:  {"ALTER", writesHint},
	duckdb.STATEMENT_TYPE_DROP:   {"DROP", writesHint},
	duckdb.STATEMENT_TYPE_ATTACH: {"ATTACH", "read other datasets with loch_scan('URL'), and a catalog's tables by name with loch query ROOT"},
	duckdb.STATEMENT_TYPE_DETACH: {"DETACH", "nothing is attached"},
	duckdb.STATEMENT_TYPE_LOAD: {"INSTALL or LOAD", "loch never installs or loads DuckDB extensions " +
		"(json, parquet and icu are built in; docs/query.md)"},
	duckdb.STATEMENT_TYPE_SET:          {"SET", "loch fixes DuckDB's settings"},
	duckdb.STATEMENT_TYPE_VARIABLE_SET: {"SET VARIABLE", "loch fixes DuckDB's settings"},
	duckdb.STATEMENT_TYPE_CALL:         {"CALL", "read a table function with SELECT * FROM f(...)"},
	duckdb.STATEMENT_TYPE_TRANSACTION:  {"BEGIN, COMMIT or ROLLBACK", "each query is one read"},
	duckdb.STATEMENT_TYPE_PREPARE:      {"PREPARE", "each query runs once"},
	duckdb.STATEMENT_TYPE_EXECUTE:      {"EXECUTE", "each query runs once"},
}

// writesHint is where loch writes tables and datasets.
const writesHint = "loch sql ROOT writes a catalog's tables (CREATE, INSERT, UPDATE, DELETE: one commit each); " +
	"loch ingest and the library write datasets"

// explainRE takes the statement an EXPLAIN [ANALYZE] explains (EXPLAIN
// ANALYZE runs it).
var explainRE = regexp.MustCompile(`(?is)^explain\s+(?:analyze\s+|\(.*?\)\s*)?(.+)$`)

// exportRE is an EXPORT DATABASE statement, which DuckDB's binder acts on
// (it makes the target directory) when the statement is only prepared:
// refused before DuckDB sees it.
var exportRE = regexp.MustCompile(`(?i)^export\b`)

// checkRead refuses, wrapping loch.ErrInvalidArgument, a statement q that
// DuckDB cannot serialize as a SELECT and that does more than read.
func (e *Engine) checkRead(ctx context.Context, q string) error {
	stmt := skipComments(q)
	if exportRE.MatchString(stmt) {
		return refused(q, stmtNames[duckdb.STATEMENT_TYPE_EXPORT].name, stmtNames[duckdb.STATEMENT_TYPE_EXPORT].instead)
	}
	t, err := e.statementType(stmt)
	if err != nil {
		if strings.Contains(err.Error(), "multi-statement") {
			return fmt.Errorf("query %s: several statements, want one (DuckDB makes a PIVOT without IN (...) several: name its values): %w",
				oneLineSQL(q), loch.ErrInvalidArgument)
		}
		// DuckDB binds while it prepares: an INSERT into a view fails here.
		return fmt.Errorf("query %s: %s (queries only read: SELECT, EXPLAIN): %w", oneLineSQL(q), oneLine(err), loch.ErrInvalidArgument)
	}
	switch t {
	case duckdb.STATEMENT_TYPE_SELECT:
		return nil
	case duckdb.STATEMENT_TYPE_EXPLAIN:
		m := explainRE.FindStringSubmatch(stmt)
		if m == nil {
			return refused(q, "EXPLAIN", "EXPLAIN a SELECT")
		}
		inner := skipComments(m[1])
		if tree, err := e.parse(ctx, inner); err == nil && !tree.Error {
			return nil // a SELECT
		}
		if err := e.checkRead(ctx, inner); err != nil {
			return fmt.Errorf("query %s: EXPLAIN: %w", oneLineSQL(q), err)
		}
		return nil
	}
	n, ok := stmtNames[t]
	if !ok {
		n.name, n.instead = "this statement", "run a SELECT"
	}
	return refused(q, n.name, n.instead)
}

// refused is checkRead's error for a statement of kind name.
func refused(q, name, instead string) error {
	return fmt.Errorf("query %s: queries only read (SELECT, EXPLAIN), not %s: %s: %w",
		oneLineSQL(q), name, instead, loch.ErrInvalidArgument)
}

// skipComments drops q's leading white space and SQL comments.
func skipComments(q string) string {
	for {
		q = strings.TrimSpace(q)
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q[2:], "*/")
			if i < 0 {
				return q
			}
			q = q[i+4:]
		default:
			return q
		}
	}
}
