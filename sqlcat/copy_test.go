package sqlcat

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

// TestCopyWritesOnlyTheResult: COPY (query) TO 'file' is loch sql's one
// way to write a file, offered on purpose: the result of a read, in the
// format of FORMAT or of the extension, at a path relative to FileBase.
// DuckDB's other statements that write or load (its COPY of a table or
// FROM a file, ATTACH, INSTALL, SET, a COPY whose query writes) are
// refused, saying where loch does that, and leave nothing behind (issue
// 35 item 11: loch sql's SELECT path ran them).
func TestCopyWritesOnlyTheResult(t *testing.T) {
	dir := t.TempDir()
	s := newSession(t, filepath.Join(dir, "lake"))
	s.FileBase = dir
	run(t, s, "CREATE TABLE t (id BIGINT, word TEXT)")
	run(t, s, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")

	r := run(t, s, "COPY (SELECT id, word FROM t WHERE id > 1 ORDER BY id) TO 'out.csv'")
	require.Equal(t, Result{Statement: "COPY", Rows: 2, File: "out.csv"}, r)
	require.Equal(t, "COPY 2 rows to out.csv", r.String())
	b, err := os.ReadFile(filepath.Join(dir, "out.csv"))
	require.NoError(t, err)
	require.Equal(t, "id,word\n2,b\n3,c\n", string(b))
	run(t, s, "COPY (SELECT id FROM t) TO 'out.json'")
	b, err = os.ReadFile(filepath.Join(dir, "out.json"))
	require.NoError(t, err)
	require.Equal(t, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n", string(b))
	run(t, s, "COPY (SELECT * FROM t) TO 'out.data' (FORMAT parquet)")
	require.Len(t, rowsOf(t, s, "SELECT * FROM read_parquet('"+filepath.Join(dir, "out.data")+"')"), 3)

	for stmt, msg := range map[string]string{
		"COPY t TO 'table.csv'": "loch sql's COPY is COPY (query) TO 'file'",
		"COPY t FROM 'out.csv'": "loch sql's COPY is COPY (query) TO 'file'",
		"COPY (SELECT * FROM t) TO 'part' (FORMAT parquet, PARTITION_BY id)": "want )",
		"COPY (SELECT * FROM t) TO 'x.txt' (FORMAT text)":                    "FORMAT text: want csv, json or parquet",
		"COPY (COPY (SELECT 1) TO 'inner.csv') TO 'outer.csv'":               "not COPY",
		"ATTACH 'other.db'":          "not ATTACH",
		"INSTALL httpfs":             "not INSTALL or LOAD",
		"SET threads = 1":            "not SET",
		"EXPORT DATABASE 'exported'": "not EXPORT",
	} {
		mustRefuse(t, s, stmt, loch.ErrInvalidArgument, msg)
	}
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, f := range left {
		names = append(names, f.Name())
	}
	require.ElementsMatch(t, []string{"lake", "out.csv", "out.json", "out.data"}, names, "nothing else written")
	require.False(t, IsQuery("COPY (SELECT 1) TO 'x.csv'"), "COPY writes")
}
