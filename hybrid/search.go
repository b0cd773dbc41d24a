package hybrid

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/vector"
)

// Query is one hybrid search: a query vector, a full-text query, or both.
type Query struct {
	// Vector is the query vector; nil leaves the vector side out.
	Vector []float32
	// VectorColumn is the embedding column searched; "" means the
	// dataset's only embedding column (a fixed [d] float column).
	VectorColumn string
	// Metric is the vector side's distance; "" means vector.Cosine.
	Metric vector.Metric
	// Text is the full-text query (docs/search.md); "" leaves the text
	// side out.
	Text string
	// TextColumn is the text or json column searched; "" means the
	// dataset's only text column (else its only json column).
	TextColumn string
	// K is the number of rows answered.
	K int
	// Window is the number of rows each side ranks before fusion; 0 means
	// K. A wider window lets a row found by one side low down rise with
	// the other's help.
	Window int
	// Fusion says how the rankings are fused; the zero value is RRF.
	Fusion Fusion
}

// Options are how a hybrid search runs.
type Options struct {
	// Allow, when set, admits only its rows on both sides (applied before
	// each side's top rows are taken); query.Filter makes it of an SQL
	// condition.
	Allow *vector.RowSet
	// Parallelism is the number of goroutines; 0 means GOMAXPROCS.
	Parallelism int
	// Cache, when set, is the chunk cache indexes are read through.
	Cache chunkcache.Cache
	// NProbe and Rerank are the vector index's (vector.Options).
	NProbe, Rerank int
	// Exact compares every row's vector instead of using an index.
	Exact bool
}

// Result is the answer of Search.
type Result struct {
	// Version is the version searched.
	Version string `json:"version"`
	// Query is the search, its columns and metric resolved.
	Query Query `json:"-"`
	// Hits are the best rows, best first.
	Hits []Hit `json:"hits"`
	// VectorIndex and TextIndex are the keys of the indexes used; "" for
	// an exact search or a side left out.
	VectorIndex string `json:"vector_index"`
	TextIndex   string `json:"text_index"`
	// Warnings say why an index was not used when one exists.
	Warnings []string `json:"warnings"`
}

// RowIDs are the hits' row ids, best first.
func (r *Result) RowIDs() []uint64 {
	out := make([]uint64, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.RowID
	}
	return out
}

// Searcher answers the hybrid searches of one dataset handle, keeping the
// indexes it opened between calls (through a vector.Searcher and an
// fts.Searcher). It is safe for concurrent use.
type Searcher struct {
	d    *loch.Dataset
	vec  *vector.Searcher
	text *fts.Searcher
}

// NewSearcher returns a Searcher of d.
func NewSearcher(d *loch.Dataset) *Searcher {
	return NewSearcherWith(d, vector.NewSearcher(d), fts.NewSearcher(d))
}

// NewSearcherWith returns a Searcher of d that searches with vs and ts
// (searchers of d), sharing the indexes they keep.
func NewSearcherWith(d *loch.Dataset, vs *vector.Searcher, ts *fts.Searcher) *Searcher {
	return &Searcher{d: d, vec: vs, text: ts}
}

// Search answers a hybrid search of ds's version (see the package
// documentation). Each call opens the indexes anew; a Searcher keeps them.
func Search(ctx context.Context, ds *loch.Dataset, q Query, opts Options) (*Result, error) {
	return NewSearcher(ds).Search(ctx, q, opts)
}

// Search is Search(ctx, d, ...) with the Searcher's indexes.
func (s *Searcher) Search(ctx context.Context, q Query, opts Options) (*Result, error) {
	q, err := s.resolve(q)
	if err != nil {
		return nil, err
	}
	res := &Result{Version: s.d.Version(), Query: q}
	window := q.Window
	if window == 0 {
		window = q.K
	}
	var vec []vector.Hit
	if q.Vector != nil {
		if vec, err = s.searchVector(ctx, q, window, opts, res); err != nil {
			return nil, err
		}
	}
	var text []fts.Hit
	if q.Text != "" {
		topts := fts.Options{Parallelism: opts.Parallelism, Cache: opts.Cache, Allow: opts.Allow}
		tr, err := s.text.Search(ctx, q.TextColumn, q.Text, window, topts)
		if err != nil {
			return nil, err
		}
		text, res.TextIndex = tr.Hits, tr.Index
		res.Warnings = append(res.Warnings, tr.Warnings...)
	}
	if res.Hits, err = Fuse(vec, text, q.K, q.Fusion); err != nil {
		return nil, err
	}
	return res, nil
}

// searchVector runs the vector side.
func (s *Searcher) searchVector(ctx context.Context, q Query, window int, opts Options, res *Result) ([]vector.Hit, error) {
	vopts := vector.Options{Allow: opts.Allow, Parallelism: opts.Parallelism, NProbe: opts.NProbe, Rerank: opts.Rerank, Cache: opts.Cache}
	if opts.Exact {
		hits, err := vector.Exact(ctx, s.d.Scan(), q.VectorColumn, q.Metric, [][]float32{q.Vector}, window, vopts)
		if err != nil {
			return nil, err
		}
		return hits[0], nil
	}
	vr, err := s.vec.Search(ctx, q.VectorColumn, q.Metric, [][]float32{q.Vector}, window, vopts)
	if err != nil {
		return nil, err
	}
	res.VectorIndex = vr.Index
	res.Warnings = append(res.Warnings, vr.Warnings...)
	return vr.Hits[0], nil
}

