package vector

import (
	"context"
	"fmt"
	"runtime"

	"github.com/viterin/vek/vek32"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
)

// Options tune a search. The zero value is a plain search on all cores.
type Options struct {
	// Allow, when set, admits only the rows whose ids it holds (a
	// filter, applied before the top k is taken).
	Allow *RowSet
	// Parallelism is the number of goroutines; 0 means GOMAXPROCS.
	Parallelism int
	// NProbe is the number of an index's lists a query scans; 0 means the
	// index's default. Exact search ignores it.
	NProbe int
	// Rerank is the number of rows an ivf-pq index ranks by their codes
	// and then re-ranks by their full vectors (read by range); 0 means
	// max(400, 40 x k, rows / 10,000) (bench/RESULTS.md: recall@10 0.80
	// at 100, 0.99 at 400 on 1M x 128; 0.87 at 400, 0.97 at 1,000 on
	// 10M x 128).
	Rerank int
	// Cache, when set, is the chunk cache an ivf-pq index reads its lists
	// through (ranges of cached objects; a miss fetches the object whole
	// and caches it); nil reads ranges from the store.
	Cache chunkcache.Cache
	// PlainPrefilter makes a filtered index search scan nprobe lists (and
	// more only until it has k rows) instead of nprobe divided by the
	// filter's share of the rows (see Index.Search): for measurements.
	PlainPrefilter bool
}

func (o Options) parallelism() int {
	if o.Parallelism > 0 {
		return o.Parallelism
	}
	return runtime.GOMAXPROCS(0)
}

// checkK validates k.
func checkK(k int) error {
	if k <= 0 {
		return fmt.Errorf("k = %d, want k >= 1: %w", k, loch.ErrInvalidArgument)
	}
	return nil
}

// Exact returns, for each query vector, the k rows of the scan's snapshot
// nearest to it in column by metric, by comparing every live row: the
// column's chunks are streamed through the scan (memory bounded by a few
// chunks per goroutine whatever the dataset's size). The scan is loaded
// if it is not.
func Exact(ctx context.Context, sc *loch.Scan, column string, m Metric, queries [][]float32, k int, opts Options) ([][]Hit, error) {
	if err := checkK(k); err != nil {
		return nil, err
	}
	if _, err := ParseMetric(string(m)); err != nil {
		return nil, err
	}
	c, err := openColumn(ctx, sc, column, opts.parallelism())
	if err != nil {
		return nil, err
	}
	if err := checkQueries(queries, c.dim); err != nil {
		return nil, fmt.Errorf("vector search of %s column %q: %w", sc.URL(), column, err)
	}
	qs := prepareAll(m, queries)
	tops := newTops(opts.parallelism(), len(qs), k)
	err = c.each(ctx, [][2]int64{{0, sc.Len()}}, opts.Allow.keep(), opts.parallelism(), func(w int, b batch) error {
		scoreBatch(m, qs, tops[w], b, c.dim)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vector search of %s column %q: %w", sc.URL(), column, err)
	}
	return mergeTops(tops), nil
}

func prepareAll(m Metric, queries [][]float32) []query {
	qs := make([]query, len(queries))
	for i, q := range queries {
		qs[i] = prepare(m, q)
	}
	return qs
}

// newTops makes one top-k per worker per query.
func newTops(workers, queries, k int) [][]*topK {
	tops := make([][]*topK, workers)
	for w := range tops {
		tops[w] = make([]*topK, queries)
		for i := range tops[w] {
			tops[w][i] = &topK{k: k}
		}
	}
	return tops
}

// scoreBatch adds a batch's rows to each query's top k.
func scoreBatch(m Metric, qs []query, tops []*topK, b batch, dim int) {
	for i, id := range b.ids {
		x := b.vecs[i*dim : (i+1)*dim]
		var xx float32
		if needsNorm(m) {
			xx = vek32.Dot(x, x)
		}
		for j := range qs {
			tops[j].add(Hit{RowID: id, Distance: distance(m, &qs[j], x, xx)})
		}
	}
}

// mergeTops merges the workers' top k of each query.
func mergeTops(tops [][]*topK) [][]Hit {
	out := make([][]Hit, len(tops[0]))
	for j := range out {
		t := tops[0][j]
		for w := 1; w < len(tops); w++ {
			for _, h := range tops[w][j].h {
				t.add(h)
			}
		}
		out[j] = t.sorted()
	}
	return out
}
