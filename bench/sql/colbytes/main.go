// Command colbytes prints the stored bytes of each column of a loch
// dataset beside those of the same rows as Parquet: the file given
// (pyarrow's, from bench_inproc.py) and the file DuckDB's own writer makes
// of it (COPY ... TO ... (FORMAT parquet), DuckDB's defaults), as one
// JSON object (issue 39, target 4: bench/RESULTS.md, SQL section).
//
//	go run ./bench/sql/colbytes DATASET_URL ROWS.parquet
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: colbytes DATASET_URL ROWS.parquet")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "colbytes:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, url, parquet string) error {
	out := map[string]map[string]int64{"loch": {}, "pyarrow": {}, "duckdb": {}}
	ds, err := loch.Open(ctx, url)
	if err != nil {
		return err
	}
	defer ds.Close()
	for _, c := range ds.Scan().Columns() {
		out["loch"][c.Name] = c.StoredBytes
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	duck := filepath.Join(filepath.Dir(parquet), "duckdb.parquet")
	q := fmt.Sprintf("COPY (SELECT * FROM read_parquet('%s')) TO '%s' (FORMAT parquet)", quote(parquet), quote(duck))
	if _, err := db.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	for name, path := range map[string]string{"pyarrow": parquet, "duckdb": duck} {
		if err := columnBytes(ctx, db, path, out[name]); err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		out[name]["(file)"] = st.Size()
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}

// columnBytes adds each column's compressed bytes in a Parquet file (its
// column chunks', pages and headers) to into.
func columnBytes(ctx context.Context, db *sql.DB, path string, into map[string]int64) error {
	rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT path_in_schema, sum(total_compressed_size)::BIGINT FROM parquet_metadata('%s') GROUP BY 1", quote(path)))
	if err != nil {
		return fmt.Errorf("parquet_metadata(%s): %w", path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var col string
		var n int64
		if err := rows.Scan(&col, &n); err != nil {
			return err
		}
		into[col] = n
	}
	return rows.Err()
}

func quote(s string) string { return strings.ReplaceAll(s, "'", "''") }