// resolve checks q and fills in its defaults: columns, metric, fusion.
func (s *Searcher) resolve(q Query) (Query, error) {
	fail := func(format string, args ...any) (Query, error) {
		return q, fmt.Errorf("hybrid search of %s: %s: %w", s.d.URL(), fmt.Sprintf(format, args...), loch.ErrInvalidArgument)
	}
	if q.K < 1 {
		return fail("k = %d, want k >= 1", q.K)
	}
	if q.Window != 0 && q.Window < q.K {
		return fail("window = %d, want 0 (k) or at least k = %d", q.Window, q.K)
	}
	if strings.TrimSpace(q.Text) == "" {
		q.Text = ""
	}
	if q.Vector == nil && q.Text == "" {
		return fail("no query: want a query vector, a text query or both")
	}
	if q.Fusion.Method == "" {
		q.Fusion.Method = MethodRRF
	}
	if err := q.Fusion.check(); err != nil {
		return q, err
	}
	if q.Metric == "" {
		q.Metric = vector.Cosine
	}
	var err error
	if q.Vector != nil && q.VectorColumn == "" {
		if q.VectorColumn, err = onlyColumn(s.d, "embedding", vector.Searchable); err != nil {
			return q, err
		}
	}
	if q.Text != "" && q.TextColumn == "" {
		what, ok := "text", ofDType(schema.Text)
		if len(columnsOf(s.d, ok)) == 0 {
			what, ok = "text or json", ofDType(schema.JSON) // no text column: the only json column
		}
		if q.TextColumn, err = onlyColumn(s.d, what, ok); err != nil {
			return q, err
		}
	}
	return q, nil
}

// ofDType accepts the columns of one value (no shape) of dtype dt.
func ofDType(dt schema.DType) func(schema.Column) bool {
	return func(c schema.Column) bool { return c.DType == dt && len(c.Shape) == 0 }
}

// columnsOf are the names of d's columns that ok accepts.
func columnsOf(d *loch.Dataset, ok func(schema.Column) bool) []string {
	var names []string
	for _, c := range d.Schema().Columns {
		if ok(c) {
			names = append(names, c.Name)
		}
	}
	return names
}

// onlyColumn is the name of d's one column that ok accepts.
func onlyColumn(d *loch.Dataset, what string, ok func(schema.Column) bool) (string, error) {
	names := columnsOf(d, ok)
	if len(names) != 1 {
		return "", fmt.Errorf("hybrid search of %s: name the %s column: the dataset has %d (%s): %w",
			d.URL(), what, len(names), strings.Join(names, ", "), loch.ErrInvalidArgument)
	}
	return names[0], nil
}

// Selection is the answer as a selection of its version: the hits' rows
// in fused order, its SQL the same search as a hybrid_search call (where
// is the SQL filter the search's Allow came from, "" for none).
func (r *Result) Selection(where string) *loch.Selection {
	return &loch.Selection{Version: r.Version, SQL: r.SQL(where), RowIDs: r.RowIDs()}
}

// SQL is the query over the SQL table function hybrid_search that
// answers the same search (docs/search.md), where its filter.
func (r *Result) SQL(where string) string {
	q := r.Query
	vec := "NULL"
	if q.Vector != nil {
		parts := make([]string, len(q.Vector))
		for i, f := range q.Vector {
			parts[i] = strconv.FormatFloat(float64(f), 'g', -1, 32)
		}
		vec = "[" + strings.Join(parts, ", ") + "]"
	}
	text := "NULL"
	if q.Text != "" {
		text = quote(q.Text)
	}
	args := []string{quote(q.VectorColumn), vec, quote(q.TextColumn), text, fmt.Sprintf("k := %d", q.K)}
	if q.Window != 0 {
		args = append(args, fmt.Sprintf("rank_window := %d", q.Window))
	}
	if q.Vector != nil {
		args = append(args, "metric := "+quote(string(q.Metric)))
	}
	if where != "" {
		args = append(args, "filter := "+quote(where))
	}
	if q.Fusion.Method == MethodWeighted {
		args = append(args, "fusion := 'weighted'", "weight := "+strconv.FormatFloat(q.Fusion.Weight, 'g', -1, 64))
	} else if q.Fusion.RRFK != 0 && q.Fusion.RRFK != DefaultRRFK {
		args = append(args, "rrf_k := "+strconv.FormatFloat(q.Fusion.RRFK, 'g', -1, 64))
	}
	return "SELECT * FROM hybrid_search(" + strings.Join(args, ", ") + ") ORDER BY rank"
}

func quote(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
