//go:build duckdb_arrow

package query

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"
)

// ArrowResults says whether this build hands results over as Arrow
// (ArrowRecords): the build tag duckdb_arrow, which duckdb-go's Arrow
// interface needs, is set.
const ArrowResults = true

// ArrowRecords runs sql on conn (as Raw hands them over) and returns its
// result as Arrow: the schema and the record batches, one per DuckDB
// chunk, converted by DuckDB in C (no copy per value in Go) and owned by
// the caller, who releases each batch.
func ArrowRecords(ctx context.Context, conn driver.Conn, sql string) (*arrow.Schema, []arrow.RecordBatch, error) {
	a, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return nil, nil, fmt.Errorf("query: Arrow results: %w", err)
	}
	rr, err := a.QueryContext(ctx, sql)
	if err != nil {
		return nil, nil, err
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		for _, r := range recs {
			r.Release()
		}
		return nil, nil, err
	}
	return rr.Schema(), recs, nil
}
