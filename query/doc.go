// Package query runs SQL over loch datasets with an embedded DuckDB, and
// turns query results into selections that the loader streams. It is the
// only package of loch that imports DuckDB (github.com/duckdb/duckdb-go/v2,
// whose static library is a Go module: no download at build or run time,
// and nothing is ever INSTALLed or LOADed).
//
// # Tables
//
// An Engine (New) serves one dataset handle: its version is the view ds
// (and the view named by the URL's last element), and the table macro
// loch_scan('URL', ref => ..., as_of => ...) reads any dataset and
// version. Every table has _rowid and _pos first, then the dataset's
// columns mapped to DuckDB types (docs/query.md has the table): numbers,
// VARCHAR, JSON, ENUM class labels, ARRAY embeddings, nested LIST boxes,
// and a STRUCT(shape, dtype, bytes) from chunk headers for images and
// other large samples; with Options.SampleData that STRUCT also carries
// the sample's stored bytes (data BLOB, sampledata.go), read with the row.
//
// # Scans
//
// The table function (scan.go) fills DuckDB's 2,048-row morsels on
// DuckDB's threads from a loch.Scan: only the columns DuckDB projects,
// each chunk fetched whole once however many threads need it (a shared
// cache of at most 256 MiB), through the storage layer. DuckDB's C API
// gives table functions no filters, so the engine pushes them itself
// (pushdown.go): simple WHERE conjuncts over one loch table's scalar,
// text, class-label and json-key columns are handed to the scan as a
// filter argument (filter.go) and judged there, conservatively, before
// the rows' other columns are converted; DuckDB applies the whole WHERE
// again. Values are written straight into DuckDB's vectors where
// duckdb-go allows (duckdb.go, strings.go), else through its typed
// setters.
//
// # Selections
//
// Select returns a loch.Selection: the version, the SQL, the seed, the
// columns and the row ids in result order. The query is rewritten on
// DuckDB's own syntax tree (rewrite.go): _rowid added to the SELECT list,
// _pos the last ORDER BY key, random() replaced by a hash of the row id and
// the seed. So a selection is a pure function of the version, the SQL and
// the seed. The result's columns that are not the dataset's own (another
// table's in a join, expressions) are read with the row ids into the
// selection's joined columns (joined.go, docs/sql.md §8).
//
// # PostgreSQL's operators
//
// pgvector's <-> (L2), <=> (cosine distance) and negative inner product,
// and PostgreSQL's ->> and -> with PostgreSQL's precedence, are macros
// named by operators that DuckDB parses as generic ones (pg.go; package
// sqlcat respells <#>, ->> and -> into them). A SELECT over one table
// ordered by such a distance to a constant vector with a LIMIT is served
// by package vector, among the rows that pass its WHERE, through the
// column's index when one serves the version: the table is read at the
// rows found only, and DuckDB orders them by their exact distances
// (knn.go).
//
// # Reads only
//
// A query only reads: a statement that is not a SELECT by DuckDB's own
// classification (a prepared statement's type), or an EXPLAIN of one, is
// refused (statement.go): COPY, ATTACH, INSTALL, LOAD, CREATE, SET, CALL,
// EXPORT. Extensions are never installed or loaded (autoinstall,
// autoload and community extensions off). A sandboxed engine (Options.
// Sandbox) also has DuckDB's external access off and its settings locked.
//
// # DuckDB's internals
//
// What the package takes from DuckDB and duckdb-go beyond their
// documented APIs (json_serialize_sql's tree and its byte offsets, the
// parser's messages, duckdb-go's unexported vector fields) is in one
// file, duckdb.go, pinned by one test (TestDuckDBInternals) that an
// upgrade fails first.
//
// # The mirror
//
// A Mirror (mirror.go) is a DuckDB with one empty table per catalog
// table, shaped as the engine's views: it types a statement's parameters
// and result without reading a row, and answers the system catalog
// queries of PostgreSQL clients (package pgwire), external access off.
//
// # Concurrency
//
// An Engine runs one query at a time (its methods lock); Close releases
// DuckDB and the datasets loch_scan opened, not the handle given to New.
// The Engine reads the handle's version as it was at the first query that
// read it.
package query
