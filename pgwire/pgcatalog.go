package pgwire

import (
	"fmt"
	"sort"
	"strings"

	"github.com/lochdata/loch/query"
)

// pgCatalogSetup completes DuckDB's pg_catalog views and functions with
// what psql (\dt, \d), pgx and psycopg ask for and DuckDB 1.5 lacks:
// missing columns of pg_class, and empty views of the catalogs of what
// loch has none of (inheritance, policies, triggers, publications,
// extended statistics). They are made in the mirror's schema main, which
// its search path finds before DuckDB's pg_catalog, since rewriteSystem
// drops the pg_catalog. qualifier of every name.
var pgCatalogSetup = append([]string{
	pgOIDMacro(),
	// pg_attribute with the OIDs the server sends columns as (typeFor),
	// and format_type naming them as PostgreSQL does, for psql's \d.
	`CREATE VIEW pg_attribute AS SELECT a.* REPLACE (coalesce(loch_pg_oid(c.data_type), a.atttypid) AS atttypid)
		FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class r ON r.oid = a.attrelid
		LEFT JOIN information_schema.columns c ON c.table_schema = 'public' AND c.table_name = r.relname AND c.column_name = a.attname`,
	`CREATE MACRO format_type(id, typmod) AS CASE id ` + formatTypeCases() + ` ELSE pg_catalog.format_type(id, typmod) END`,
}, catalogViews...)

// pgOIDMacro is loch_pg_oid(duck_type_name): typeFor's OID, in SQL.
func pgOIDMacro() string {
	names := make([]string, 0, len(scalarTypes))
	for n := range scalarTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("CREATE MACRO loch_pg_oid(t) AS CASE")
	for _, n := range names {
		fmt.Fprintf(&b, " WHEN t = '%s' THEN %d", n, scalarTypes[n].oid)
	}
	fmt.Fprintf(&b, " WHEN t LIKE 'DECIMAL%%' THEN %d", oidFloat8)
	fmt.Fprintf(&b, " WHEN regexp_full_match(t, '(FLOAT|DOUBLE)\\[\\d*\\]') THEN %d", VectorOID)
	fmt.Fprintf(&b, " WHEN replace(t, '\"', '') LIKE 'STRUCT(shape INTEGER[]%% %s BLOB)' THEN %d", query.SampleDataField, oidBytea)
	fmt.Fprintf(&b, " WHEN t LIKE '%%]' OR t LIKE 'STRUCT%%' OR t LIKE 'MAP%%' OR t LIKE 'UNION%%' THEN %d", oidJSON)
	fmt.Fprintf(&b, " WHEN t IS NULL THEN NULL ELSE %d END", oidText)
	return b.String()
}

// pgTypeNames are the names format_type gives the OIDs the server sends.
var pgTypeNames = map[uint32]string{
	oidBool: "boolean", oidBytea: "bytea", oidInt8: "bigint", oidInt2: "smallint", oidInt4: "integer",
	oidText: "text", oidJSON: "json", oidFloat4: "real", oidFloat8: "double precision",
	oidDate: "date", oidTime: "time without time zone", oidTimestamp: "timestamp without time zone",
	oidTimestampTZ: "timestamp with time zone", oidUUID: "uuid", VectorOID: "vector",
}

func formatTypeCases() string {
	oids := make([]int, 0, len(pgTypeNames))
	for o := range pgTypeNames {
		oids = append(oids, int(o))
	}
	sort.Ints(oids)
	var b strings.Builder
	for _, o := range oids {
		fmt.Fprintf(&b, " WHEN %d THEN '%s'", o, pgTypeNames[uint32(o)])
	}
	return b.String()
}

