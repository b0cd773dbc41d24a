package query

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

// TestQueriesOnlyRead: an engine (not sandboxed) runs reads only, as
// DuckDB classifies its statements: COPY TO, ATTACH, CREATE TABLE AS in
// DuckDB's memory, INSTALL (which tried the network) and the rest are
// refused with a message that says where loch does that, and leave
// nothing behind; SELECTs, the read forms DuckDB has (DESCRIBE, PRAGMA
// table_info, PIVOT ... IN, UNPIVOT) and EXPLAIN run, files read
// included (issue 35 item 11).
func TestQueriesOnlyRead(t *testing.T) {
	dir := t.TempDir()
	url := filepath.Join(dir, "ds")
	d := makeImages(t, url, mustOpen(t, url), 10)
	defer d.Close()
	csv := filepath.Join(dir, "labels.csv")
	require.NoError(t, os.WriteFile(csv, []byte("a,b\n1,2\n"), 0o600))
	out := filepath.Join(dir, "out")
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()

	for q, msg := range map[string]string{
		"COPY (SELECT * FROM ds) TO '" + out + ".csv'":          "not COPY: COPY writes or reads files as a table: write a query's result with loch query URL|ROOT SQL --format csv|json|parquet --out FILE",
		"COPY ds TO '" + out + ".parquet' (FORMAT parquet)":     "not COPY",
		"/* first */ COPY (SELECT 1) TO '" + out + "2.csv'":     "not COPY",
		"ATTACH '" + out + ".db'":                               "not ATTACH: read other datasets with loch_scan('URL')",
		"CREATE TABLE t AS SELECT * FROM ds":                    "not CREATE: loch sql ROOT writes a catalog's tables",
		"CREATE VIEW v AS SELECT 1":                             "not CREATE",
		"CREATE MACRO m(x) AS x + 1":                            "not CREATE",
		"INSTALL httpfs":                                        "not INSTALL or LOAD: loch never installs or loads DuckDB extensions",
		"LOAD httpfs":                                           "not INSTALL or LOAD",
		"SET threads = 1":                                       "not SET",
		"PRAGMA threads = 1":                                    "not SET",
		"EXPORT DATABASE '" + out + "-export'":                  "not EXPORT",
		"-- a comment\nEXPORT DATABASE '" + out + "-export2'":   "not EXPORT",
		"CALL pragma_version()":                                 "not CALL: read a table function with SELECT * FROM f(...)",
		"BEGIN":                                                 "not BEGIN, COMMIT or ROLLBACK",
		"INSERT INTO ds VALUES (1)":                             "ds is not an table (queries only read: SELECT, EXPLAIN)",
		"DELETE FROM ds":                                        "queries only read",
		"EXPLAIN ANALYZE COPY (SELECT 1) TO '" + out + "3.csv'": "EXPLAIN: query \"COPY",
		"SELECT 1; COPY (SELECT 1) TO '" + out + "4.csv'":       "several statements, want one",
	} {
		_, err := e.Write(ctx, q, FormatCSV, 0, io.Discard)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, q)
		require.ErrorContains(t, err, msg, q)
		rows, done, err := e.Rows(ctx, q)
		if err == nil {
			rows.Close()
			done()
		}
		require.ErrorIs(t, err, loch.ErrInvalidArgument, q)
	}
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, f := range left {
		names = append(names, f.Name())
	}
	require.ElementsMatch(t, []string{"ds", "labels.csv"}, names, "nothing written")
	_, err = e.Write(ctx, "SELECT * FROM t", FormatCSV, 0, io.Discard)
	require.ErrorContains(t, err, "Table with name t does not exist", "no table made in DuckDB's memory")

	for _, q := range []string{
		"SELECT count(*) FROM ds",
		"SELECT * FROM read_csv('" + csv + "')",
		"DESCRIBE ds",
		"SUMMARIZE SELECT 1 AS a",
		"PRAGMA table_info('ds')",
		"PIVOT ds ON label IN ('cat', 'dog')",
		"UNPIVOT (SELECT 1 AS a, 2 AS b) ON a, b",
		"EXPLAIN SELECT * FROM ds",
		"EXPLAIN ANALYZE SELECT count(*) FROM ds",
		"-- a comment\nEXPLAIN SELECT 1",
	} {
		_, err := e.Write(ctx, q, FormatCSV, 0, io.Discard)
		require.NoError(t, err, q)
	}
	// loch's own COPY of a result still writes it.
	_, err = e.Write(ctx, "SELECT label FROM ds", FormatParquet, 0, io.Discard)
	require.NoError(t, err)
}
