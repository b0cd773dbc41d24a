package query

import (
	"context"
	"fmt"
	"strings"

	"github.com/lochdata/loch"
)

// Filter returns the ids of the rows of d's current version that pass
// where, an SQL boolean expression over the table ds (as after WHERE in
// "SELECT ... FROM ds WHERE ..."), in row order: the allowed set of a
// filtered vector search (package vector). An empty where allows every
// row and returns nil.
func Filter(ctx context.Context, d *loch.Dataset, where string, opts Options) ([]uint64, error) {
	if strings.TrimSpace(where) == "" {
		return nil, nil
	}
	sel, err := Select(ctx, d, fmt.Sprintf("SELECT %s FROM %s WHERE %s", RowIDColumn, TableName, where), opts)
	if err != nil {
		return nil, fmt.Errorf("filter %s: %w", oneLineSQL(where), err)
	}
	if sel.RowIDs == nil {
		return []uint64{}, nil
	}
	return sel.RowIDs, nil
}
