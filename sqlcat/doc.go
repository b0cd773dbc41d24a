// Package sqlcat runs SQL statements over a catalog (docs/sql.md): loch's
// own DDL (CREATE TABLE with loch's type names, ALTER TABLE, DROP TABLE),
// INSERT, UPDATE, DELETE, MERGE and OPTIMIZE (compaction,
// loch.Dataset.Compact) as one commit per statement, and every other
// statement as a read-only query through package query, with every table
// of the catalog visible as a view by its name.
//
// A Session holds the branch and default commit message of a sequence of
// statements; Session.Run runs one. sqlcat parses only what DuckDB cannot
// express (loch's types) and the frame of a write statement (its target
// table, column list and SET list); every expression, VALUES list and
// SELECT is DuckDB's, run through query.Engine.
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
