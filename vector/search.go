package vector

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lochdata/loch"
)

// Search answers a search of the handle's version with the index of
// column and metric if one serves it (Open), else exactly. A stored index
// that cannot be read (missing or corrupt objects) does not fail the
// search: it is answered exactly, with a warning naming the object. Each
// call opens the index anew; a Searcher keeps it between calls.
func Search(ctx context.Context, ds *loch.Dataset, column string, m Metric, queries [][]float32, k int, opts Options) (*Result, error) {
	return NewSearcher(ds).Search(ctx, column, m, queries, k, opts)
}

// Searcher answers the searches of one dataset handle as Search does,
// keeping each index it opened (one per column and metric) for as long as
// it is the index that serves the handle's version (Find, which costs a
// listing of indexes/, is asked each time). It is safe for concurrent use.
type Searcher struct {
	d    *loch.Dataset
	mu   sync.Mutex
	open map[string]*Index // by column and metric
}

// NewSearcher returns a Searcher of d.
func NewSearcher(d *loch.Dataset) *Searcher { return &Searcher{d: d, open: map[string]*Index{}} }

// Search is Search(ctx, d, ...) with the Searcher's indexes.
func (s *Searcher) Search(ctx context.Context, column string, m Metric, queries [][]float32, k int, opts Options) (*Result, error) {
	if _, err := ParseMetric(string(m)); err != nil {
		return nil, err
	}
	if err := checkK(k); err != nil {
		return nil, err
	}
	res := &Result{}
	ix, err := s.index(ctx, column, m, opts)
	if err == nil {
		// An ivf-pq index reads its lists as it searches: a list found
		// missing or corrupt then is a fallback as at open.
		if res.Hits, err = ix.Search(ctx, queries, k, opts); err == nil {
			res.Index = ix.Key()
			return res, nil
		}
	}
	switch {
	case errors.Is(err, ErrNoIndex):
	case errors.Is(err, loch.ErrCorrupt) || errors.Is(err, loch.ErrNotFound):
		res.Warnings = append(res.Warnings, fmt.Sprintf("vector index unusable, searched exactly: %v", err))
	default:
		return nil, err
	}
	res.Hits, err = Exact(ctx, s.d.Scan(), column, m, queries, k, opts)
	return res, err
}

// index returns the open index that serves the handle's version.
func (s *Searcher) index(ctx context.Context, column string, m Metric, opts Options) (*Index, error) {
	key, err := Find(ctx, s.d, column, m)
	if err != nil {
		return nil, err
	}
	name := column + "\x00" + string(m)
	s.mu.Lock()
	ix := s.open[name]
	s.mu.Unlock()
	if ix != nil && ix.key == key && ix.c.sc.Version() == s.d.Version() {
		return ix, nil
	}
	if ix, err = Open(ctx, s.d, column, m, opts); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.open[name] = ix
	s.mu.Unlock()
	return ix, nil
}

// Result is the answer of Search.
type Result struct {
	// Hits holds, for each query vector, its nearest rows, nearest first.
	Hits [][]Hit `json:"hits"`
	// Index is the key of the index used; "" for an exact search.
	Index string `json:"index,omitempty"`
	// Warnings say why an index was not used when one exists.
	Warnings []string `json:"warnings,omitempty"`
}
