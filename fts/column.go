package fts

import (
	"context"
	"fmt"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/colscan"
	"github.com/lochdata/loch/internal/ftsindex"
	"github.com/lochdata/loch/schema"
)

// column is a text or json column of a loaded scan.
type column struct {
	sc  *loch.Scan
	col schema.Column
}

// openColumn loads the scan's fragments and checks the column.
func openColumn(ctx context.Context, sc *loch.Scan, name string, par int) (*column, error) {
	if err := sc.Load(ctx, par); err != nil {
		return nil, fmt.Errorf("full-text search of %s: %w", sc.URL(), err)
	}
	s := sc.Schema()
	for _, c := range s.Columns {
		if c.Name != name {
			continue
		}
		if (c.DType != schema.Text && c.DType != schema.JSON) || len(c.Shape) > 0 {
			return nil, fmt.Errorf("full-text search of %s: column %q is %s, want a text or json column: %w", sc.URL(), name, c.DType, loch.ErrInvalidArgument)
		}
		return &column{sc: sc, col: c}, nil
	}
	return nil, fmt.Errorf("full-text search of %s: no column %q: %w", sc.URL(), name, loch.ErrNotFound)
}

// unit is the rows of one chunk to fetch.
type unit = colscan.Unit

// analyze analyses the rows at the given position ranges (sorted,
// disjoint) whose ids keep accepts (nil: all) on par goroutines into one
// Builder. Null rows are analysed as empty documents.
func (c *column) analyze(ctx context.Context, ranges [][2]int64, keep func(uint64) bool, par int) (*ftsindex.Builder, error) {
	par = colscan.Parallelism(par)
	parts := make([]*ftsindex.Builder, par)
	for w := range parts {
		parts[w] = ftsindex.NewBuilder()
	}
	err := colscan.Each(ctx, c.sc, c.col.UID, ranges, keep, false, par, func(ctx context.Context, w int, units <-chan unit) error {
		cache := stems{}
		for u := range units {
			if err := c.fetch(ctx, u, parts[w], cache); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("analyse column %q of %s: %w", c.col.Name, c.sc.URL(), err)
	}
	for _, p := range parts[1:] {
		parts[0].Merge(p)
	}
	return parts[0], nil
}

// fetch reads a unit's chunk and adds its rows to b.
func (c *column) fetch(ctx context.Context, u unit, b *ftsindex.Builder, cache stems) error {
	got, err := colscan.Fetch(ctx, c.sc, u.Reads)
	if err != nil {
		return err
	}
	defer colscan.Recycle(got)
	var toks []ftsindex.Token
	for i, slot := range u.Slots {
		toks = toks[:0]
		if !slot.Null() {
			s, err := c.sc.Sample(slot, got)
			if err != nil {
				return err
			}
			if !s.Null {
				toks = c.tokens(toks, s.Data, cache)
			}
		}
		b.Add(u.IDs[i], toks)
	}
	return nil
}

// tokens analyses one sample of the column.
func (c *column) tokens(dst []ftsindex.Token, data []byte, cache stems) []ftsindex.Token {
	if c.col.DType == schema.JSON {
		return english.json(dst, data, cache)
	}
	dst, _ = english.text(dst, data, 0, cache)
	return dst
}