// catalogViews are the macros and views that complete DuckDB's.
var catalogViews = []string{
	`CREATE MACRO pg_get_userbyid(id) AS 'loch'`,
	// loch_table_url's columns, for Describe (tableurl.go answers it).
	`CREATE MACRO loch_table_url(name) AS TABLE (SELECT NULL::VARCHAR AS "table", NULL::VARCHAR AS url, NULL::VARCHAR AS ref, NULL::VARCHAR AS version),
		(name, ref) AS TABLE (SELECT NULL::VARCHAR AS "table", NULL::VARCHAR AS url, NULL::VARCHAR AS ref, NULL::VARCHAR AS version)`,
	`CREATE MACRO pg_get_expr(e, r) AS NULL::VARCHAR, (e, r, pretty) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_statisticsobjdef_columns(id) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_triggerdef(id) AS NULL::VARCHAR, (id, pretty) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_ruledef(id) AS NULL::VARCHAR, (id, pretty) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_partkeydef(id) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_indexdef(id) AS NULL::VARCHAR, (id, col, pretty) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_partition_constraintdef(id) AS NULL::VARCHAR`,
	`CREATE MACRO pg_encoding_to_char(e) AS 'UTF8'`,
	`CREATE MACRO pg_relation_is_publishable(id) AS false`,
	`CREATE MACRO array_upper(a, d) AS len(a)`,
	// information_schema._pg_expandarray (JDBC's getPrimaryKeys, getIndexInfo):
	// a row (x, n) per element; rewriteSystem drops its schema.
	`CREATE MACRO _pg_expandarray(a) AS unnest(list_transform(a, lambda x, i: {'x': x, 'n': i}))`,
	// schema main holds these views and macros, not tables: hidden from
	// schema browsers (JDBC's getSchemas).
	`CREATE VIEW pg_namespace AS SELECT * FROM pg_catalog.pg_namespace WHERE nspname <> 'main'`,
	`CREATE VIEW pg_settings AS SELECT * FROM (VALUES ('max_index_keys', '32'), ('max_identifier_length', '63'),
		('standard_conforming_strings', 'on'), ('server_encoding', 'UTF8')) t(name, setting)`,
	`CREATE VIEW pg_am AS SELECT 2::BIGINT AS oid, 'heap' AS amname, 't' AS amtype`,
	`CREATE VIEW pg_class AS SELECT *, false AS relforcerowsecurity FROM pg_catalog.pg_class`,
	`CREATE VIEW pg_inherits AS SELECT 0::BIGINT AS inhrelid, 0::BIGINT AS inhparent, 0 AS inhseqno, false AS inhdetachpending WHERE false`,
	`CREATE VIEW pg_policy AS SELECT 0::BIGINT AS oid, '' AS polname, 0::BIGINT AS polrelid, '' AS polcmd, true AS polpermissive,
		[]::BIGINT[] AS polroles, NULL::VARCHAR AS polqual, NULL::VARCHAR AS polwithcheck WHERE false`,
	`CREATE VIEW pg_statistic_ext AS SELECT 0::BIGINT AS oid, 0::BIGINT AS stxrelid, '' AS stxname, 0::BIGINT AS stxnamespace,
		0::BIGINT AS stxowner, 0 AS stxstattarget, []::INTEGER[] AS stxkeys, []::VARCHAR[] AS stxkind, NULL::VARCHAR AS stxexprs WHERE false`,
	`CREATE VIEW pg_publication AS SELECT 0::BIGINT AS oid, '' AS pubname, false AS puballtables, false AS pubinsert, false AS pubupdate,
		false AS pubdelete, false AS pubtruncate, false AS pubviaroot WHERE false`,
	`CREATE VIEW pg_publication_rel AS SELECT 0::BIGINT AS oid, 0::BIGINT AS prpubid, 0::BIGINT AS prrelid, NULL::VARCHAR AS prqual, []::INTEGER[] AS prattrs WHERE false`,
	`CREATE VIEW pg_publication_namespace AS SELECT 0::BIGINT AS oid, 0::BIGINT AS pnpubid, 0::BIGINT AS pnnspid WHERE false`,
	`CREATE VIEW pg_trigger AS SELECT 0::BIGINT AS oid, 0::BIGINT AS tgrelid, 0::BIGINT AS tgparentid, '' AS tgname, 0::BIGINT AS tgfoid,
		0 AS tgtype, '' AS tgenabled, false AS tgisinternal, 0::BIGINT AS tgconstraint WHERE false`,
	`CREATE VIEW pg_rewrite AS SELECT 0::BIGINT AS oid, '' AS rulename, 0::BIGINT AS ev_class, '' AS ev_type, '' AS ev_enabled, false AS is_instead WHERE false`,
	`CREATE VIEW pg_partitioned_table AS SELECT 0::BIGINT AS partrelid, '' AS partstrat, 0 AS partnatts WHERE false`,
	`CREATE VIEW pg_foreign_table AS SELECT 0::BIGINT AS ftrelid, 0::BIGINT AS ftserver, []::VARCHAR[] AS ftoptions WHERE false`,
	`CREATE VIEW pg_roles AS SELECT 10::BIGINT AS oid, 'loch' AS rolname, false AS rolsuper, false AS rolinherit, false AS rolcreaterole,
		false AS rolcreatedb, true AS rolcanlogin, -1 AS rolconnlimit, NULL::TIMESTAMP AS rolvaliduntil`,
}
