// Package pgwire answers PostgreSQL clients (psql, psycopg, pgx, JDBC)
// over a catalog: `loch serve ROOT --pg ADDR` (docs/pg.md). It speaks the
// v3 wire protocol through pgx's pgproto3 and runs every statement
// through package sqlcat, as `loch sql` does: loch's DDL, INSERT, UPDATE,
// DELETE, MERGE and OPTIMIZE are one commit each, everything else a read
// by DuckDB.
//
// # Protocol
//
// Startup (SSLRequest answered with TLS when Options.TLS is set; TLS is
// required on an address that is not loopback), SCRAM-SHA-256
// authentication (scram.go), the simple query protocol (several
// statements in one message, run in order up to the first error) and the
// extended one (Parse, Bind, Describe, Execute, Sync, Close; parameters in
// text, or binary for the scalar types), COPY ... TO STDOUT (text, csv
// and binary, copy.go and copybinary.go) and COPY table FROM STDIN (text,
// csv and binary; one commit, copyin.go), and
// CancelRequest with the key of BackendKeyData. Each statement is its own
// transaction: BEGIN, COMMIT and ROLLBACK are accepted and ReadyForQuery's
// status follows them, but every write commits when it runs (ROLLBACK
// undoes nothing and warns); SET of PostgreSQL settings is accepted and
// ignored (SET loch_branch is loch's). Execute's row limit and
// DECLARE/FETCH cursors send a result a batch at a time.
//
// Parameters are bound by the server: each $n becomes a SQL literal of
// its type (types.go: numbers are parsed and printed again, text quoted),
// so that a statement with parameters is the same text loch sql runs.
// Their types come from the client (Parse) or, when it leaves them
// unspecified, from DuckDB preparing the statement on the mirror.
//
// # The mirror
//
// A query.Mirror is an in-memory DuckDB with one empty table per catalog
// table, shaped as the engine's views of them. It answers Describe (the
// parameter and result types of a statement, without reading rows), every
// read that names no catalog table (SELECT 1, version()), and the
// queries clients make of pg_catalog and information_schema: DuckDB's own
// compatibility views, completed by pgcatalog.go and reached through
// rewriteSystem (enough for psql's \dt and \d, pgx and psycopg). It is made
// again when the catalog's tables change, or after a DDL through this
// server.
//
// # Types
//
// Results are sent with PostgreSQL's OIDs (typeFor): BOOLEAN bool,
// integers int2/int4/int8, FLOAT float4, DOUBLE and DECIMAL float8,
// VARCHAR and ENUM text, BLOB bytea, JSON json, DATE, TIME, TIMESTAMP and
// TIMESTAMPTZ, UUID; an embedding (a one-dimensional FLOAT or DOUBLE array
// or list) as pgvector's vector in its text form '[1,2,3]' (or its binary
// form) with OID VectorOID (16385); an image, video, audio or large
// tensor as bytea of its bytes as stored: sessions read with
// query.Options.SampleData, which adds a data field to the STRUCT(shape,
// dtype, bytes) that stands for such a sample, and that field is sent;
// other lists and structs (small tensors) as json.
//
// # Users and roles
//
// Users come from a users file (users.go, docs/pg.md): a SCRAM-SHA-256
// verifier per user, never a password, and a role of grants (rights on
// table patterns at ref patterns). Without users every login is refused.
// Before a statement runs, its tables (sqlcat.Session.Tables) need the
// read right at the ref the session reads them at, and its target
// (sqlcat.Target) the write right on the session's branch or the ddl
// right; a refusal names the user, role, table and right, and nothing is
// written.
//
// # Robustness
//
// Connections are bounded (Options.MaxConns); each statement has a
// context that ends at the statement timeout, at a CancelRequest, when
// the client goes away (a goroutine reads the socket while statements
// run) or when the server aborts; DuckDB's memory_limit per statement is
// Options.MemoryLimit. When Serve's context ends it stops accepting,
// closes idle connections, gives running statements Options.ShutdownGrace
// and then cancels them: a cancelled write commits nothing, so no write is
// half-committed. Log lines never carry passwords, verifiers or
// parameters.
package pgwire
