package pgwire

// pgCatalogSetup completes DuckDB's pg_catalog views and functions with
// what psql (\dt, \d), pgx and psycopg ask for and DuckDB 1.5 lacks:
// missing columns of pg_class, and empty views of the catalogs of what
// loch has none of (inheritance, policies, triggers, publications,
// extended statistics). They are made in the mirror's schema main, which
// its search path finds before DuckDB's pg_catalog, since rewriteSystem
// drops the pg_catalog. qualifier of every name.
var pgCatalogSetup = []string{
	`CREATE MACRO pg_get_userbyid(id) AS 'loch'`,
	// loch_table_url's columns, for Describe (tableurl.go answers it).
	`CREATE MACRO loch_table_url(name) AS TABLE (SELECT NULL::VARCHAR AS "table", NULL::VARCHAR AS url, NULL::VARCHAR AS ref, NULL::VARCHAR AS version),
		(name, ref) AS TABLE (SELECT NULL::VARCHAR AS "table", NULL::VARCHAR AS url, NULL::VARCHAR AS ref, NULL::VARCHAR AS version)`,
	`CREATE MACRO pg_get_expr(e, r) AS NULL::VARCHAR, (e, r, pretty) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_statisticsobjdef_columns(id) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_triggerdef(id) AS NULL::VARCHAR, (id, pretty) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_ruledef(id) AS NULL::VARCHAR, (id, pretty) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_partkeydef(id) AS NULL::VARCHAR`,
	`CREATE MACRO pg_get_partition_constraintdef(id) AS NULL::VARCHAR`,
	`CREATE MACRO pg_encoding_to_char(e) AS 'UTF8'`,
	`CREATE MACRO pg_relation_is_publishable(id) AS false`,
	`CREATE MACRO array_upper(a, d) AS len(a)`,
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
