//go:build !duckdb_arrow

package query

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// ArrowResults says whether this build hands results over as Arrow: not
// without the build tag duckdb_arrow (see arrow.go).
const ArrowResults = false

// ArrowRecords fails: this build has no Arrow results (arrow.go).
func ArrowRecords(context.Context, driver.Conn, string) (*arrow.Schema, []arrow.RecordBatch, error) {
	return nil, nil, fmt.Errorf("query: this build has no Arrow results (build with -tags=duckdb_arrow): %w", errors.ErrUnsupported)
}
