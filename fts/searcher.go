package fts

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lochdata/loch"
)

// Result is the answer of Search.
type Result struct {
	// Hits are the best rows, best first.
	Hits []Hit `json:"hits"`
	// Index is the key of the index used; "" when every row was analysed.
	Index string `json:"index,omitempty"`
	// Warnings say why an index was not used when one exists.
	Warnings []string `json:"warnings,omitempty"`
}

// Search answers a full-text search of the handle's version with the
// index of column if one serves it (Open), else by analysing every row.
// A stored index that cannot be read (missing or corrupt objects, a newer
// format) does not fail the search: every row is analysed, with a warning
// naming the object. Each call opens the index anew; a Searcher keeps it.
func Search(ctx context.Context, ds *loch.Dataset, column, query string, k int, opts Options) (*Result, error) {
	return NewSearcher(ds).Search(ctx, column, query, k, opts)
}

// Searcher answers the searches of one dataset handle as Search does,
// keeping each index it opened (one per column) for as long as it serves
// the handle's version. It is safe for concurrent use.
type Searcher struct {
	d    *loch.Dataset
	mu   sync.Mutex
	open map[string]*Index
}

// NewSearcher returns a Searcher of d.
func NewSearcher(d *loch.Dataset) *Searcher { return &Searcher{d: d, open: map[string]*Index{}} }

// Search is Search(ctx, d, ...) with the Searcher's indexes.
func (s *Searcher) Search(ctx context.Context, column, query string, k int, opts Options) (*Result, error) {
	if k < 1 {
		return nil, fmt.Errorf("full-text search: k = %d, want at least 1: %w", k, loch.ErrInvalidArgument)
	}
	if _, err := parse(query); err != nil {
		return nil, err
	}
	ix, warn, err := s.Index(ctx, column, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Index: ix.Key(), Warnings: warn}
	res.Hits, err = ix.Search(ctx, query, k, opts)
	return res, err
}

// Index returns the opened index that serves the handle's version for
// column, or, when none does or it cannot be read, an Index of every
// row analysed (with a warning in the second case).
func (s *Searcher) Index(ctx context.Context, column string, opts Options) (*Index, []string, error) {
	s.mu.Lock()
	ix := s.open[column]
	s.mu.Unlock()
	// An index of the version's own stays the one that serves it: no
	// listing needed (a rebuild replaces it under the same key).
	if ix != nil && ix.c.sc.Version() == s.d.Version() && ix.desc != nil && ix.desc.Version == s.d.Version() {
		return ix, nil, nil
	}
	key, err := Find(ctx, s.d, column)
	if err != nil && !errors.Is(err, ErrNoIndex) {
		return nil, nil, err
	}
	if ix != nil && ix.key == key && ix.c.sc.Version() == s.d.Version() {
		return ix, nil, nil
	}
	var warn []string
	if key != "" {
		ix, err = Open(ctx, s.d, column, opts)
		if err != nil && !isUnusable(err) {
			return nil, nil, err
		}
		if err != nil {
			warn = append(warn, fmt.Sprintf("full-text index unusable, every row analysed: %v", err))
		}
	}
	if key == "" || err != nil {
		if ix, err = openExact(ctx, s.d, column, opts); err != nil {
			return nil, nil, err
		}
	}
	s.mu.Lock()
	s.open[column] = ix
	s.mu.Unlock()
	return ix, warn, nil
}
