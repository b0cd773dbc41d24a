package query

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

// TestColumnBytes is a measurement for bench/RESULTS.md (issue 39, target
// 4), run only when LOCH_COLBYTES is "DATASET_URL ROWS.parquet": it prints
// the stored bytes of each column of the loch dataset beside those of the
// same rows as Parquet, the file given (pyarrow's, from
// bench/sql/bench_inproc.py --dir) and the file DuckDB's own writer makes
// of it (COPY ... TO ... (FORMAT parquet), DuckDB's defaults), as JSON.
//
//	LOCH_COLBYTES="$DIR/lake/... $DIR/rows.parquet" go test -run TestColumnBytes -v ./query
func TestColumnBytes(t *testing.T) {
	args := strings.Fields(os.Getenv("LOCH_COLBYTES"))
	if len(args) != 2 {
		t.Skip(`LOCH_COLBYTES="DATASET_URL ROWS.parquet" measures column bytes`)
	}
	url, parquet := args[0], args[1]
	out := map[string]map[string]int64{"loch": {}, "pyarrow": {}, "duckdb": {}}
	ds, err := loch.Open(ctx, url)
	require.NoError(t, err)
	defer ds.Close()
	for _, c := range ds.Scan().Columns() {
		out["loch"][c.Name] = c.StoredBytes
	}
	db, err := sql.Open("duckdb", "")
	require.NoError(t, err)
	defer db.Close()
	duck := filepath.Join(t.TempDir(), "duckdb.parquet")
	_, err = db.ExecContext(ctx, fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s')) TO '%s' (FORMAT parquet)", quoteLit(parquet), quoteLit(duck)))
	require.NoError(t, err)
	for name, path := range map[string]string{"pyarrow": parquet, "duckdb": duck} {
		rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT path_in_schema, sum(total_compressed_size)::BIGINT FROM parquet_metadata('%s') GROUP BY 1", quoteLit(path)))
		require.NoError(t, err)
		for rows.Next() {
			var col string
			var n int64
			require.NoError(t, rows.Scan(&col, &n))
			out[name][col] = n
		}
		require.NoError(t, rows.Err())
		rows.Close()
		st, err := os.Stat(path)
		require.NoError(t, err)
		out[name]["(file)"] = st.Size()
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	fmt.Println(string(b))
}

func quoteLit(s string) string { return strings.ReplaceAll(s, "'", "''") }
