// Package sqlcat runs SQL statements over a catalog (docs/sql.md): loch's
// own DDL (CREATE TABLE with loch's type names, ALTER TABLE, DROP TABLE),
// INSERT, UPDATE, DELETE, MERGE and OPTIMIZE (compaction,
// loch.Dataset.Compact) as one commit per statement, and every other
// statement as a read-only query through package query, with every table
// of the catalog visible as a view by its name.
//
// A Session holds the branch and default commit message of a sequence of
// statements; Session.Run runs one.
//
// # What sqlcat parses itself
//
// DuckDB parses SQL; sqlcat keeps a hand parser (lex.go, ddl.go) only for
// what DuckDB cannot plan, because loch's tables are views to DuckDB:
// loch's own types in CREATE and ALTER TABLE (IMAGE('png'),
// CLASS_LABEL(...), TENSOR(float32, [3, NULL]), ...) and OPTIMIZE, and
// the frame of a write (its target table, column list and SET list).
// Kind is the one classifier: it routes loch's statements by their first
// words, and gives every other statement to package query, which runs it
// only if DuckDB's own type of it is a read. Split ends statements where
// DuckDB's parser does (query.Parse). Every expression, VALUES list and
// SELECT is DuckDB's, run through query.Engine, and a result's types are
// DuckDB's. The lexer follows DuckDB's lexical rules (dollar-quoted
// strings, E-strings with backslash escapes, nested comments), which a
// test checks against DuckDB.
//
// # PostgreSQL's forms
//
// Before anything parses a statement, Run (and Select) respells, with
// the lexer, the PostgreSQL operators that DuckDB reads otherwise
// (pg.go): pgvector's <#> (DuckDB lexes no # in operators) into
// query.NegInnerProductOp, and ->> and -> (DuckDB binds them below AND,
// and -> is its lambda arrow) into query.JSONTextOp and query.JSONOp,
// generic operators that DuckDB binds with PostgreSQL's precedence and
// package query defines as macros; -> only before a string, a number or a
// parameter, so that x -> x + 1 stays a lambda. Strings, quoted names,
// comments and dollar-quoted bodies are never touched, and only an
// operator's spelling changes. The commit message keeps the text as
// given. VECTOR(n), JSONB and the SERIAL types are rows of typeRules.
//
// # Keys and serial columns
//
// PRIMARY KEY and UNIQUE make a column a key (schema.Column.Key), the
// SERIAL types a serial column (schema.Column.Serial). An INSERT, UPDATE
// or MERGE on such a table goes through a keyCheck (keys.go): serial
// values are the largest value + 1 of the version the statement read,
// the statement's key values are checked against one another and, before
// the commit, against that version's other rows (a DuckDB query over the
// key column with the values pushed down); the commit is
// loch.Dataset.CommitUnmoved, and Run runs the statement again when
// another commit moved the table in between (docs/sql.md §2.1).
//
// Each statement starts its own engine (an in-memory DuckDB) with views of
// the tables it names, opened at the session's branch (else main) when
// the statement starts, and closes it before returning: nothing of DuckDB
// outlives a statement, and a statement sees every commit made before it.
// A write opens its table on the branch, stages rows through
// loch.Dataset.Extend, Update or Delete, and commits once; on any error it
// closes the handle without committing, which discards the staged rows
// (chunks already uploaded are unreferenced until gc removes them).
package sqlcat
