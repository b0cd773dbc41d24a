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
// listing of indexes/, is asked each time, except by SearchOpen when the
// index it holds is the handle's version's own: no other can serve that
// version). It is safe for concurrent use.
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

// SearchOpen is Search when the Searcher already holds the index that
// serves the handle's version open (an earlier Search opened it), the
// search then as short as the index makes it; otherwise, or when that
// search fails, it returns ok false, having done nothing, and the caller
// makes the Search (which may open an index or search exactly: for
// instance where it can be interrupted).
func (s *Searcher) SearchOpen(ctx context.Context, column string, m Metric, queries [][]float32, k int, opts Options) (res *Result, ok bool) {
	if checkK(k) != nil {
		return nil, false
	}
	ix := s.held(column, m, "")
	if ix == nil {
		key, err := Find(ctx, s.d, column, m)
		if err != nil {
			return nil, false
		}
		if ix = s.held(column, m, key); ix == nil {
			return nil, false
		}
	}
	hits, err := ix.Search(ctx, queries, k, opts)
	if err != nil {
		return nil, false
	}
	return &Result{Hits: hits, Index: ix.Key()}, true
}

// index returns the open index that serves the handle's version.
func (s *Searcher) index(ctx context.Context, column string, m Metric, opts Options) (*Index, error) {
	key, err := Find(ctx, s.d, column, m)
	if err != nil {
		return nil, err
	}
	if ix := s.held(column, m, key); ix != nil {
		return ix, nil
	}
	ix, err := Open(ctx, s.d, column, m, opts)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.open[column+"\x00"+string(m)] = ix
	s.mu.Unlock()
	return ix, nil
}

// held returns the index of column and metric that the Searcher holds
// open when it is the one at key for the handle's version, else nil. Key
// "" asks for the handle's version's own index (Find's answer whenever
// it holds one), found without Find.
func (s *Searcher) held(column string, m Metric, key string) *Index {
	s.mu.Lock()
	ix := s.open[column+"\x00"+string(m)]
	s.mu.Unlock()
	v := s.d.Version()
	if ix == nil || ix.c.sc.Version() != v {
		return nil
	}
	if ix.key == key || key == "" && ix.desc.Version == v {
		return ix
	}
	return nil
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
