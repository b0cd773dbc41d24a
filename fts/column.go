package fts

import (
	"context"
	"fmt"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
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
type unit struct {
	reads []loch.Read
	slots []loch.Slot
	ids   []uint64
}

// locateBatch is the number of rows located at a time.
const locateBatch = 4096

// analyze analyses the rows at the given position ranges (sorted,
// disjoint) whose ids keep accepts (nil: all) on par goroutines into one
// Builder. Null rows are analysed as empty documents.
func (c *column) analyze(ctx context.Context, ranges [][2]int64, keep func(uint64) bool, par int) (*ftsindex.Builder, error) {
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	g, gctx := errgroup.WithContext(ctx)
	units := make(chan unit, par)
	g.Go(func() error {
		defer close(units)
		return c.plan(gctx, ranges, keep, units)
	})
	parts := make([]*ftsindex.Builder, par)
	for w := range par {
		parts[w] = ftsindex.NewBuilder()
		g.Go(func() error {
			cache := stems{}
			for u := range units {
				if err := c.fetch(gctx, u, parts[w], cache); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("analyse column %q of %s: %w", c.col.Name, c.sc.URL(), err)
	}
	for _, p := range parts[1:] {
		parts[0].Merge(p)
	}
	return parts[0], nil
}

// plan groups the rows of ranges into units, one per chunk.
func (c *column) plan(ctx context.Context, ranges [][2]int64, keep func(uint64) bool, out chan<- unit) error {
	cur := c.sc.SlotCursor(c.col.UID)
	var u unit
	var chunk loch.ChunkID
	have := false
	send := func() error {
		if len(u.ids) == 0 {
			return nil
		}
		select {
		case out <- u:
			u, have = unit{}, false
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var rows []loch.RowLoc
	for _, r := range ranges {
		for lo := r[0]; lo < r[1]; lo += locateBatch {
			var err error
			if rows, err = c.sc.LocateRange(lo, min(lo+locateBatch, r[1]), rows[:0]); err != nil {
				return err
			}
			for _, row := range rows {
				if keep != nil && !keep(row.ID) {
					continue
				}
				slot := cur.Slot(row)
				if !slot.Null() && (slot.Pieces() > 1 || !have || slot.Chunk(0) != chunk) {
					if err := send(); err != nil {
						return err
					}
					u.reads = c.sc.Reads(slot, false)
					chunk, have = slot.Chunk(0), true
				}
				u.slots = append(u.slots, slot)
				u.ids = append(u.ids, row.ID)
				if slot.Pieces() > 1 {
					if err := send(); err != nil {
						return err
					}
				}
			}
		}
	}
	return send()
}

// fetch reads a unit's chunk and adds its rows to b.
func (c *column) fetch(ctx context.Context, u unit, b *ftsindex.Builder, cache stems) error {
	got := make([]*loch.Fetched, len(u.reads))
	defer func() {
		for _, f := range got {
			if f != nil {
				f.Recycle()
			}
		}
	}()
	for i, r := range u.reads {
		f, err := c.sc.Fetch(ctx, r)
		if err != nil {
			return err
		}
		got[i] = f
	}
	var toks []ftsindex.Token
	for i, slot := range u.slots {
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
		b.Add(u.ids[i], toks)
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
