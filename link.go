package loch

import (
	"context"
	"fmt"

	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// Fetch reads the object that a link column's row i refers to, through the
// storage layer: a local path (relative paths are relative to the working
// directory), file://, mem://, s3://, gs:// or az:// URL. Credentials come
// from the same standard places as for datasets.
func (c *ColumnReader) Fetch(ctx context.Context, i int64) ([]byte, error) {
	if c.col.Kind != schema.Link {
		return nil, fmt.Errorf("%s: column %q is a %s column, not a link column: %w", c.d.url, c.col.Name, c.col.Kind, ErrInvalidArgument)
	}
	s, err := c.Read(ctx, i, nil)
	if err != nil {
		return nil, err
	}
	if s.Null {
		return nil, fmt.Errorf("%s: column %q row %d: the link is empty: %w", c.d.url, c.col.Name, i, ErrNotFound)
	}
	b, err := storage.ReadURL(ctx, string(s.Data))
	if err != nil {
		return nil, fmt.Errorf("%s: column %q row %d: follow link %q: %w", c.d.url, c.col.Name, i, string(s.Data), err)
	}
	return b, nil
}
