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
// Each statement starts its own engine (an in-memory DuckDB) with views of
// the tables it names, opened at the session's branch (else main) when
// the statement starts, and closes it before returning: nothing of DuckDB
// outlives a statement, and a statement sees every commit made before it.
// A write opens its table on the branch, stages rows through
// loch.Dataset.Extend, Update or Delete, and commits once; on any error it
// closes the handle without committing, which discards the staged rows
// (chunks already uploaded are unreferenced until gc removes them).
package sqlcat
